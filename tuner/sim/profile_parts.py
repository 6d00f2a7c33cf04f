"""What a simulated profile is made of: the dataclasses, and the reference figures they share.

A profile holds calibrated throughput points (total output tok/s by concurrency), the model
geometry vLLM validates (attention and KV heads, MoE block sizes, memory), how strongly each
tunable knob acts on it, its startup phases, interconnect and noise. The profiles themselves
are data in :mod:`tuner.sim.profiles`; the arithmetic that turns a profile plus settings
into a step time lives in :mod:`tuner.sim.model`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tuner.sim.routing import RoutingFigures

GIB = 1024**3


@dataclass(frozen=True)
class Sensitivity:
    """How much of the modelled effect of each group of knobs applies (1 = all, 0 = none)."""

    nccl: float = 1.0  # NCCL_* and CUDA_DEVICE_MAX_CONNECTIONS
    compilation: float = 1.0  # -O level and --enforce-eager
    custom_all_reduce: float = 1.0  # --disable-custom-all-reduce
    speculative: float = 1.0  # --speculative-config / --num-speculative-tokens


@dataclass(frozen=True)
class Bonus:
    """A speed-up that applies only when every condition holds (an interaction effect).

    Conditions compare the canonical feature strings of :func:`tuner.sim.model.features`.
    """

    conditions: tuple[tuple[str, str], ...]
    speedup: float  # throughput multiplier


@dataclass(frozen=True)
class SchedulerTrade:
    """A scheduler setting that buys throughput at high concurrency with first-token latency.

    When every condition holds, a decode step is ``speedup`` times faster once the batch
    reaches ``full_batch`` (linearly less below it, nothing at batch 1), and a request that
    joins a batch already holding others gets its first token ``hold_steps`` steps later
    (its prefill waits): TTFT grows at high concurrency, while a single stream, alone in
    its batch, keeps its own.
    """

    conditions: tuple[tuple[str, str], ...]
    speedup: float
    full_batch: int
    hold_steps: int = 0


@dataclass(frozen=True)
class StartupFigures:
    """Seconds of each phase of a full launch at the default settings, on the seeds' box.

    ``--load-seconds`` is the whole of such a launch (:attr:`full_s`); the simulator scales
    every phase by ``load_seconds / full_s``, so a phase's share of the startup is the
    profile's, whatever ``--load-seconds`` is. ``--load-format dummy`` skips ``weights_s``
    and keeps every other phase.
    """

    weights_s: float  # reading the checkpoint: "Loading weights took", what dummy skips
    model_init_s: float  # building the layers, processing the weights (or the random fill)
    compile_s: float  # torch.compile at -O1..-O3, with a warm compile cache
    graphs_s: float  # CUDA-graph capture (not at -O0 or --enforce-eager)
    engine_s: float  # the rest of the engine's init: profile run, KV cache, warmup
    source: str = ""

    @property
    def full_s(self) -> float:
        """A full launch at the default settings: every phase."""
        return self.weights_s + self.model_init_s + self.compile_s + self.graphs_s + self.engine_s

    @property
    def dummy_s(self) -> float:
        """A ``--load-format dummy`` launch at the default settings: all but the weights."""
        return self.full_s - self.weights_s


# The seeds (calibration.yaml) time the weight load of two deployments of the box: Kimi K2.5
# INT4, 547 GB, ``load_minutes: 36`` (a first load), and MiniMax-M2.5 FP8 at TP=4, 230 GB,
# ``load_seconds: 75``. They do not time the rest of a startup, so those phases come from
# vLLM's own published startup timings, scaled to each model:
# - torch.compile and CUDA-graph capture: vllm-project/vllm#19824 (Llama-70B FP8 at TP=8, 80
#   layers): about 15 s of Dynamo bytecode transform, which a warm compile cache still pays
#   (the seeds' runs had one: "compile cache from earlier runs already in use"; the further
#   ~70 s of Inductor compile is what the cache saves), and about 60 s of graph capture.
#   Both are work per layer, so they scale by layers / 80.
# - the rest of the engine's init, 9.6 s, and building the model around its weights,
#   0.21 s per 3.42 GiB on a GPU: vllm-project/vllm#20264 (a warm start: "init engine ...
#   took 34.11 seconds" = torch.compile 7.51 s + graph capture 17 s + 9.6 s; "Model loading
#   took 3.4213 GiB and 0.902026 seconds" = "Loading weights took 0.69 seconds" + 0.21 s).
REF_LAYERS = 80
REF_COMPILE_S = 15.0
REF_GRAPHS_S = 60.0
REF_ENGINE_S = 34.11 - 7.51 - 17.0
REF_MODEL_INIT_S_PER_GIB = (0.902026 - 0.69) / 3.4213


def startup_figures(
    *, weights_s: float, layers: int, weights_gib_per_gpu: float, source: str
) -> StartupFigures:
    """A profile's startup: its own weight-load time and the reference phases scaled to it."""
    return StartupFigures(
        weights_s=weights_s,
        model_init_s=REF_MODEL_INIT_S_PER_GIB * weights_gib_per_gpu,
        compile_s=REF_COMPILE_S * layers / REF_LAYERS,
        graphs_s=REF_GRAPHS_S * layers / REF_LAYERS,
        engine_s=REF_ENGINE_S,
        source=source,
    )


