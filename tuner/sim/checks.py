"""Configurations the real stack refuses, and the phase of startup where each one fails.

vLLM validates its config before anything else (``start``), NCCL parses its environment when
the communicators come up (``init``), memory runs out while weights stream in (``load``), some
NCCL choices only break at the first collectives of the warmup and a KV cache too small is
refused when it is sized (``warmup``), and CUDA graphs that do not fit the memory outside the
budget run out of it while they are captured (``capture``): the last two after a whole load.
A tuner must survive all five, so the simulator reproduces each at its real moment and with
the real message's text (vLLM's own, or torch's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tuner.sim.effective import graphs_gib, graphs_room_gib, weights_room_gib
from tuner.sim.model import (
    effective_max_model_len,
    effective_max_num_batched_tokens,
    effective_max_num_seqs,
    effective_pp,
    effective_tp,
    free_memory_gib,
    gpus_used,
    kv_cache_bytes_per_token_per_gpu,
    kv_capacity_tokens,
)
from tuner.sim.nccl import warmup_failure
from tuner.sim.phases import captures_graphs
from tuner.sim.profiles import GIB, Profile
from tuner.sim.settings import SimSettings

Phase = Literal["start", "init", "load", "warmup", "capture"]
PHASES: tuple[Phase, ...] = ("start", "init", "load", "warmup", "capture")
CONSERVING_MEMORY = (
    "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
)

_CONFIG_FRAME = (
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1103, '
    "in create_engine_config",
    "    config = VllmConfig(",
)
_MODEL_FRAME = (
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/model_executor/model_loader/'
    'base_loader.py", line 44, in load_model',
    "    model = initialize_model(vllm_config=vllm_config, model_config=model_config)",
)
_LOAD_FRAME = (
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/model_executor/model_loader/'
    'default_loader.py", line 269, in load_weights',
    "    loaded_weights = model.load_weights(",
)
_NCCL_FRAME = (
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/distributed/device_communicators/'
    'pynccl_wrapper.py", line 297, in NCCL_CHECK',
    '    raise RuntimeError(f"NCCL error: {error_str}")',
)
_WARMUP_FRAME = (
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 335, '
    "in compile_or_warm_up_model",
    "    self.model_runner._dummy_run(",
)
_KV_FRAME = (
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 202, '
    "in _initialize_kv_caches",
    "    kv_cache_configs = get_kv_cache_configs(",
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py", line 707, '
    "in check_enough_kv_cache_memory",
    "    _check_enough_kv_cache_memory(",
)
_CAPTURE_FRAME = (
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 392, '
    "in compile_or_warm_up_model",
    "    cuda_graph_memory_bytes = self.model_runner.capture_model()",
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", '
    "line 3512, in capture_model",
    "    self._capture_cudagraphs(",
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", '
    "line 3598, in _capture_cudagraphs",
    "    self._dummy_run(",
)


@dataclass(frozen=True)
class Failure:
    """One refusal: when it happens and what the process prints before exiting 1."""

    phase: Phase
    exception: str  # the last traceback line, e.g. "ValueError: ..."
    frames: tuple[str, ...] = ()
    nccl_warn: str | None = None  # text after "NCCL WARN", printed first
    load_fraction: float = 0.0  # "load" phase: share of shards loaded before the failure

    def warn_lines(self, host: str, pid: int) -> list[str]:
        """NCCL's own warning, printed by the worker before Python sees the error."""
        return [f"{host}:{pid}:{pid} [0] NCCL WARN {self.nccl_warn}"] if self.nccl_warn else []

    def traceback_lines(self) -> list[str]:
        return ["Traceback (most recent call last):", *self.frames, self.exception]


