"""NCCL's vocabulary: the variable names NCCL reads and the values it accepts.

One place for what NCCL itself defines, shared by the pre-flight checks (``tuner.check``,
which refuse a misspelt name or a value NCCL would reject) and the simulated server
(``tuner.sim``, which parses the environment as NCCL does and models what the values do).
Nothing here decides anything about a launch: it is names, tables, the parser of
``NCCL_ALGO`` / ``NCCL_PROTO`` lists (``^`` exclusion and the per-collective form of
NCCL 2.24+), which raises :class:`NcclEnvError` with NCCL-like warning text, and how NCCL
reads a path level and the user's P2P cutoff (``read_level``, ``p2p_level_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ALGORITHMS = ("ring", "tree", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")
PROTOCOLS = ("ll", "ll128", "simple")
PROTOCOL_NAMES = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
# NCCL's spelling of collective names; the per-collective syntax matches them case-insensitively.
FUNCTIONS = ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")
FUNCTION_NAMES = {
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "allgather": "AllGather",
    "reducescatter": "ReduceScatter",
    "allreduce": "AllReduce",
}

NCCL_EXTRA_VARIABLES = ("CUDA_DEVICE_MAX_CONNECTIONS",)
"""Not NCCL's, but an NCCL setting in effect: how many queues carry its kernels."""


def is_nccl_variable(name: str) -> bool:
    """An NCCL setting: NCCL's own ``NCCL_*`` variables and NCCL_EXTRA_VARIABLES."""
    return name.startswith("NCCL_") or name in NCCL_EXTRA_VARIABLES


