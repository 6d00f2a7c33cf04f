"""Why a launch failed, as a cause the search can learn from, read from its error and log.

A failed launch's reason (``exit_reason.early_exit_reason``: how it ended and the log's most
telling line) says what broke; the log tail says when. Together they name one cause:

==================  ========================================================  ============
cause               what the log says                                         blame
==================  ========================================================  ============
oom_load            out of memory before the weights were in (or no moment    settings
                    in the log says later)
oom_kv_cache        no memory left for the KV cache: vLLM's ValueErrors when  settings
                    it sizes it, or out of memory in the profile run
oom_graph_capture   out of memory while CUDA graphs were captured             settings
nccl_error          NCCL's own error or warning                               settings
flag_refused        the command line or config refused (argparse, pydantic,   settings
                    vLLM's ValueErrors)
timeout             not healthy within ``startup_timeout_s``                  retry
crash               anything else: a segfault, a CUDA error, SIGKILL          retry
port_taken          the port was taken before the server bound it             outside
interrupted         stopped from outside (Ctrl-C, SIGTERM, a dead worker)     outside
==================  ========================================================  ============

The blame is the rule's (docs/search.md, "Failed launches"): a ``settings`` cause is
deterministic, so one failure counts against the settings; ``retry`` may be bad luck (a
slow disk, a flaky driver), so it counts only when the configuration fails again;
``outside`` never counts. Memory failures are the same on a screening launch: random
weights take the memory real ones do.
"""

from __future__ import annotations

import re
from typing import Final, Literal, cast

from tuner.errors import BenchmarkError, LaunchError, PortTakenError
from tuner.launcher.progress import clean_line, split_lines

Cause = Literal[
    "oom_load",
    "oom_kv_cache",
    "oom_graph_capture",
    "nccl_error",
    "flag_refused",
    "timeout",
    "crash",
    "port_taken",
    "interrupted",
]
Blame = Literal["settings", "retry", "outside"]

WORDS: Final[dict[str, str]] = {
    "oom_load": "CUDA out of memory while loading",
    "oom_kv_cache": "not enough GPU memory for the KV cache",
    "oom_graph_capture": "CUDA out of memory during graph capture",
    "nccl_error": "NCCL error",
    "flag_refused": "the server refused the settings",
    "timeout": "not healthy within startup_timeout_s",
    "crash": "the server crashed",
    "port_taken": "its port was taken",
    "interrupted": "interrupted",
}
"""Each cause in the words a user reads after "failed N of M launches: "."""

BLAME: Final[dict[str, Blame]] = {
    "oom_load": "settings",
    "oom_kv_cache": "settings",
    "oom_graph_capture": "settings",
    "nccl_error": "settings",
    "flag_refused": "settings",
    "timeout": "retry",
    "crash": "retry",
    "port_taken": "outside",
    "interrupted": "outside",
}
MEMORY: Final = frozenset({"oom_load", "oom_kv_cache", "oom_graph_capture"})
"""The causes a screening launch shares with a full one (random weights, same memory)."""