def startup_failures(profile: Profile, settings: SimSettings) -> list[Failure]:
    """Every refusal this configuration meets, in the order startup would meet them."""
    out: list[Failure] = []
    tp = effective_tp(profile, settings)
    # start: vLLM's config validation
    if settings.fail_at_start:
        out.append(Failure("start", f"RuntimeError: {settings.fail_at_start}", _CONFIG_FRAME))
    if profile.num_attention_heads % tp:
        out.append(
            Failure(
                "start",
                f"ValueError: Total number of attention heads ({profile.num_attention_heads}) must "
                f"be divisible by tensor parallel size ({tp}).",
                _CONFIG_FRAME,
            )
        )
    if tp > profile.gpus:
        out.append(
            Failure(
                "start",
                f"ValueError: Tensor parallel size ({tp}) cannot be larger than the number of "
                f"available GPUs ({profile.gpus}).",
                _CONFIG_FRAME,
            )
        )
    pp = effective_pp(settings)
    if pp > 1 and tp <= profile.gpus < tp * pp:
        # vLLM's world size is TP x PP; Ray (or mp) cannot place more ranks than GPUs.
        out.append(
            Failure(
                "start",
                f"ValueError: World size ({tp * pp}) = tensor parallel size ({tp}) x pipeline "
                f"parallel size ({pp}) is larger than the number of available GPUs "
                f"({profile.gpus}).",
                _CONFIG_FRAME,
            )
        )
    seqs = effective_max_num_seqs(profile, settings)
    batched = effective_max_num_batched_tokens(profile, settings)
    if batched < seqs:
        out.append(
            Failure(
                "start",
                f"ValueError: max_num_batched_tokens ({batched}) must be greater than or equal "
                f"to max_num_seqs ({seqs}).",
                _CONFIG_FRAME,
            )
        )
    if settings.max_model_len and settings.max_model_len > profile.max_model_len:
        out.append(
            Failure(
                "start",
                f"ValueError: User-specified max_model_len ({settings.max_model_len}) is greater "
                f"than the derived max_model_len (max_position_embeddings={profile.max_model_len} "
                "in model's config.json).",
                _CONFIG_FRAME,
            )
        )
    # init: NCCL communicators, then building the model's layers
    if settings.nccl_error:
        out.append(
            Failure(
                "init",
                "RuntimeError: NCCL error: invalid argument (run with NCCL_DEBUG=WARN for details)",
                _NCCL_FRAME,
                nccl_warn=settings.nccl_error,
            )
        )
    kv = profile.num_kv_heads
    if kv is not None and (kv % tp if tp <= kv else tp % kv):
        out.append(
            Failure(
                "init",
                f"ValueError: Total number of KV heads ({kv}) must be divisible by tensor "
                f"parallel size ({tp}).",
                _MODEL_FRAME,
            )
        )
    moe, block = profile.moe_intermediate_size, profile.weight_block_n
    if moe and block and not settings.enable_expert_parallel and (moe // tp) % block:
        out.append(
            Failure(
                "init",
                f"ValueError: The output_size of gate's and up's weight = {moe // tp} is not "
                f"divisible by weight quantization block_n = {block}.",
                _MODEL_FRAME,
            )
        )
    # load: weights do not fit (with memory figures the budget's rest is the KV cache's and
    # the activations', sized after the load: see warmup)
    free = free_memory_gib(profile, settings)
    room = weights_room_gib(profile, settings)
    if (room if profile.memory is not None else free) < 0:
        per_gpu = profile.weights_gib / gpus_used(profile, settings)
        fits = max(0.0, per_gpu + free) / per_gpu
        budget = profile.gpu_memory_gib * settings.gpu_memory_utilization
        out.append(
            Failure(
                "load",
                f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 "
                f"has a total capacity of {profile.gpu_memory_gib:.2f} GiB of which "
                f"{max(0.0, profile.gpu_memory_gib - budget):.2f} GiB is free. "
                "Including non-PyTorch "
                f"memory, this process has {budget:.2f} GiB memory in use.",
                _LOAD_FRAME,
                load_fraction=min(0.95, fits),
            )
        )
    # warmup: first collectives and KV-cache sizing
    warn = warmup_failure(settings.nccl, settings.nccl_version)
    if warn:
        out.append(
            Failure(
                "warmup",
                "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)",
                _WARMUP_FRAME + _NCCL_FRAME,
                nccl_warn=warn,
            )
        )
    out.extend(_kv_cache_failures(profile, settings, free, room))
    if settings.fail_after_load:
        out.append(Failure("warmup", f"RuntimeError: {settings.fail_after_load}", _WARMUP_FRAME))
    # capture: the CUDA graphs, after the KV cache took the budget's rest
    graphs_room = graphs_room_gib(profile, settings)
    need = graphs_gib(profile, settings)
    if graphs_room is not None and captures_graphs(settings) and need > graphs_room:
        out.append(_graph_capture_oom(profile, need, graphs_room))
    return out


def _kv_cache_failures(
    profile: Profile, settings: SimSettings, free: float, room: float
) -> list[Failure]:
    """vLLM's two refusals when it sizes the KV cache (v1/core/kv_cache_utils.py,
    ``_check_enough_kv_cache_memory``): nothing left after the activations, or too little
    for one request of the model's max length."""
    if profile.memory is not None and room >= 0 and free <= 0:
        return [
            Failure(
                "warmup",
                "ValueError: No available memory for the cache blocks. Try increasing "
                "`gpu_memory_utilization` when initializing the engine. " + CONSERVING_MEMORY,
                _KV_FRAME,
            )
        ]
    max_len = effective_max_model_len(profile, settings)
    capacity = kv_capacity_tokens(profile, settings)
    if free < 0 or capacity >= max_len:
        return []
    tp, pp = effective_tp(profile, settings), effective_pp(settings)
    need = max_len * kv_cache_bytes_per_token_per_gpu(profile, tp) / pp / GIB
    estimate = (
        f"Based on the available memory, the estimated maximum model length is {capacity}. "
        if capacity > 0
        else ""
    )
    return [
        Failure(
            "warmup",
            f"ValueError: To serve at least one request with the models's max seq len "
            f"({max_len}), ({need:.2f} GiB KV cache is needed, which is larger than the "
            f"available KV cache memory ({free:.2f} GiB). {estimate}Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
            "engine. " + CONSERVING_MEMORY,
            _KV_FRAME,
        )
    ]


def _graph_capture_oom(profile: Profile, need: float, room: float) -> Failure:
    """torch's out-of-memory error as vLLM's graph capture meets it: the graph pool has taken
    what was free outside the budget, and the next graph does not fit (torch's wording)."""
    total = profile.gpu_memory_gib
    pool = max(0.0, room)
    left = 0.04  # what the allocator cannot use
    in_use = total - left
    outside = profile.memory.outside if profile.memory is not None else 0.0
    reserved = 0.12
    return Failure(
        "capture",
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {need - pool:.2f} GiB. "
        f"GPU 0 has a total capacity of {total:.2f} GiB of which {left:.2f} GiB is free. "
        f"Including non-PyTorch memory, this process has {in_use:.2f} GiB memory in use. Of "
        f"the allocated memory {in_use - outside - reserved:.2f} GiB is allocated by PyTorch, "
        f"with {pool:.2f} GiB allocated in private pools (e.g., CUDA Graphs), and "
        f"{reserved:.2f} GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
        "True to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        _CAPTURE_FRAME,
    )


def first_failure(profile: Profile, settings: SimSettings) -> Failure | None:
    """The refusal that actually stops startup (the earliest), or None if it starts."""
    failures = startup_failures(profile, settings)
    return failures[0] if failures else None
