"""NCCL variables are spelled as NCCL spells them and valued as NCCL accepts them.

NCCL ignores an unknown name silently, so a typo is a knob that does nothing: a name close
to a known one is an error, any other unknown ``NCCL_*`` name a warning. Values are checked
against NCCL's vocabulary (:mod:`tuner.nccl`): the ``NCCL_ALGO`` / ``NCCL_PROTO`` grammar,
integer ranges, booleans and enumerations. ``CUDA_DEVICE_MAX_CONNECTIONS`` rides along: it
is tuned with NCCL and CUDA clamps it silently.
"""

from __future__ import annotations

import difflib

from tuner.check.report import Findings, Level
from tuner.check.values import produced_env
from tuner.nccl import (
    ALGORITHMS,
    BOOLEAN_VARIABLES,
    BUFFER_SIZE_VARIABLES,
    BUFFSIZE_FLOOR,
    CHANNEL_VARIABLES,
    CHANNELS_RANGE,
    CUDA_DEVICE_MAX_CONNECTIONS_RANGE,
    DEFAULT_BUFFSIZE,
    ENUM_VALUES,
    KNOWN_VARIABLES,
    LEVEL_VARIABLES,
    NTHREADS_VALUES,
    PATH_TYPES,
    PROTOCOL_NAMES,
    PROTOCOLS,
    TOPOLOGY_LEVELS,
    NcclEnvError,
    parse_selection,
    read_level,
)
from tuner.space.spec import Space

NcclFinding = tuple[Level, str]


def check_nccl(space: Space, found: Findings) -> None:
    """Check every NCCL variable the space sets, fixed or swept; each finding said once
    (a misspelt name is the same error for every value of its param)."""
    seen: set[tuple[str, Level, str]] = set()
    for key, name, value in produced_env(space):
        for level, message in check_nccl_variable(name, value):
            if (key, level, message) not in seen:
                seen.add((key, level, message))
                found.add(level, key, message)
    if not seen and any(_is_nccl_name(n) for _, n, _ in produced_env(space)):
        found.add("ok", "params", "NCCL variables are spelled and valued as NCCL accepts them")


def _is_nccl_name(name: str) -> bool:
    return "NCCL" in name.upper() or name == "CUDA_DEVICE_MAX_CONNECTIONS"


def check_nccl_variable(name: str, value: str | None) -> list[NcclFinding]:
    """What NCCL would make of ``name=value``: errors for what it rejects or ignores."""
    if name == "CUDA_DEVICE_MAX_CONNECTIONS":
        low, high = CUDA_DEVICE_MAX_CONNECTIONS_RANGE
        return _int_range(
            name,
            value,
            low,
            high,
            level_out_of_range="warning",
            why=f"CUDA clamps it to {low}..{high}",
        )
    if not name.startswith("NCCL_"):
        near = difflib.get_close_matches(name, sorted(KNOWN_VARIABLES), n=1, cutoff=0.85)
        if near:
            return [
                (
                    "error",
                    f"{name} looks like a misspelling of {near[0]}: nothing reads "
                    f"{name}, so this knob would do nothing",
                )
            ]
        return []
    if name not in KNOWN_VARIABLES:
        near = difflib.get_close_matches(name, sorted(KNOWN_VARIABLES), n=1, cutoff=0.8)
        if near:
            return [
                (
                    "error",
                    f"{name} is not an NCCL variable (NCCL ignores unknown names "
                    f"silently); did you mean {near[0]}?",
                )
            ]
        return [
            (
                "warning",
                f"{name} is not an NCCL variable tuner knows; check its spelling "
                "against NCCL's documentation (NCCL ignores unknown names silently)",
            )
        ]
    if value is None:
        return []
    return _nccl_value(name, value.strip())