# Every NCCL variable of NCCL's documentation (2.2x-2.31): a name not here is most likely a
# typo, which NCCL ignores without a word.
_KNOWN_VARIABLES_TEXT = """
NCCL_ALGO NCCL_PROTO NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS NCCL_MIN_CTAS NCCL_MAX_CTAS
NCCL_BUFFSIZE NCCL_NTHREADS NCCL_LL128_BUFFSIZE NCCL_LL128_NTHREADS NCCL_LL_THRESHOLD
NCCL_TREE_THRESHOLD NCCL_SINGLE_RING_THRESHOLD NCCL_P2P_LEVEL NCCL_P2P_DISABLE
NCCL_P2P_DIRECT_DISABLE NCCL_P2P_READ_ENABLE NCCL_P2P_USE_CUDA_MEMCPY NCCL_P2P_NET_CHUNKSIZE
NCCL_P2P_PCI_CHUNKSIZE NCCL_P2P_NVL_CHUNKSIZE NCCL_P2P_LL_THRESHOLD NCCL_P2P_PXN_LEVEL
NCCL_PXN_DISABLE NCCL_PXN_C2C NCCL_SHM_DISABLE NCCL_SHM_USE_CUDA_MEMCPY NCCL_SHM_MEMCPY_MODE
NCCL_SHM_LOCALITY NCCL_SOCKET_IFNAME NCCL_SOCKET_FAMILY NCCL_SOCKET_NTHREADS
NCCL_NSOCKS_PERTHREAD NCCL_SOCKET_RETRY_CNT NCCL_SOCKET_RETRY_SLEEP_MSEC NCCL_IB_DISABLE
NCCL_IB_HCA NCCL_IB_TIMEOUT NCCL_IB_RETRY_CNT NCCL_IB_GID_INDEX NCCL_IB_ADDR_FAMILY
NCCL_IB_ADDR_RANGE NCCL_IB_ROCE_VERSION_NUM NCCL_IB_SL NCCL_IB_TC NCCL_IB_FIFO_TC
NCCL_IB_RETURN_ASYNC_EVENTS NCCL_IB_QPS_PER_CONNECTION NCCL_IB_SPLIT_DATA_ON_QPS
NCCL_IB_CUDA_SUPPORT NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_ADAPTIVE_ROUTING NCCL_IB_AR_THRESHOLD
NCCL_IB_ECE_ENABLE NCCL_IB_MERGE_NICS NCCL_IB_MERGE_VFS NCCL_IB_USE_INLINE NCCL_IB_DATA_DIRECT
NCCL_NET NCCL_NET_PLUGIN NCCL_NET_GDR_LEVEL NCCL_NET_GDR_READ NCCL_NET_GDR_C2C
NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS NCCL_NET_DISABLE_INTRA NCCL_NET_FORCE_FLUSH
NCCL_NET_MERGE_LEVEL NCCL_NET_OVERHEAD NCCL_NCHANNELS_PER_NET_PEER NCCL_GDRCOPY_ENABLE
NCCL_GDRCOPY_FLUSH_ENABLE NCCL_GDRCOPY_SYNC_ENABLE NCCL_CROSS_NIC NCCL_TOPO_FILE
NCCL_TOPO_DUMP_FILE NCCL_GRAPH_FILE NCCL_GRAPH_DUMP_FILE NCCL_GRAPH_MIXING_SUPPORT NCCL_DEBUG
NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_DEBUG_TIMESTAMP_FORMAT NCCL_DEBUG_TIMESTAMP_LEVELS
NCCL_COLLNET_ENABLE NCCL_COLLNET_NODE_THRESHOLD NCCL_NVLS_ENABLE NCCL_NVLS_CHUNKSIZE
NCCL_NVLS_NCHANNELS NCCL_MNNVL_ENABLE NCCL_MNNVL_UUID NCCL_MNNVL_CLIQUE_ID NCCL_CUMEM_ENABLE
NCCL_CUMEM_HOST_ENABLE NCCL_LAUNCH_MODE NCCL_LAUNCH_ORDER_IMPLICIT NCCL_CHECK_POINTERS
NCCL_COMM_BLOCKING NCCL_IGNORE_CPU_AFFINITY NCCL_IGNORE_DISABLED_P2P NCCL_CONF_FILE
NCCL_SET_STACK_SIZE NCCL_SET_THREAD_NAME NCCL_RUNTIME_CONNECT NCCL_WORK_FIFO_DEPTH
NCCL_WORK_FIFO_BYTES NCCL_WORK_ARGS_BYTES NCCL_NVB_DISABLE NCCL_NVB_PRECONNECT
NCCL_ALLOC_P2P_NET_LL_BUFFERS NCCL_CREATE_THREAD_CONTEXT NCCL_TUNER_PLUGIN NCCL_TUNER_CONFIG_FILE
NCCL_PROFILER_PLUGIN NCCL_ENV_PLUGIN NCCL_RAS_ENABLE NCCL_RAS_ADDR NCCL_RAS_TIMEOUT_FACTOR
NCCL_CTA_POLICY NCCL_WIN_ENABLE NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE NCCL_MAX_P2P_NCHANNELS
NCCL_MIN_P2P_NCHANNELS NCCL_HOSTID NCCL_COMM_ID NCCL_PROGRESS_APPENDOP_FREQ
NCCL_PROXY_APPEND_BATCH_SIZE
NCCL_GRAPH_REGISTER NCCL_LOCAL_REGISTER NCCL_LEGACY_CUDA_REGISTER NCCL_DMABUF_ENABLE
"""
KNOWN_VARIABLES = frozenset(_KNOWN_VARIABLES_TEXT.split())

_BOOLEAN_TEXT = """
NCCL_IB_DISABLE NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_CUMEM_ENABLE NCCL_CUMEM_HOST_ENABLE
NCCL_PXN_DISABLE NCCL_NVB_DISABLE NCCL_GDRCOPY_ENABLE NCCL_COLLNET_ENABLE NCCL_RUNTIME_CONNECT
NCCL_IGNORE_CPU_AFFINITY NCCL_CHECK_POINTERS NCCL_COMM_BLOCKING NCCL_P2P_DIRECT_DISABLE
NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_ADAPTIVE_ROUTING NCCL_NET_GDR_READ NCCL_DMABUF_ENABLE
NCCL_LOCAL_REGISTER NCCL_GRAPH_REGISTER NCCL_SET_THREAD_NAME NCCL_WIN_ENABLE
"""
BOOLEAN_VARIABLES = frozenset(_BOOLEAN_TEXT.split())
"""Variables NCCL reads as 0 or 1."""

CHANNEL_VARIABLES = (
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_CTAS",
    "NCCL_MAX_CTAS",
    "NCCL_MIN_P2P_NCHANNELS",
    "NCCL_MAX_P2P_NCHANNELS",
)
"""Channel and CTA counts: integers in ``CHANNELS_RANGE``."""
CHANNELS_RANGE = (1, 64)

