"""What the simulated stack makes of NCCL's environment: parse it, then fail where NCCL would.

Only the variables the tuner sweeps are modelled: ``NCCL_ALGO`` / ``NCCL_PROTO``, the channel
counts, ``NCCL_BUFFSIZE``, ``NCCL_NTHREADS``, ``CUDA_DEVICE_MAX_CONNECTIONS`` and the transport
knobs ``NCCL_P2P_LEVEL`` / ``NCCL_P2P_DISABLE`` / ``NCCL_SHM_DISABLE``. The names and
the grammar of the values are NCCL's vocabulary (:mod:`tuner.nccl`); this module holds the
simulator's own model: :func:`parse_nccl_env` (pure: values, or :class:`~tuner.nccl.NcclEnvError`
with the NCCL-like warning; the caller decides in which startup phase it surfaces) and
:func:`warmup_failure` (which algorithm sets leave vLLM's collectives nothing on this PCIe box).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tuner.nccl import (
    ALGORITHMS,
    CHANNELS_RANGE,
    CUDA_DEVICE_MAX_CONNECTIONS_RANGE,
    FUNCTION_NAMES,
    PROTOCOLS,
    NcclEnvError,
    SelectionList,
    p2p_level_of,
    parse_selection,
)

# Which algorithms each collective implements at all (NCCL 2.2x); PAT and the CollNet/NVLS
# families also need hardware this PCIe box lacks, see AVAILABLE_ON_PCIE.
SUPPORTED = {
    "broadcast": frozenset({"ring"}),
    "reduce": frozenset({"ring"}),
    "allgather": frozenset({"ring", "collnetdirect", "nvls", "pat"}),
    "reducescatter": frozenset({"ring", "collnetdirect", "nvls", "pat"}),
    "allreduce": frozenset({"ring", "tree", "collnetdirect", "collnetchain", "nvls", "nvlstree"}),
}
AVAILABLE_ON_PCIE = frozenset({"ring", "tree"})
# The collectives vLLM issues while serving a tensor-parallel model.
USED_BY_VLLM = ("allreduce", "allgather")

# The variables this model reads; any other NCCL variable leaves the simulation unchanged.
ENV_VARS = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_BUFFSIZE",
    "NCCL_NTHREADS",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "NCCL_P2P_LEVEL",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
)


@dataclass(frozen=True)
class NcclEnv:
    """The NCCL and CUDA variables after parsing; None means unset (NCCL's default)."""

    algo: SelectionList | None = None
    proto: SelectionList | None = None
    min_nchannels: int | None = None
    max_nchannels: int | None = None
    buffsize: int | None = None
    nthreads: int | None = None
    cuda_device_max_connections: int | None = None
    # The P2P cutoff the user set (a path type; LOC: never), NCCL_P2P_DISABLE=1 included.
    p2p_level: str | None = None
    shm_disable: bool = False

    def allreduce_algos(self) -> frozenset[str] | None:
        return self.algo.for_function("allreduce") if self.algo else None

    def allreduce_protos(self) -> frozenset[str] | None:
        return self.proto.for_function("allreduce") if self.proto else None

    def as_json(self) -> dict[str, object]:
        return {
            "algo": self.algo.as_json() if self.algo else None,
            "proto": self.proto.as_json() if self.proto else None,
            "min_nchannels": self.min_nchannels,
            "max_nchannels": self.max_nchannels,
            "buffsize": self.buffsize,
            "nthreads": self.nthreads,
            "cuda_device_max_connections": self.cuda_device_max_connections,
            "p2p_level": self.p2p_level,
            "shm_disable": self.shm_disable,
        }


def _int_var(env: Mapping[str, str], var: str) -> int | None:
    raw = env.get(var)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw.strip(), 0)
    except ValueError:
        raise NcclEnvError(f'Invalid {var} "{raw}": not an integer') from None


