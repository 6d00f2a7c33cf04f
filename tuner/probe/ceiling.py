"""The ceiling: the most a stream can reach, and how much of the gap launch settings can close.

A decode step cannot be shorter than reading its weights once (the memory floor: weight
bytes per GPU over the GPU's memory bandwidth) plus its all-reduces at the fastest NCCL
setting the probe timed (the communication floor). So one stream runs at most
``1 / (memory floor + communication floor)`` tokens per second: the bound.

The measured step splits into the memory floor, the all-reduces at the configuration's
own NCCL setting (its probe), and the rest (compute, kernel launches, what overlaps
imperfectly: everything the floors leave out). What the study's launch settings can cut:

- NCCL settings act on all-reduce alone: at most the own setting's all-reduce time minus
  the fastest probed one.
- Any other setting (compilation, vLLM flags) may act on the rest, all of it at most; it
  cannot go below the floors, so the bound caps it.
- Speculative decoding makes more than one token per weight read: the bound does not hold
  for it, and the ceiling says so instead of a figure.

The largest gain the study could find is then ``step / (step - cuttable) - 1``: an upper
bound, never an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tuner.stats.wording import percent


@dataclass(frozen=True)
class CeilingInputs:
    """The figures the ceiling needs; a None says what is missing."""

    weight_bytes_per_gpu: float | None
    memory_bandwidth_gbps: float | None
    """GB/s (10^9 bytes per second), as spec sheets and `tuner probe membw` give it."""
    allreduces_per_token: int
    best_us: float
    """The fastest probed all-reduce, microseconds."""
    own_us: float
    """The measured configuration's own NCCL setting's probed all-reduce."""
    measured_tokens_per_s: float | None
    """Per stream, of the configuration the answer recommends."""
    other_settings: bool
    """The study searches settings beyond NCCL (they may act on the rest of the step)."""
    speculative: bool = False
    """The study searches speculative decoding: more than one token per weight read."""
    bandwidth_source: str = ""
    weights_source: str = ""


@dataclass(frozen=True)
class Ceiling:
    """The bound, the share of it reached, and the largest gain launch settings could give."""

    memory_s: float | None
    comm_s: float
    bound_tokens_per_s: float | None
    measured_tokens_per_s: float | None
    share: float | None
    nccl_cut_s: float | None
    rest_s: float | None
    max_gain: float | None
    """The most any launch setting of the study could add to the measured rate (a fraction)."""
    sentence: str
    missing: tuple[str, ...] = ()
    bandwidth_source: str = ""
    weights_source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "memory_floor_s": self.memory_s,
            "comm_floor_s": self.comm_s,
            "bound_tokens_per_s": self.bound_tokens_per_s,
            "measured_tokens_per_s": self.measured_tokens_per_s,
            "share_of_bound": self.share,
            "nccl_cut_s": self.nccl_cut_s,
            "rest_s": self.rest_s,
            "max_gain": self.max_gain,
            "sentence": self.sentence,
            "missing": list(self.missing),
            "bandwidth_source": self.bandwidth_source,
            "weights_source": self.weights_source,
        }


def ceiling(inputs: CeilingInputs) -> Ceiling:
    """The ceiling of one stream from the floors and the measured rate (see the module)."""
    i = inputs
    comm_s = i.allreduces_per_token * i.best_us * 1e-6
    missing = []
    if i.weight_bytes_per_gpu is None:
        missing.append("the model's weight bytes (its config.json, or probe.config_json)")
    if i.memory_bandwidth_gbps is None:
        missing.append(
            "the GPU's memory bandwidth (probe.memory_bandwidth_gbps: `tuner probe membw` "
            "measures it)"
        )
    if i.measured_tokens_per_s is None:
        missing.append("a measured decode rate of the recommended configuration")
    memory_s = None
    if i.weight_bytes_per_gpu is not None and i.memory_bandwidth_gbps:
        memory_s = i.weight_bytes_per_gpu / (i.memory_bandwidth_gbps * 1e9)
    bound = 1.0 / (memory_s + comm_s) if memory_s is not None else None
    base = Ceiling(
        memory_s=memory_s,
        comm_s=comm_s,
        bound_tokens_per_s=bound,
        measured_tokens_per_s=i.measured_tokens_per_s,
        share=None,
        nccl_cut_s=None,
        rest_s=None,
        max_gain=None,
        sentence="",
        missing=tuple(missing),
        bandwidth_source=i.bandwidth_source,
        weights_source=i.weights_source,
    )
    if memory_s is None or bound is None or not i.measured_tokens_per_s:
        return replace(base, sentence="not computed, missing: " + "; ".join(missing))
    step = 1.0 / i.measured_tokens_per_s
    own_comm = i.allreduces_per_token * i.own_us * 1e-6
    nccl_cut = max(0.0, own_comm - comm_s)
    rest = step - memory_s - own_comm
    share = i.measured_tokens_per_s / bound
    figures = (
        f"measured {i.measured_tokens_per_s:.4g} tok/s is {percent(share)} of the bound "
        f"{bound:.4g} tok/s (memory {memory_s * 1e3:.3g} ms + communication "
        f"{comm_s * 1e3:.3g} ms a token)"
    )
    if rest < 0:
        # Faster than the floors allow: a floor is overstated (the bandwidth figure too
        # low, the weights counted too high) or the probe's all-reduce is slower than the
        # server's; no gap can be read from it.
        return replace(
            base,
            share=share,
            nccl_cut_s=nccl_cut,
            rest_s=rest,
            sentence=figures + "; faster than the floors: a floor is overstated, no gap read",
        )
    if i.speculative:
        return replace(
            base,
            share=share,
            nccl_cut_s=nccl_cut,
            rest_s=rest,
            sentence=figures + "; the study searches speculative decoding, which makes more "
            "than one token per weight read: the bound does not hold for it",
        )
    cuttable = nccl_cut + (rest if i.other_settings else 0.0)
    max_gain = step / (step - cuttable) - 1.0
    parts = [f"NCCL settings {nccl_cut * 1e3:.3g} ms (the probe's best against this setting's)"]
    parts.append(
        f"the rest {rest * 1e3:.3g} ms (compute, launches, overlap: "
        + ("the other settings may act on it" if i.other_settings else "no setting here acts")
        + ")"
    )
    return replace(
        base,
        share=share,
        nccl_cut_s=nccl_cut,
        rest_s=rest,
        max_gain=max_gain,
        sentence=f"{figures}; the gap: {', '.join(parts)}; no launch setting of this study "
        f"can give more than {percent(max_gain)}",
    )