def _nccl_value(name: str, value: str) -> list[NcclFinding]:
    if name in ("NCCL_ALGO", "NCCL_PROTO"):
        return _selection_value(name, value)
    if name in CHANNEL_VARIABLES:
        return _int_range(name, value, *CHANNELS_RANGE)
    if name == "NCCL_NTHREADS":
        if value not in NTHREADS_VALUES:
            return [
                (
                    "error",
                    f"NCCL_NTHREADS={value!r}: NCCL accepts {', '.join(NTHREADS_VALUES[:-1])} "
                    f"or {NTHREADS_VALUES[-1]} and uses its default otherwise",
                )
            ]
        return []
    if name in BUFFER_SIZE_VARIABLES:
        return _buffer_size(name, value)
    if name in LEVEL_VARIABLES:
        return _level_value(name, value)
    if name in BOOLEAN_VARIABLES and value not in ("0", "1"):
        return [("error", f"{name}={value!r}: NCCL reads 0 or 1")]
    allowed = ENUM_VALUES.get(name)
    if allowed and value.upper() not in allowed:
        near = difflib.get_close_matches(value.upper(), list(allowed), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else ""
        return [("error", f"{name}={value!r}: NCCL accepts {', '.join(allowed)}{hint}")]
    return []


def _selection_value(name: str, value: str) -> list[NcclFinding]:
    """NCCL_ALGO / NCCL_PROTO: NCCL's list grammar, and the bare form NCCL 2.31 breaks on."""
    universe = ALGORITHMS if name == "NCCL_ALGO" else PROTOCOLS
    try:
        parsed = parse_selection(name, value, universe)
    except NcclEnvError as exc:
        return [
            (
                "error",
                f"{exc.warn}; NCCL accepts {', '.join(_written(v) for v in universe)} "
                f"(^ excludes, 'collective:list' per collective){_did_you_mean(exc)}",
            )
        ]
    if name == "NCCL_ALGO" and parsed.bare:
        return [
            (
                "warning",
                f"bare NCCL_ALGO={value!r} applies to every collective; since "
                "NCCL 2.31 it disables the collectives it does not name and vLLM fails at "
                f"warmup: use the per-collective form, e.g. 'allreduce:{value.lower()}'",
            )
        ]
    return []


def _written(value: str) -> str:
    """A protocol as space files and NCCL's documentation write it (LL, LL128, Simple); an
    algorithm as they write it too (allreduce:ring)."""
    return PROTOCOL_NAMES.get(value, value)


def _did_you_mean(exc: NcclEnvError) -> str:
    if exc.unknown is None:
        return ""
    near = difflib.get_close_matches(exc.unknown.lower(), exc.known, n=1, cutoff=0.6)
    return f"; did you mean {_written(near[0])}?" if near else ""


def _buffer_size(name: str, value: str) -> list[NcclFinding]:
    """Bytes, a positive integer. NCCL reads the leading digits only (``4M`` is 4 bytes)."""
    digits = value[: len(value) - len(value.lstrip("0123456789"))]
    if digits and digits != value and value[len(digits) :].strip().upper() in _SUFFIXES:
        return [
            (
                "error",
                f"{name}={value!r}: NCCL reads the leading digits only, so this is "
                f"{digits} bytes; write the bytes, e.g. {DEFAULT_BUFFSIZE} for 4 MiB",
            )
        ]
    try:
        size = int(value, 0)
    except ValueError:
        size = 0
    if size <= 0:
        return [
            (
                "error",
                f"{name}={value!r}: NCCL wants a positive number of bytes (default "
                f"{DEFAULT_BUFFSIZE}, 4 MiB)",
            )
        ]
    found = _int_range(name, value, 1, 2**40)
    if size & (size - 1):
        found.append(("warning", f"{name}={value} is not a power of two"))
    if name == "NCCL_BUFFSIZE" and size < BUFFSIZE_FLOOR:
        found.append(
            (
                "warning",
                f"NCCL_BUFFSIZE={value} is below 1 MiB ({BUFFSIZE_FLOOR}), the smallest "
                "value known to help (NVIDIA/nccl#1530); smaller buffers cut the ring's "
                "chunks and its bandwidth (NVIDIA/nccl#387)",
            )
        )
    return found


_SUFFIXES = ("K", "KB", "KIB", "M", "MB", "MIB", "G", "GB", "GIB")


def _level_value(name: str, value: str) -> list[NcclFinding]:
    """A path level as NCCL's ``ncclGetLevel`` reads it: an exact name or an old number."""
    if value in TOPOLOGY_LEVELS:
        return []
    level = read_level(value)
    if level is not None and not value[:1].isdigit():
        return [
            (
                "warning",
                f"{name}={value}: a path type NCCL matches but does not document; "
                f"the documented ones are {', '.join(TOPOLOGY_LEVELS)}",
            )
        ]
    if level is not None and value.isdigit():
        return [
            (
                "warning",
                f"{name}={value}: numeric levels are deprecated (NCCL reads {value} as "
                f"{level}: 0=LOC 1=PIX 2=PXB 3=PHB 4,5=SYS); write {level}",
            )
        ]
    if value.upper() in PATH_TYPES:
        return [
            (
                "error",
                f"{name}={value!r}: NCCL compares the level case-sensitively and ignores "
                f"{value!r}, so this knob would do nothing; write {value.upper()}",
            )
        ]
    near = difflib.get_close_matches(value.upper(), TOPOLOGY_LEVELS, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]}?" if near else ""
    return [
        (
            "error",
            f"{name}={value!r}: NCCL accepts {', '.join(TOPOLOGY_LEVELS)} (or the old "
            f"numbers 0-5) and ignores anything else{hint}",
        )
    ]


def _int_range(
    name: str,
    value: str | None,
    low: int,
    high: int,
    *,
    level_out_of_range: Level = "error",
    why: str = "",
) -> list[NcclFinding]:
    if value is None:
        return []
    try:
        number = int(value, 0)
    except ValueError:
        return [("error", f"{name}={value!r} is not an integer")]
    if not low <= number <= high:
        because = f" ({why})" if why else ""
        return [(level_out_of_range, f"{name}={number} is outside {low}..{high}{because}")]
    return []
