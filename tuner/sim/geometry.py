"""The simulated models' shape: hidden size and layer count, which set the all-reduce size.

A decode step of ``batch`` streams all-reduces ``batch x hidden_size x 2`` bytes (bf16),
twice per layer. The sim's probe (tuner/sim/probe.py) and its NCCL tuner plugin model
(tuner/sim/nccl_tuner_plugin.py) both turn a batch into that message size.
"""

from __future__ import annotations

from tuner.sim.profiles import Profile

GEOMETRY: dict[str, tuple[int, int]] = {
    "reasoning": (4096, 36),
    "minimax-m2.5-fp8-tp4": (3072, 62),
}
"""(hidden_size, num_hidden_layers) of the profiles not shaped like Kimi K2.5."""
KIMI_GEOMETRY = (7168, 61)
"""Kimi K2.5 (the DeepSeek-V3 shape), and every profile derived from it."""
BYTES_PER_ELEMENT = 2
"""bf16 activations."""


def geometry(profile: Profile) -> tuple[int, int]:
    """(hidden_size, layers) of a profile's model."""
    return GEOMETRY.get(profile.name, KIMI_GEOMETRY)


def message_bytes(profile: Profile, batch: int) -> int:
    """Bytes of one decode all-reduce at ``batch`` streams."""
    return max(1, batch) * geometry(profile)[0] * BYTES_PER_ELEMENT
