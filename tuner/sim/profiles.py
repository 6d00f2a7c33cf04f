"""The simulated models: pure data describing each profile's speed, geometry and quirks.

A profile holds calibrated throughput points (total output tok/s by concurrency, from
``calibration.yaml`` where a real figure exists), the model geometry vLLM validates
(attention and KV heads, MoE block sizes, memory), how strongly each tunable knob acts on it, and
its noise. The arithmetic that turns a profile plus settings into a step time lives in
:mod:`tuner.sim.model`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

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
# Consumer cards: GeForce drivers refuse P2P, so NCCL goes through host memory whatever
# NCCL_P2P_LEVEL says, and a smaller buffer helps the ring (NVIDIA/nccl#1530, 8x RTX 4090:
# "I tried with 1M. It works!"). Their cards sit on two CPUs' root ports (path SYS).
CONSUMER_INTERCONNECT = Interconnect(
    path="SYS",
    cuda_p2p=False,
    small_buffer_gain=(0.01, 0.10),
    source="invented magnitudes: NCCL_BUFFSIZE=1048576 saves 1% of all-reduce time at one "
    "stream up to 10% at large batches (direction: NVIDIA/nccl#1530, measured by nobody "
    "on vLLM); no P2P on GeForce, so SHM is the default and sockets the fallback",
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


_KIMI_TABLE = ThroughputTable(
    tensor_parallel_size=8,
    expert_parallel=False,
    points=((1, 81.4), (2, 133.1), (4, 236.3), (8, 413.1), (256, 2276.0), (1024, 2320.0)),
    source="calibration.yaml kimi-k2.5-int4-tp8 (1024: plateau, extrapolated)",
)

KIMI = Profile(
    name="kimi-k2.5-int4-tp8",
    description=(
        "Kimi K2.5 INT4 on 8x RTX PRO 6000 over PCIe: decode is ~67% all-reduce, yet NCCL "
        "knobs move it by at most 1-2%; -O0/--enforce-eager cost ~25%."
    ),
    tables=(_KIMI_TABLE,),
    num_attention_heads=64,
    num_kv_heads=None,
    default_tp=8,
    weights_gib=510.0,  # 547 GB
    kv_bytes_per_token=576 * 61 * 2,  # MLA latent (512 + 64 rope) x 61 layers, bf16
    max_model_len=262144,
    comm_share=0.67,
    prefill_s_per_token=5e-5,
    moe_intermediate_size=2048,
    weight_block_n=32,
    reasoning_share=0.5,  # calibration: about half reasoning, half content
    load_shards=64,
    # RTX PRO 6000 Blackwell: 512-bit GDDR7 at 28 Gbps = 1792 GB/s.
    memory_bandwidth_gbps=1792.0,
    # What one decode step reads on each of 8 ranks, from Kimi K2's published shape
    # (search_spaces/models/kimi-k2.5-int4/config.json), in GB: attention in bf16,
    # 61 x (15.1M replicated q_a/kv_a + 86.0M / 8) x 2 B = 3.16; the dense first layer's
    # MLP 396M / 8 x 2 B = 0.10; 60 shared experts 44.0M / 8 x 2 B = 0.66; 60 x 8 routed
    # experts 44.0M / 8 at INT4 with a bf16 scale per 32 (4.5 bits) = 1.49; the router
    # 60 x 2.75M x 2 B (replicated) = 0.33; the lm_head 1.17G / 8 x 2 B = 0.29: 6.0 GB,
    # 3.35 ms at 1792 GB/s, inside the 4.05 ms the step spends outside all-reduce.
    decode_weight_bytes_per_gpu=6.0e9,
    startup=startup_figures(
        weights_s=36 * 60.0,
        layers=61,
        weights_gib_per_gpu=510.0 / 8,
        source="calibration.yaml kimi-k2.5-int4-tp8 load_minutes 36 (a first load) for the "
        "weights; the other phases vLLM's published timings scaled to 61 layers and 63.75 GiB "
        "a GPU",
    ),
)

FLAT = replace(
    KIMI,
    name="flat",
    description="Kimi's speed, but no knob the sweep varies has any effect.",
    sensitivity=Sensitivity(nccl=0.0, compilation=0.0, custom_all_reduce=0.0, speculative=0.0),
    reasoning_share=0.0,
)

# The combination the "hidden-gain" and "needle" profiles reward.
HIDDEN_GAIN_COMBINATION = (
    ("allreduce_algo", "tree"),  # NCCL_ALGO=allreduce:tree
    ("allreduce_proto", "LL128"),  # NCCL_PROTO=LL128
    ("max_nchannels", "16"),  # NCCL_MAX_NCHANNELS=16
)
# Each setting of the combination alone is worth 2.5%, any two 5.1%, all three 8%: the
# shape of real interacting knobs, where a search can climb towards the optimum.
_SINGLE_GAIN = 1.025
_TRIPLE_EXTRA = 1.08 / _SINGLE_GAIN**3

HIDDEN_GAIN = replace(
    FLAT,
    name="hidden-gain",
    description=(
        "Like flat, except NCCL_ALGO=allreduce:tree, NCCL_PROTO=LL128 and "
        "NCCL_MAX_NCHANNELS=16 are each 2.5% faster and all three together 8% faster."
    ),
    bonuses=tuple(Bonus((cond,), _SINGLE_GAIN) for cond in HIDDEN_GAIN_COMBINATION)
    + (Bonus(HIDDEN_GAIN_COMBINATION, _TRIPLE_EXTRA),),
)

# A pure interaction: nothing gives a hint until all three are set. No sampler can do
# better than chance here; benchmarks/search_efficiency.py shows what that costs.
NEEDLE = replace(
    FLAT,
    name="needle",
    description=(
        "Like flat, except NCCL_ALGO=allreduce:tree + NCCL_PROTO=LL128 + "
        "NCCL_MAX_NCHANNELS=16 together are 8% faster (each alone, each pair: nothing)."
    ),
    bonuses=(Bonus(HIDDEN_GAIN_COMBINATION, 1.08),),
)

# Two settings that help more together than apart, on top of one that simply adds: each of
# the pair alone is worth 2%, both together 7%; the third adds 2.5% to whatever it joins.
INTERACTION_PAIR = (
    ("allreduce_proto", "LL128"),  # NCCL_PROTO=LL128
    ("max_nchannels", "16"),  # NCCL_MAX_NCHANNELS=16
)
INTERACTION_ADDITIVE = ("buffsize", "16777216")  # NCCL_BUFFSIZE=16777216
_PAIR_SINGLE_GAIN = 1.02
_PAIR_GAIN = 1.07
_ADDITIVE_GAIN = 1.025

INTERACTION = replace(
    FLAT,
    name="interaction",
    description=(
        "Like flat, except NCCL_PROTO=LL128 and NCCL_MAX_NCHANNELS=16 are each 2% faster and "
        "together 7% faster, and NCCL_BUFFSIZE=16777216 adds 2.5% (all three: 9.7%)."
    ),
    bonuses=tuple(Bonus((cond,), _PAIR_SINGLE_GAIN) for cond in INTERACTION_PAIR)
    + (
        Bonus(INTERACTION_PAIR, _PAIR_GAIN / _PAIR_SINGLE_GAIN**2),
        Bonus((INTERACTION_ADDITIVE,), _ADDITIVE_GAIN),
    ),
)

# One NCCL setting with a real gain: on this box LL suits the bus, and NCCL_PROTO=LL makes
# the all-reduces so much faster that decode is 5% faster; every other knob acts as on Kimi.
NCCL_GAIN = replace(
    KIMI,
    name="nccl-gain",
    description="Kimi, except that NCCL_PROTO=LL makes decode 5% faster (a real NCCL gain).",
    bonuses=(Bonus((("allreduce_proto", "LL"),), 1.05),),
)

# A clear gain for the tests of the three answers (tests/integration/test_verdicts_sim.py):
# at 3% noise between launches it takes a sized final comparison to confirm.
CLEAR_GAIN = replace(
    KIMI,
    name="clear-gain",
    description="Kimi, except that NCCL_PROTO=LL makes decode 9% faster (a clear NCCL gain).",
    bonuses=(Bonus((("allreduce_proto", "LL"),), 1.09),),
)

# Kimi's numbers on GPUs without P2P: NCCL_P2P_LEVEL and NCCL_P2P_DISABLE do nothing
# (P2P is never possible), NCCL_SHM_DISABLE=1 falls back to sockets, and NCCL_BUFFSIZE=1048576
# is a real, small gain that grows with the batch; every other knob acts as on Kimi.
CONSUMER_PCIE = replace(
    KIMI,
    name="consumer-pcie",
    description=(
        "Kimi's numbers on 8 GPUs without P2P (GeForce, as in NVIDIA/nccl#1530): NCCL goes "
        "through host memory; NCCL_BUFFSIZE=1048576 helps the ring a little at one stream, "
        "more at large batches; NCCL_SHM_DISABLE=1 falls back to sockets."
    ),
    interconnect=CONSUMER_INTERCONNECT,
)

# The latency-throughput trade of docs/simulator.md, "slo-trade". At 64 streams of 32-token
# requests --max-num-batched-tokens 16384 gives the most tokens per second (+14%) but holds
# each request that joins a busy batch back 24 steps (TTFT p99 about 4x); --max-num-seqs 256
# gives +5% and leaves TTFT alone. Under a TTFT limit the right answer is --max-num-seqs 256,
# without one --max-num-batched-tokens 16384 (both together: faster still, TTFT as broken).
SLO_TRADE_BATCHED_TOKENS = ("max_num_batched_tokens", "16384")
SLO_TRADE_MAX_NUM_SEQS = ("max_num_seqs", "256")

SLO_TRADE = replace(
    FLAT,
    name="slo-trade",
    description=(
        "Like flat, except that at 64 streams --max-num-batched-tokens 16384 raises throughput "
        "~14% but holds new requests back (TTFT p99 ~4x), and --max-num-seqs 256 raises it "
        "~5% with TTFT unchanged; single-stream speed is the same for all."
    ),
    trades=(
        SchedulerTrade((SLO_TRADE_BATCHED_TOKENS,), speedup=1.55, full_batch=64, hold_steps=24),
        SchedulerTrade((SLO_TRADE_MAX_NUM_SEQS,), speedup=1.06, full_batch=64),
    ),
)

REASONING = Profile(
    name="reasoning",
    description="A small dense reasoning model on one GPU; chat streams ~half its tokens as "
    "reasoning_content.",
    tables=(
        ThroughputTable(
            tensor_parallel_size=1,
            expert_parallel=False,
            points=(
                (1, 150.0),
                (2, 290.0),
                (4, 560.0),
                (8, 1050.0),
                (64, 5200.0),
                (256, 9000.0),
                (1024, 9600.0),
            ),
            source="invented: an 8B dense model on one 96 GB GPU",
        ),
    ),
    num_attention_heads=32,
    num_kv_heads=8,
    default_tp=1,
    weights_gib=15.3,
    kv_bytes_per_token=36 * 8 * 128 * 2 * 2,  # layers x kv heads x head dim x (K,V) x bf16
    max_model_len=40960,
    comm_share=0.3,  # at TP=2, relative to the TP=1 step
    prefill_s_per_token=1e-5,
    activation_gib=2.0,
    reasoning_share=0.5,
    load_shards=2,
    startup=startup_figures(
        weights_s=15.3 * GIB / (230e9 / 75),  # at the box's MiniMax rate, 230 GB in 75 s
        layers=36,
        weights_gib_per_gpu=15.3,
        source="invented model: 15.3 GiB at the seeds' MiniMax load rate; the other phases "
        "vLLM's published timings scaled to 36 layers",
    ),
)

MINIMAX = Profile(
    name="minimax-m2.5-fp8-tp4",
    description=(
        "MiniMax-M2.5 FP8 at TP=4 (TP=8 needs --enable-expert-parallel; TP=6 is refused)."
    ),
    tables=(
        ThroughputTable(
            tensor_parallel_size=4,
            expert_parallel=False,
            points=((1, 84.0), (2, 140.0), (4, 250.0), (8, 440.0), (256, 2586.0), (1024, 2650.0)),
            source="calibration.yaml minimax-m2.5-fp8-tp4 (1 and 256; the rest shaped like "
            "Kimi's curve)",
        ),
        ThroughputTable(
            tensor_parallel_size=8,
            expert_parallel=True,
            points=((1, 80.0), (2, 135.0), (4, 245.0), (8, 445.0), (256, 3982.0), (1024, 3997.0)),
            source="calibration.yaml minimax-m2.5-fp8-tp8-ep (256 and 1024); 1 to 8 invented: "
            "one stream is bound by latency, where an 8-way all-reduce over PCIe and expert "
            "parallelism's all-to-all cost more than the halved compute saves, so TP=8 with EP "
            "is below TP=4's 84 at one stream and crosses it between 4 and 8 streams",
        ),
    ),
    num_attention_heads=48,
    num_kv_heads=8,
    default_tp=4,
    weights_gib=214.0,  # 230 GB
    kv_bytes_per_token=62 * 8 * 128 * 2 * 2,
    max_model_len=196608,
    comm_share=0.5,
    prefill_s_per_token=3e-5,
    moe_intermediate_size=1536,
    weight_block_n=128,
    load_shards=126,
    startup=startup_figures(
        weights_s=75.0,
        layers=62,
        weights_gib_per_gpu=214.0 / 4,
        source="calibration.yaml minimax-m2.5-fp8-tp4 load_seconds 75 for the weights; the "
        "other phases vLLM's published timings scaled to 62 layers and 53.5 GiB a GPU",
    ),
)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        KIMI,
        FLAT,
        HIDDEN_GAIN,
        NEEDLE,
        INTERACTION,
        NCCL_GAIN,
        CLEAR_GAIN,
        CONSUMER_PCIE,
        SLO_TRADE,
        REASONING,
        MINIMAX,
    )
}


def get_profile(name: str) -> Profile:
    """The profile called ``name``; KeyError lists the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise KeyError(f"unknown profile {name!r}; known: {known}") from None
