"""The simulator's flag values read and checked: what argparse alone cannot say.

The compilation level and the speculative config as vLLM spells them, a positional model
among the unknown flags, noise levels and faults in range. Each error is an
:class:`~tuner.sim.flags.ArgError` naming the flag and what to write.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence

from tuner.sim.faults import MAX_FAULT
from tuner.sim.flags import ArgError

MAX_NOISE = 0.5  # a relative sd above 50% is a percentage typed as a fraction
DEFAULT_SPECULATIVE_METHOD = "ngram"


def parse_compilation(raw: str | None) -> int | None:
    """``"3"`` / ``'{"level": 3}'`` / ``'{"mode": 3}'`` -> 3; None stays None."""
    if raw is None:
        return None
    text = raw.strip()
    if text.lstrip("-").isdigit():
        level = int(text)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ArgError(f"-O/--compilation-config: invalid value {raw!r}") from None
        value = data.get("level", data.get("mode")) if isinstance(data, dict) else data
        if isinstance(data, dict) and value is None:
            return None  # a config without a level keeps the default level
        if not isinstance(value, int) or isinstance(value, bool):
            raise ArgError(f"-O/--compilation-config: invalid value {raw!r}")
        level = value
    if not 0 <= level <= 3:
        raise ArgError(f"-O/--compilation-config: level must be 0..3, got {level}")
    return level


def parse_speculative(raw: str | None, num_tokens: int | None) -> tuple[str | None, int]:
    """(method, drafts per step) from ``--speculative-config`` and ``--num-speculative-tokens``;
    (None, 0) when neither is given."""
    method: str | None = None
    tokens = num_tokens
    if raw is not None:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            raise ArgError(f"--speculative-config: invalid JSON {raw!r}") from None
        if not isinstance(data, dict):
            raise ArgError(f"--speculative-config: expected a JSON object, got {raw!r}")
        value = data.get("method", DEFAULT_SPECULATIVE_METHOD)
        if not isinstance(value, str) or not value:
            raise ArgError(f"--speculative-config: method must be a name, got {value!r}")
        method = value
        given = data.get("num_speculative_tokens")
        if given is None:
            raise ArgError("--speculative-config: num_speculative_tokens is required")
        if not isinstance(given, int) or isinstance(given, bool):
            raise ArgError(
                f"--speculative-config: num_speculative_tokens must be an integer, got {given!r}"
            )
        if tokens is not None and tokens != given:
            raise ArgError(
                f"--num-speculative-tokens {tokens} disagrees with --speculative-config's "
                f"num_speculative_tokens {given}"
            )
        tokens = given
    if tokens is None:
        return None, 0
    if tokens < 1:
        raise ArgError(f"num_speculative_tokens must be positive, got {tokens}")
    return method or DEFAULT_SPECULATIVE_METHOD, tokens


def split_unknown(extras: Sequence[str]) -> tuple[str | None, tuple[str, ...]]:
    """Pick a positional model out of argparse's leftovers; the rest are unknown flags.

    An unknown ``--flag`` followed by a token that is not a flag takes it as its value (the
    common ``--gpu-memory-utilization 0.9`` shape); a bare token with no flag before it is the
    model.
    """
    model: str | None = None
    unknown: list[str] = []
    i = 0
    while i < len(extras):
        tok = extras[i]
        if tok.startswith("-") and len(tok) > 1:
            unknown.append(tok)
            nxt = extras[i + 1] if i + 1 < len(extras) else None
            if "=" not in tok and nxt is not None and not _looks_like_flag(nxt):
                unknown.append(nxt)
                i += 1
        elif model is None:
            model = tok
        else:
            unknown.append(tok)
        i += 1
    return model, tuple(unknown)


def _looks_like_flag(tok: str) -> bool:
    if not tok.startswith("-") or tok == "-":
        return False
    try:
        float(tok)  # "-1" is a value, not a flag
    except ValueError:
        return True
    return False


def check_noise(flag: str, value: float | None) -> None:
    """A noise level is a relative sd: a fraction from 0 up to MAX_NOISE."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0:
        raise ArgError(f"{flag} is a relative sd and must be >= 0 (0.01 is 1%), got {value:g}")
    if value > MAX_NOISE:
        raise ArgError(
            f"{flag} is a fraction, not a percentage: 0.02 is 2%; got {value:g} "
            f"(at most {MAX_NOISE:g})"
        )


def check_faults(ns: argparse.Namespace) -> None:
    """--cold-first-launch in [0, MAX_FAULT], --drift in [-MAX_FAULT, MAX_FAULT], and a
    counter file whenever either is on (a fault by launch index needs the index)."""
    lowest = {"--cold-first-launch": 0.0, "--drift": -MAX_FAULT}
    for flag, value in (("--cold-first-launch", ns.cold_first_launch), ("--drift", ns.drift)):
        if not math.isfinite(value) or not lowest[flag] <= value <= MAX_FAULT:
            raise ArgError(
                f"{flag} is a fraction in {lowest[flag]:g}..{MAX_FAULT:g} (0.05 is 5%), "
                f"got {value:g}"
            )
    if ns.drift_launches < 1:
        raise ArgError(f"--drift-launches must be positive, got {ns.drift_launches}")
    if (ns.cold_first_launch or ns.drift) and not ns.launch_index_file:
        raise ArgError(
            "--cold-first-launch and --drift need --launch-index-file PATH, which counts "
            "the launches"
        )