@dataclass(frozen=True)
class SpeculativeFigures:
    """How speculative decoding (``--speculative-config``) acts on a decode step.

    Each step drafts ``k`` tokens per request and verifies them in one forward pass over
    ``k + 1`` positions. A draft is accepted with probability ``acceptance`` while every draft
    before it was, so a step yields ``(1 - a^(k+1)) / (1 - a)`` tokens; on dummy weights the
    acceptance is 0 (random weights never predict the draft), so a step yields one token.
    Verifying costs ``k x cost`` of a step, where ``cost`` goes from ``cost_small`` at batch 1
    (decode reads the weights once whatever the positions: the extra ones are nearly free) to
    ``cost_large`` at large batch (compute-bound: every position is real work).
    """

    acceptance: float = 0.25  # real weights, per draft token (an ngram proposer on chat text)
    cost_small: float = 0.037
    cost_large: float = 0.10
    source: str = (
        "invented, shaped to vLLM's documented behaviour: a gain at low concurrency that "
        "shrinks as the batch grows; 3 ngram drafts: +19% at one stream, +4% at 256, and "
        "-10% / -22% on dummy weights"
    )


@dataclass(frozen=True)
class MemoryFigures:
    """GiB a GPU that the scheduler's limits cost, for a profile whose memory is tight.

    vLLM's profile run (a forward pass over ``--max-num-batched-tokens`` tokens, the sampler
    over ``--max-num-seqs`` requests) peaks at ``base + per_token x tokens + per_seq x seqs``
    of activations; the KV cache gets what the ``--gpu-memory-utilization`` budget leaves
    after the weights and that peak. CUDA graphs are captured after the KV cache took its
    share, from the memory outside the budget less ``outside`` (the CUDA context, NCCL's
    buffers): ``graphs_base + graphs_per_seq x seqs`` (the largest captured batch is
    ``--max-num-seqs``). Without these figures a profile's activations are its constant
    ``activation_gib`` and its graphs always fit.
    """

    base: float
    per_token: float
    per_seq: float
    graphs_base: float
    graphs_per_seq: float
    outside: float
    source: str = ""

    def activation_gib(self, batched_tokens: int, max_num_seqs: int) -> float:
        return self.base + self.per_token * batched_tokens + self.per_seq * max_num_seqs

    def graphs_gib(self, max_num_seqs: int) -> float:
        return self.graphs_base + self.graphs_per_seq * max_num_seqs


@dataclass(frozen=True)
class PipelineFigures:
    """How pipeline parallelism (``--pipeline-parallel-size P``) acts on a decode step.

    vLLM splits the layers into P stages on P groups of TP GPUs and keeps P microbatches of
    the running requests in flight, so one engine step (a token for every request) is a
    full pass of a microbatch of batch / P: the TP step time at that batch, plus one
    hand-over of hidden states per stage (``hop_s``), all divided by ``efficiency``
    (stages waiting on each other: the bubble, uneven stages, the scheduler's wait for
    each microbatch's sampled tokens). One stream gets no overlap, only the hops.
    """

    hop_s: float = 0.0003
    efficiency: float = 0.6
    source: str = (
        "invented: no seed measures pipeline parallelism; chosen so that PP=2 beside TP "
        "never beats the seeds' layouts (users of vLLM report PP below TP at equal GPU "
        "count on one node)"
    )