def parse_nccl_env(env: Mapping[str, str]) -> tuple[NcclEnv, list[str]]:
    """Parse and validate; returns the values and warnings, or raises :class:`NcclEnvError`.

    Stricter than real NCCL on purpose where the design asks for it: non-numeric channel counts,
    MIN > MAX and NTHREADS outside 64..512 (multiples of 64) are fatal here rather than
    "using default", so a sweep sees a failed launch it must record.
    """
    warnings: list[str] = []
    algo = proto = None
    if env.get("NCCL_ALGO") is not None:
        algo = parse_selection("NCCL_ALGO", env["NCCL_ALGO"], ALGORITHMS)
    if env.get("NCCL_PROTO") is not None:
        proto = parse_selection("NCCL_PROTO", env["NCCL_PROTO"], PROTOCOLS)
    min_ch = _int_var(env, "NCCL_MIN_NCHANNELS")
    max_ch = _int_var(env, "NCCL_MAX_NCHANNELS")
    for var, value in (("NCCL_MIN_NCHANNELS", min_ch), ("NCCL_MAX_NCHANNELS", max_ch)):
        low, high = CHANNELS_RANGE
        if value is not None and not low <= value <= high:
            raise NcclEnvError(f'Invalid {var} "{value}": must be between {low} and {high}')
    if min_ch is not None and max_ch is not None and min_ch > max_ch:
        raise NcclEnvError(
            f"NCCL_MIN_NCHANNELS ({min_ch}) is larger than NCCL_MAX_NCHANNELS ({max_ch})"
        )
    buffsize = _int_var(env, "NCCL_BUFFSIZE")
    if buffsize is not None and buffsize <= 0:
        raise NcclEnvError(f'Invalid NCCL_BUFFSIZE "{buffsize}": must be positive')
    nthreads = _int_var(env, "NCCL_NTHREADS")
    if nthreads is not None and (nthreads % 64 or not 64 <= nthreads <= 512):
        raise NcclEnvError(
            f'Invalid NCCL_NTHREADS "{nthreads}": must be a multiple of 64 between 64 and 512'
        )
    cdmc: int | None = None
    raw_cdmc = env.get("CUDA_DEVICE_MAX_CONNECTIONS")
    if raw_cdmc is not None and raw_cdmc.strip():
        # CUDA itself never fails on this variable: it ignores garbage and clamps the range.
        try:
            cdmc = int(raw_cdmc.strip())
        except ValueError:
            warnings.append(f'CUDA_DEVICE_MAX_CONNECTIONS="{raw_cdmc}" is not a number; ignored')
        else:
            low, high = CUDA_DEVICE_MAX_CONNECTIONS_RANGE
            if not low <= cdmc <= high:
                clamped = min(high, max(low, cdmc))
                warnings.append(f"CUDA_DEVICE_MAX_CONNECTIONS={cdmc} clamped to {clamped}")
                cdmc = clamped
    p2p_level, shm_disable = _transport_vars(env, warnings)
    nccl = NcclEnv(algo, proto, min_ch, max_ch, buffsize, nthreads, cdmc, p2p_level, shm_disable)
    return nccl, warnings


def _transport_vars(env: Mapping[str, str], warnings: list[str]) -> tuple[str | None, bool]:
    """NCCL_P2P_LEVEL / NCCL_P2P_DISABLE / NCCL_SHM_DISABLE as NCCL reads them.

    NCCL never fails on these: a level it cannot read is ignored (its default applies), so
    the sim warns and goes on, as it does for CUDA_DEVICE_MAX_CONNECTIONS.
    """
    level = p2p_level_of(env)
    raw = env.get("NCCL_P2P_LEVEL")
    if level is None and raw is not None and raw.strip():
        warnings.append(f'NCCL_P2P_LEVEL="{raw}" is not a level NCCL reads; ignored')
    return level, (env.get("NCCL_SHM_DISABLE") or "").strip() == "1"


def version_tuple(version: str) -> tuple[int, ...]:
    """``"2.27.3+cuda12.9"`` -> ``(2, 27, 3)``."""
    core = version.split("+", 1)[0]
    parts: list[int] = []
    for piece in core.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def warmup_failure(nccl: NcclEnv, nccl_version: str) -> str | None:
    """The NCCL warning that would abort vLLM's first collectives, or None if they run.

    Since 2.24 a set that leaves a collective no usable algorithm is an error, not a silent
    fallback to Ring (bare ``Tree`` leaves AllGather nothing). Since 2.31 a bare, unprefixed
    NCCL_ALGO disables the collectives it does not name, so even bare ``Ring`` fails.
    """
    if nccl.algo is None:
        return None
    version = version_tuple(nccl_version)
    if version >= (2, 31) and nccl.algo.bare:
        return (
            f"Error : no algorithm/protocol available for function AllGather: "
            f'NCCL_ALGO="{nccl.algo.raw}" names no collective (NCCL >= 2.31 expects '
            f'"<collective>:<algorithms>", e.g. "allreduce:ring")'
        )
    for func in USED_BY_VLLM:
        allowed = nccl.algo.for_function(func)
        if allowed is None:
            continue
        usable = allowed & SUPPORTED[func] & AVAILABLE_ON_PCIE
        if not usable:
            return (
                f"Error : no algorithm/protocol available for function {FUNCTION_NAMES[func]} "
                f'with NCCL_ALGO="{nccl.algo.raw}"'
            )
    return None
