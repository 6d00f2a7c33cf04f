"""What a launch runs with: each setting with the profile's default filled in, and the
GPU memory that leaves for the KV cache.

The speed model (:mod:`tuner.sim.model`), the refusals (:mod:`tuner.sim.checks`) and the
startup's log lines read the same values here, so a layout vLLM refuses and the speed it
would run at never disagree.
"""

from __future__ import annotations

from tuner.nccl import PROTOCOL_NAMES
from tuner.sim.profiles import GIB, Profile
from tuner.sim.settings import SimSettings


def effective_tp(profile: Profile, settings: SimSettings) -> int:
    return settings.tensor_parallel_size or profile.default_tp


def effective_pp(settings: SimSettings) -> int:
    return settings.pipeline_parallel_size or 1


def gpus_used(profile: Profile, settings: SimSettings) -> int:
    """GPUs the layout occupies: TP x PP ranks, one per GPU."""
    return effective_tp(profile, settings) * effective_pp(settings)


def effective_max_num_seqs(profile: Profile, settings: SimSettings) -> int:
    return settings.max_num_seqs or profile.default_max_num_seqs


def effective_max_num_batched_tokens(profile: Profile, settings: SimSettings) -> int:
    return settings.max_num_batched_tokens or profile.default_max_num_batched_tokens


def effective_max_model_len(profile: Profile, settings: SimSettings) -> int:
    return settings.max_model_len or profile.max_model_len


def compilation_level(settings: SimSettings) -> int:
    return 3 if settings.compilation_level is None else settings.compilation_level


def features(settings: SimSettings) -> dict[str, str]:
    """Canonical strings for the settings the speed model looks at (bonus conditions use them)."""
    nccl = settings.nccl
    algos = nccl.allreduce_algos()
    protos = nccl.allreduce_protos()

    def num(value: int | None) -> str:
        return "auto" if value is None else str(value)

    return {
        "allreduce_algo": "auto" if algos is None else ",".join(sorted(algos)),
        "allreduce_proto": (
            "auto" if protos is None else ",".join(sorted(PROTOCOL_NAMES[p] for p in protos))
        ),
        "min_nchannels": num(nccl.min_nchannels),
        "max_nchannels": num(nccl.max_nchannels),
        "buffsize": num(nccl.buffsize),
        "nthreads": num(nccl.nthreads),
        "cuda_device_max_connections": num(nccl.cuda_device_max_connections),
        "compilation_level": str(compilation_level(settings)),
        "enforce_eager": str(settings.enforce_eager).lower(),
        "custom_all_reduce": "off" if settings.disable_custom_all_reduce else "on",
        "max_num_seqs": num(settings.max_num_seqs),
        "max_num_batched_tokens": num(settings.max_num_batched_tokens),
        "load_format": settings.load_format,
        "speculative": (
            f"{settings.speculative_method}:{settings.num_speculative_tokens}"
            if settings.num_speculative_tokens
            else "off"
        ),
    }


def kv_cache_bytes_per_token_per_gpu(profile: Profile, tp: int) -> float:
    if profile.num_kv_heads is None:  # MLA: every rank holds the whole latent cache
        return float(profile.kv_bytes_per_token)
    return profile.kv_bytes_per_token / min(tp, profile.num_kv_heads)


def activation_gib(profile: Profile, settings: SimSettings) -> float:
    """GiB per GPU the profile run peaks at: the profile's constant, or with memory figures
    what ``--max-num-batched-tokens`` and ``--max-num-seqs`` cost (:class:`MemoryFigures`)."""
    memory = profile.memory
    if memory is None:
        return profile.activation_gib
    return memory.activation_gib(
        effective_max_num_batched_tokens(profile, settings),
        effective_max_num_seqs(profile, settings),
    )


def weights_room_gib(profile: Profile, settings: SimSettings) -> float:
    """GiB per GPU of the ``--gpu-memory-utilization`` budget the weights leave."""
    budget = profile.gpu_memory_gib * settings.gpu_memory_utilization
    return budget - profile.weights_gib / gpus_used(profile, settings)


def free_memory_gib(profile: Profile, settings: SimSettings) -> float:
    """GiB per GPU left for the KV cache after weights and activations (negative: OOM)."""
    return weights_room_gib(profile, settings) - activation_gib(profile, settings)


def graphs_room_gib(profile: Profile, settings: SimSettings) -> float | None:
    """GiB per GPU CUDA graphs may take, outside the budget (None: no memory figures)."""
    if profile.memory is None:
        return None
    outside = profile.gpu_memory_gib * (1.0 - settings.gpu_memory_utilization)
    return outside - profile.memory.outside


def graphs_gib(profile: Profile, settings: SimSettings) -> float:
    """GiB per GPU the CUDA graphs take (0 without memory figures: they always fit)."""
    memory = profile.memory
    return 0.0 if memory is None else memory.graphs_gib(effective_max_num_seqs(profile, settings))


def kv_capacity_tokens(profile: Profile, settings: SimSettings) -> int:
    """How many tokens of KV cache fit (the ``GPU KV cache size`` vLLM logs)."""
    free = free_memory_gib(profile, settings)
    if free <= 0:
        return 0
    tp = effective_tp(profile, settings)
    # A pipeline stage holds the KV cache of its own layers only.
    per_gpu = kv_cache_bytes_per_token_per_gpu(profile, tp) / effective_pp(settings)
    return int(free * GIB / per_gpu)