@dataclass(frozen=True)
class Interconnect:
    """How a profile's GPUs reach each other, and what each NCCL transport costs there.

    NCCL uses P2P between two GPUs when the driver allows it (``cuda_p2p``; GeForce cards
    do not) and their ``path`` (NCCL's path type of the ring's farthest hop) is within the
    P2P level (``NCCL_P2P_LEVEL``, or NCCL's default PXB); else shared host memory (SHM),
    and with ``NCCL_SHM_DISABLE=1`` the network (TCP sockets on a box without IB). The costs
    are all-reduce time added over P2P, as (small messages, large messages), weighted by
    the batch as the rest of the NCCL model is. ``small_buffer_gain`` is the all-reduce time
    ``NCCL_BUFFSIZE=1048576`` saves on a ring (half of it at 2 MiB, none from the 4 MiB
    default up), same shape: a box where it helps, as on NVIDIA/nccl#1530's.
    """

    path: str = "PXB"
    cuda_p2p: bool = True
    shm_cost: tuple[float, float] = (0.15, 0.30)
    socket_cost: tuple[float, float] = (2.0, 4.0)
    small_buffer_gain: tuple[float, float] = (0.0, 0.0)
    source: str = ""


# The seeds' box: they do not say which transport NCCL picked, nor the PCIe tree. Assumed:
# the GPUs sit behind PCIe Gen5 switches (path PXB), where NCCL's default level (PXB) keeps
# P2P on (RTX PRO 6000 cards allow it); so P2P off means host memory, slower. The seeds'
# tuning (NCCL_BUFFSIZE=16777216 among it) was within noise: no buffer gain here.
KIMI_INTERCONNECT = Interconnect(
    path="PXB",
    cuda_p2p=True,
    source="invented: PXB and P2P assumed (calibration.yaml names no transport); SHM +15% "
    "/ +30% and sockets +200% / +400% of all-reduce time over P2P are plausible, unmeasured "
    "magnitudes; direction: NCCL's docs (SHM is the fallback, sockets the last resort)",
)


@dataclass(frozen=True)
class ThroughputTable:
    """Calibrated total output tok/s by concurrency, at one tensor-parallel size."""

    tensor_parallel_size: int
    expert_parallel: bool
    points: tuple[tuple[int, float], ...]  # (concurrency, tok/s), ascending concurrency
    source: str = ""


@dataclass(frozen=True)
class Profile:
    """One simulated model deployment."""

    name: str
    description: str
    tables: tuple[ThroughputTable, ...]
    num_attention_heads: int
    num_kv_heads: int | None  # None: MLA, whose latent KV cache every TP rank holds in full
    default_tp: int
    weights_gib: float
    kv_bytes_per_token: int  # all layers, all KV heads
    max_model_len: int
    comm_share: float  # share of a decode step spent in all-reduce at the table's TP
    prefill_s_per_token: float
    moe_intermediate_size: int | None = None
    weight_block_n: int | None = None  # quantization block along the MoE output dim
    activation_gib: float = 4.0
    gpus: int = 8
    gpu_memory_gib: float = 94.97  # what torch reports for a 96 GB RTX PRO 6000
    sensitivity: Sensitivity = field(default_factory=Sensitivity)
    bonuses: tuple[Bonus, ...] = ()
    trades: tuple[SchedulerTrade, ...] = ()
    reasoning_share: float = 0.0  # share of chat tokens streamed as reasoning_content
    load_shards: int = 2
    startup: StartupFigures = field(  # every profile below gives its own
        default_factory=lambda: StartupFigures(
            0.85, 0.0, 0.05, 0.05, 0.05, "no figures: 85% weights, the rest warmup"
        )
    )
    speculative: SpeculativeFigures = field(default_factory=SpeculativeFigures)
    interconnect: Interconnect = KIMI_INTERCONNECT
    pipeline: PipelineFigures = field(default_factory=PipelineFigures)
    memory: MemoryFigures | None = None  # None: constant activations, graphs always fit
    routing: RoutingFigures | None = None  # a MoE's routed experts (tuner/sim/routing.py)
    step_noise_sd: float = 0.015  # i.i.d. per engine step
    drift_sd: float = 0.002  # slow AR(1) wander within a launch
    drift_phi: float = 0.998  # the drift's step-to-step correlation (~500-step memory)
    launch_sd: float = 0.004  # log-normal per-launch speed offset
    default_max_num_seqs: int = 1024  # vLLM's default on GPUs with >= 70 GiB
    default_max_num_batched_tokens: int = 8192
    memory_bandwidth_gbps: float | None = None  # GB/s per GPU, the spec sheet's
    decode_weight_bytes_per_gpu: float | None = None  # at default_tp: what a step reads
    """The two figures of the memory floor (tuner.sim.model.memory_floor_s); None: unknown."""

    @property
    def served_name(self) -> str:
        return f"sim/{self.name}"