NTHREADS_VALUES = ("64", "128", "256", "512")
"""What ``NCCL_NTHREADS`` may be; NCCL uses its default for anything else."""

BUFFER_SIZE_VARIABLES = ("NCCL_BUFFSIZE", "NCCL_LL128_BUFFSIZE")
"""Bytes; NCCL expects a power of two."""
DEFAULT_BUFFSIZE = 4 * 2**20
"""NCCL_BUFFSIZE's default, 4 MiB (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)."""
BUFFSIZE_FLOOR = 2**20
"""The smallest NCCL_BUFFSIZE known to help: 1 MiB fixed slow ring all-reduce on 8 PCIe
GeForce RTX 4090 (https://github.com/NVIDIA/nccl/issues/1530); below it NCCL's Simple
protocol cuts its chunks smaller still, and "the larger the buffer, the better the
performance", up to a point (https://github.com/NVIDIA/nccl/issues/387)."""

TOPOLOGY_LEVELS = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")
"""The path levels NCCL's documentation lists, nearest first."""
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS")
"""Every name NCCL's level parser matches (``topoPathTypeStr`` up to SYS, nearest first;
NCCL 2.2x src/graph/paths.cc ``ncclGetLevel``): the documented ones and NVB, C2C, P2C, PXN."""
LEGACY_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")
"""What NCCL makes of the old numeric levels 0..5 (``levelsOldToNew``; larger numbers
read as 5)."""
LEVEL_VARIABLES = ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL")
"""Variables valued by a path level, read by NCCL's ``ncclGetLevel``."""
DEFAULT_P2P_LEVEL = "PXB"
"""NCCL's own cutoff when NCCL_P2P_LEVEL is unset: "By default don't use P2P across CPU
Host Bridges and further apart" (src/graph/paths.cc ``ncclTopoCheckP2p``, NVIDIA/nccl at
04cdb808; the one exception, AMD CPUs with at most two GPUs, allows SYS)."""


def read_level(raw: str) -> str | None:
    """The path level NCCL reads from a level variable's text, or None where it ignores it.

    As ``ncclGetLevel``: the name compared case-sensitively (``pix`` is ignored), else a
    leading digit read as the old numbering (``LEGACY_LEVELS``), else nothing.
    """
    text = raw.strip()
    if text in PATH_TYPES:
        return text
    if text[:1].isdigit():
        old = int(_leading_digits(text))
        return LEGACY_LEVELS[min(old, len(LEGACY_LEVELS) - 1)]
    return None


def _leading_digits(text: str) -> str:
    """C's strtol on ``12abc``: ``12``."""
    out = ""
    for ch in text:
        if not ch.isdigit():
            break
        out += ch
    return out


def p2p_level_of(env: Mapping[str, str]) -> str | None:
    """The P2P cutoff the user set (None: NCCL's own), as ``ncclGetUserP2pLevel`` reads it:
    NCCL_P2P_DISABLE=1 means LOC and wins; otherwise NCCL_P2P_LEVEL when NCCL reads it."""
    disable = env.get("NCCL_P2P_DISABLE")
    if disable is not None and _leading_digits(disable.strip()) == "1":
        return "LOC"
    level = env.get("NCCL_P2P_LEVEL")
    return None if level is None or not level.strip() else read_level(level)


def path_at_most(path: str, level: str) -> bool:
    """Whether a GPU-to-GPU ``path`` is within ``level`` (NCCL: ``path->type <= p2pLevel``)."""
    return PATH_TYPES.index(path) <= PATH_TYPES.index(level)


ENUM_VALUES: dict[str, tuple[str, ...]] = {
    "NCCL_DEBUG": ("VERSION", "WARN", "INFO", "TRACE", "ABORT"),
    # Not a path level: 0 never uses PXN, 1 when the NIC is preferred, 2 (default) always.
    "NCCL_P2P_PXN_LEVEL": ("0", "1", "2"),
    "NCCL_LAUNCH_MODE": ("PARALLEL", "GROUP"),
    "NCCL_NVLS_ENABLE": ("0", "1", "2"),
    "NCCL_CROSS_NIC": ("0", "1", "2"),
    "NCCL_SOCKET_FAMILY": ("AF_INET", "AF_INET6"),
}
"""Variables with a closed set of values (compared upper-case)."""

