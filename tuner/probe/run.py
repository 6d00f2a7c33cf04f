"""Run a probe's argv with a trial's environment, and read the JSON object it prints.

The contract (docs/probe.md): the command prints one JSON object on stdout, with
``"sizes": {"<bytes>": <microseconds per all-reduce>}`` and any other keys. The object
may be the whole of stdout or its last line that is one (NCCL_DEBUG=INFO writes its own
lines to stdout). A ``"samples": {"<bytes>": [us, ...]}`` key carries one time per
repeat; without it the command is run ``repeats`` times and each run gives one sample.
The command runs in its own session and is killed, with whatever it started, at its
timeout or when tuner is interrupted.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuner.errors import TunerError
from tuner.space.probe_spec import ProbeSpec

STDERR_TAIL = 600
"""Characters of a failed probe's stderr kept in its error."""


class ProbeError(TunerError):
    """The probe could not run, failed, or printed no usable JSON."""


@dataclass(frozen=True)
class ProbeResult:
    """What one probe measured: microseconds per all-reduce, one value per repeat."""

    samples: Mapping[int, tuple[float, ...]]
    extra: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def mean_us(self, size: int) -> float:
        values = self.samples[size]
        return math.fsum(values) / len(values)

    def to_json(self) -> dict[str, Any]:
        return {
            "samples": {str(k): list(v) for k, v in sorted(self.samples.items())},
            "extra": dict(self.extra),
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProbeResult:
        samples = {int(k): tuple(float(x) for x in v) for k, v in data["samples"].items()}
        return cls(samples=samples, extra=dict(data.get("extra", {})), seconds=data["seconds"])


def probe_argv(probe: ProbeSpec, sizes: Sequence[int], names: Mapping[str, str]) -> list[str]:
    """The probe's command with its placeholders filled (``{sizes}`` comma-separated)."""
    values = {
        "python": sys.executable,
        "sizes": ",".join(str(s) for s in sizes),
        "repeats": str(probe.repeats),
        **names,
    }
    out = []
    for arg in probe.command:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def child_env(env: Mapping[str, str], unset: Iterable[str]) -> dict[str, str]:
    """tuner's environment less ``unset``, plus ``env``: what the trial's server would get."""
    removed = set(unset)
    return {**{k: v for k, v in os.environ.items() if k not in removed}, **env}


def parse_probe_output(
    text: str,
) -> tuple[dict[int, float], dict[int, list[float]], dict[str, Any]]:
    """``sizes``, ``samples`` (empty when absent) and the other keys of a probe's stdout."""
    data = _json_object(text)
    if data is None:
        raise ProbeError(
            'the probe printed no JSON object with a "sizes" key on stdout; it must print '
            'e.g. {"sizes": {"14336": 41.2}} (microseconds per all-reduce)'
        )
    sizes = {_size_key(k): _microseconds(v, k) for k, v in _mapping(data["sizes"], "sizes")}
    samples: dict[int, list[float]] = {}
    if "samples" in data:
        for key, values in _mapping(data["samples"], "samples"):
            if not isinstance(values, list) or not values:
                raise ProbeError(f'"samples" of {key!r}: a non-empty list of microseconds')
            samples[_size_key(key)] = [_microseconds(v, key) for v in values]
    extra = {k: v for k, v in data.items() if k not in ("sizes", "samples")}
    return sizes, samples, extra


def run_once(argv: Sequence[str], *, env: Mapping[str, str], timeout_s: float) -> str:
    """Run the command to its end and return its stdout; ProbeError on failure or timeout."""
    try:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group: a timeout kills its children too
        )
    except OSError as exc:
        raise ProbeError(f"probe.command: cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        raise ProbeError(
            f"the probe did not finish within probe.timeout_s ({timeout_s:g} s): raise it, "
            "or probe fewer sizes"
        ) from None
    except BaseException:  # Ctrl-C: leave no probe running
        _kill_group(proc.pid)
        proc.communicate()
        raise
    _kill_group(proc.pid)  # whatever it left behind in its session
    if proc.returncode != 0:
        tail = (stderr or stdout).strip()[-STDERR_TAIL:]
        raise ProbeError(f"the probe exited with code {proc.returncode}: {tail or '(no output)'}")
    return stdout


def measure(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    sizes: Sequence[int],
    repeats: int,
    timeout_s: float,
) -> ProbeResult:
    """``repeats`` samples of every size: from one run that prints ``samples``, else one
    run per repeat."""
    start = time.monotonic()
    times, samples, extra = parse_probe_output(run_once(argv, env=env, timeout_s=timeout_s))
    _require(sizes, times)
    if all(len(samples.get(s, [])) >= 2 for s in sizes):
        collected = {s: samples[s] for s in sizes}
    else:
        collected = {s: [times[s]] for s in sizes}
        for _ in range(repeats - 1):
            more, _, _ = parse_probe_output(run_once(argv, env=env, timeout_s=timeout_s))
            _require(sizes, more)
            for s in sizes:
                collected[s].append(more[s])
    return ProbeResult(
        samples={s: tuple(v) for s, v in collected.items()},
        extra=extra,
        seconds=time.monotonic() - start,
    )


def _json_object(text: str) -> dict[str, Any] | None:
    candidates = [text.strip(), *reversed([line.strip() for line in text.splitlines()])]
    for candidate in candidates:
        if not candidate.startswith("{"):
            continue
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and "sizes" in data:
            return data
    return None


def _mapping(value: Any, key: str) -> list[tuple[str, Any]]:
    if not isinstance(value, dict) or not value:
        raise ProbeError(f'"{key}" must be an object of byte sizes, e.g. {{"14336": 41.2}}')
    return list(value.items())


def _size_key(key: str) -> int:
    try:
        size = int(key)
    except ValueError:
        raise ProbeError(f"size {key!r} is not a whole number of bytes") from None
    if size < 1:
        raise ProbeError(f"size {key!r} is not a positive number of bytes")
    return size


def _microseconds(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProbeError(f"the time of size {key} is {value!r}, not a number of microseconds")
    if not (math.isfinite(value) and value > 0):
        raise ProbeError(f"the time of size {key} is {value!r}: microseconds above zero")
    return float(value)


def _require(wanted: Sequence[int], got: Mapping[int, float]) -> None:
    missing = [s for s in wanted if s not in got]
    if missing:
        raise ProbeError(
            f"the probe printed no time for {', '.join(map(str, missing))} bytes (it printed "
            f"{', '.join(map(str, sorted(got))) or 'none'}): pass it the sizes with '{{sizes}}'"
        )


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