PORT_TAKEN = re.compile(r"address already in use|\bEADDRINUSE\b|\[Errno 98\]", re.IGNORECASE)
_INTERRUPTED = re.compile(
    r"startup cancelled|terminated by signal|^interrupted\b|\binterrupted \(", re.IGNORECASE
)
_TIMEOUT = re.compile(r"not healthy after .*startup_timeout_s", re.IGNORECASE)
# vLLM's refusals when it sizes the KV cache (v1/core/kv_cache_utils.py; V0's worker), its
# sampler warm-up (the profile run), and its check of the free memory at startup.
_KV_CACHE = re.compile(
    r"No available memory for the cache blocks|To serve at least one request with the "
    r"models?'?s'? max seq len|KV cache is needed, which is larger than the available KV "
    r"cache memory|larger than the maximum number of tokens that can be stored in KV cache|"
    r"out of memory occurred when warming up sampler",
    re.IGNORECASE,
)
_STARTUP_MEMORY = re.compile(
    r"Free memory on device .* is less than desired GPU memory utilization", re.IGNORECASE
)
# Not "If you are running out of memory, consider ...": V0's advice before every capture.
_OOM = re.compile(
    r"(?:CUDA|HIP) out of memory|OutOfMemoryError|CUDA error: out of memory|"
    r"Cuda failure 'out of memory'",
    re.IGNORECASE,
)
_NCCL = re.compile(
    r"\bNCCL (?:error|WARN)\b|\bnccl(?:InvalidArgument|InvalidUsage|SystemError|"
    r"UnhandledCudaError|InternalError|RemoteError)\b",
    re.IGNORECASE,
)
# A line that refuses the command or the config: argparse's, pydantic's, vLLM's ValueErrors.
_REFUSED = re.compile(
    r"\berror: (?:unrecognized arguments|argument |invalid choice|the following arguments)|"
    r"^(?:\w+\.)*(?:ValueError|NotImplementedError|TypeError|ValidationError)\b",
)
# The moments of a startup, in vLLM's order: the weights, then the profile run that sizes the
# KV cache, then the CUDA graphs. Each is told by a phase line or a traceback's frame.
_MOMENTS: tuple[tuple[int, re.Pattern[str]], ...] = (
    (
        3,
        re.compile(
            r"Capturing CUDA graph|Capturing the model for CUDA graphs|\bcapture_model\b|"
            r"_capture_cudagraphs|torch\.cuda\.graph\(|\bcapture_(?:begin|end)\b|"
            r"Graph capturing finished",
            re.IGNORECASE,
        ),
    ),
    (
        2,
        re.compile(
            r"Loading weights took|Model loading took|Loading model weights took|"
            r"\bprofile_run\b|determine_available_memory|determine_num_available_blocks|"
            r"_dummy_sampler_run|Memory profiling takes|Available KV cache memory|"
            r"GPU KV cache size|# GPU blocks|_initialize_kv_caches|initialize_kv_cache",
            re.IGNORECASE,
        ),
    ),
    (
        1,
        re.compile(
            r"Starting to load model|Loading safetensors checkpoint shards|\bload_weights\b|"
            r"model_loader|create_weights|initialize_model|\bload_model\b",
            re.IGNORECASE,
        ),
    ),
)
_OOM_AT: Final[dict[int, Cause]] = {
    0: "oom_load",
    1: "oom_load",
    2: "oom_kv_cache",
    3: "oom_graph_capture",
}


def blame(cause: str | None) -> Blame:
    """Who a cause blames; an unknown one (a newer tuner's, or none) blames nobody."""
    return BLAME.get(cause or "", "outside")


def words(cause: str | None) -> str:
    return WORDS.get(cause or "", cause or "unknown cause")


def cause_of_error(exc: BaseException) -> Cause:
    """The cause of a launch that raised ``exc`` (the runner's LaunchError, a Ctrl-C)."""
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM/SIGHUP as Terminated
        return "interrupted"
    if isinstance(exc, PortTakenError):
        return "port_taken"
    if isinstance(exc, LaunchError):
        if exc.cause in BLAME:  # read by the launcher from the log's longer tail
            return cast(Cause, exc.cause)
        return cause_of_log(exc.reason, exc.log_tail, exit_code=exc.exit_code)
    if isinstance(exc, BenchmarkError):
        return "crash"  # healthy, then no measurement: a server that died under load
    return cause_of_log(str(exc))


def cause_of_log(reason: str, log_tail: str = "", *, exit_code: int | None = None) -> Cause:
    """The cause a failed launch's reason and log tail name (the table above): the reason's
    telling line first, then the tail's lines (the reason may be a wrapper's)."""
    if _INTERRUPTED.search(reason):
        return "interrupted"
    if _TIMEOUT.search(reason):
        return "timeout"
    told = reason.split("before it was healthy: ", 1)[-1]
    if PORT_TAKEN.search(told) or PORT_TAKEN.search(log_tail):
        return "port_taken"
    for lines in ([told], [clean_line(line) for line in split_lines(log_tail)]):
        named = _named(lines, log_tail)
        if named is not None:
            return named
    return "flag_refused" if exit_code == 2 else "crash"  # 2: argparse's usage error


def _named(lines: list[str], log_tail: str) -> Cause | None:
    """The cause these lines name, if any; an out-of-memory's moment from the tail."""
    text = "\n".join(lines)
    if _KV_CACHE.search(text):
        return "oom_kv_cache"
    if _STARTUP_MEMORY.search(text):
        return "oom_load"
    if _OOM.search(text):
        return _OOM_AT[moment(log_tail)]
    if _NCCL.search(text):
        return "nccl_error"
    if any(_REFUSED.search(line) for line in lines):
        return "flag_refused"
    return None


def moment(log_tail: str) -> int:
    """How far the startup got, by the furthest moment its lines or frames name: 0 nothing
    said, 1 the weights, 2 past them (the profile run, the KV cache), 3 the CUDA graphs."""
    furthest = 0
    for line in split_lines(log_tail):
        for rank, pattern in _MOMENTS:
            if rank > furthest and pattern.search(line):
                furthest = rank
                break
    return furthest