CUDA_DEVICE_MAX_CONNECTIONS_RANGE = (1, 32)
"""CUDA clamps ``CUDA_DEVICE_MAX_CONNECTIONS`` into this range rather than failing."""


class NcclEnvError(ValueError):
    """An NCCL variable NCCL itself would reject; ``warn`` is the text after ``NCCL WARN``.

    ``unknown`` is the word NCCL did not know, if that was the trouble, and ``known`` the
    words it knows in that place (for a "did you mean").
    """

    def __init__(self, warn: str, unknown: str | None = None, known: tuple[str, ...] = ()) -> None:
        super().__init__(warn)
        self.warn = warn
        self.unknown = unknown
        self.known = known


@dataclass(frozen=True)
class SelectionList:
    """A parsed NCCL_ALGO or NCCL_PROTO value.

    ``default`` is the set applying to collectives not named (None: NCCL's own choice);
    ``per_function`` holds the sets of named collectives; ``bare`` is True when the value had
    an unprefixed segment (``Ring`` rather than ``allreduce:ring``).
    """

    raw: str
    default: frozenset[str] | None
    per_function: tuple[tuple[str, frozenset[str]], ...]
    bare: bool

    def for_function(self, function: str) -> frozenset[str] | None:
        for name, values in self.per_function:
            if name == function:
                return values
        return self.default

    def as_json(self) -> dict[str, object]:
        return {
            "raw": self.raw,
            "default": sorted(self.default) if self.default is not None else None,
            "per_function": {name: sorted(values) for name, values in self.per_function},
            "bare": self.bare,
        }


def parse_selection(var: str, raw: str, universe: tuple[str, ...]) -> SelectionList:
    """Parse ``NCCL_ALGO`` / ``NCCL_PROTO`` text.

    Real NCCL separates collectives with ``;`` (``ring;allreduce:tree``); a comma-separated
    ``allreduce:ring,allgather:ring`` is accepted too (a token with ``:`` opens a new group),
    because hand-written space files use it.
    """
    text = raw.strip()
    if not text:
        raise NcclEnvError(f'Invalid {var} "{raw}": empty value')
    groups: list[tuple[str | None, list[str]]] = []
    for segment in text.split(";"):
        current: tuple[str | None, list[str]] | None = None
        for token in (t.strip() for t in segment.split(",")):
            if not token:
                continue
            if ":" in token:
                func, _, first = token.partition(":")
                func = func.strip().lower()
                if func not in FUNCTIONS:
                    raise NcclEnvError(
                        f'Invalid {var} "{raw}": unknown collective "{func}"', func, FUNCTIONS
                    )
                current = (func, [first.strip()] if first.strip() else [])
                groups.append(current)
            else:
                if current is None:
                    current = (None, [])
                    groups.append(current)
                current[1].append(token)
    default: frozenset[str] | None = None
    per_function: dict[str, frozenset[str]] = {}
    bare = False
    for group, tokens in groups:
        values = _resolve_tokens(var, raw, tokens, universe)
        if group is None:
            bare = True
            default = values
        else:
            per_function[group] = values
    return SelectionList(raw, default, tuple(sorted(per_function.items())), bare)


def _resolve_tokens(
    var: str, raw: str, tokens: list[str], universe: tuple[str, ...]
) -> frozenset[str]:
    """Turn ``["^tree"]`` or ``["Ring", "LL"]`` into a set, rejecting unknown names."""
    if not tokens:
        raise NcclEnvError(f'Invalid {var} "{raw}": empty list')
    exclude = tokens[0].startswith("^")
    names = [tokens[0][1:] if exclude else tokens[0], *tokens[1:]]
    chosen: set[str] = set()
    for name in names:
        key = name.strip().lower()
        if key not in universe:
            raise NcclEnvError(
                f'Invalid {var} "{raw}": unknown value "{name.strip()}"', name.strip(), universe
            )
        chosen.add(key)
    return frozenset(universe) - chosen if exclude else frozenset(chosen)
