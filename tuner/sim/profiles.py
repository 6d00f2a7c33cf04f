"""The simulated models: each profile's data, and the registry ``PROFILES`` by name.

A profile holds calibrated throughput points (total output tok/s by concurrency, from
``calibration.yaml`` where a real figure exists), the model geometry vLLM validates, how
strongly each tunable knob acts on it, and its noise. What a profile is made of (the
dataclasses) is :mod:`tuner.sim.profile_parts`, re-exported here; the arithmetic that turns
a profile plus settings into a step time lives in :mod:`tuner.sim.model`.
"""

from __future__ import annotations

from dataclasses import replace

# What a profile is made of, re-exported (``X as X``): callers import it from here.
from tuner.sim.profile_parts import GIB as GIB
from tuner.sim.profile_parts import REF_COMPILE_S as REF_COMPILE_S
from tuner.sim.profile_parts import REF_ENGINE_S as REF_ENGINE_S
from tuner.sim.profile_parts import REF_GRAPHS_S as REF_GRAPHS_S
from tuner.sim.profile_parts import REF_LAYERS as REF_LAYERS
from tuner.sim.profile_parts import Bonus as Bonus
from tuner.sim.profile_parts import Interconnect as Interconnect
from tuner.sim.profile_parts import MemoryFigures as MemoryFigures
from tuner.sim.profile_parts import Profile as Profile
from tuner.sim.profile_parts import SchedulerTrade as SchedulerTrade
from tuner.sim.profile_parts import Sensitivity as Sensitivity
from tuner.sim.profile_parts import SpeculativeFigures as SpeculativeFigures
from tuner.sim.profile_parts import StartupFigures as StartupFigures
from tuner.sim.profile_parts import ThroughputTable as ThroughputTable
from tuner.sim.profile_parts import startup_figures
from tuner.sim.routing import RoutingFigures

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
    # The routed experts' 1.49 GB of those 6.0 are 0.83 ms of the 4.05 ms outside
    # all-reduce at one stream (tuner/sim/routing.py: what random weights' router skips).
    routing=RoutingFigures(
        experts=384,
        top_k=8,
        one_token_share=0.21,
        source="Kimi K2's config.json (384 routed experts, 8 a token); the share from the "
        "decode weight bytes above; max_share invented",
    ),
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

# Out of memory after the load, as a search over the scheduler's limits meets it: on Kimi's
# box and speed (NCCL_PROTO=LL 5% faster, as nccl-gain) with a context of 65,536 tokens
# (4.29 GiB of KV cache), --max-num-seqs 512 and 1024 never start (at 0.9 and above the CUDA
# graphs do not fit outside the budget; at 0.8 the sampler's share of the profile run leaves
# the KV cache too small), and --max-num-batched-tokens 16384 fails with
# --gpu-memory-utilization 0.8 only (its activations leave too little KV cache); the rest of
# search_spaces/memory-sim.yaml starts. docs/simulator.md, "memory-tight", has the table.
MEMORY_TIGHT = replace(
    NCCL_GAIN,
    name="memory-tight",
    description=(
        "Kimi's speed (NCCL_PROTO=LL 5% faster) with a memory budget the scheduler's limits "
        "can exceed after the load: --max-num-seqs 512 or 1024 always, "
        "--max-num-batched-tokens 16384 with --gpu-memory-utilization 0.8."
    ),
    max_model_len=65536,
    default_max_num_seqs=256,  # vLLM's default below 70 GiB; 1024 fails here
    memory=MemoryFigures(
        base=0.5,
        per_token=3.75 / 8192,  # 3.75 GiB at the default 8,192 batched tokens
        per_seq=0.012,  # the sampler's logits and their sorts for each request
        graphs_base=0.5,
        graphs_per_seq=0.013,  # 3.8 GiB at 256 sequences, 7.2 at 512
        outside=3.0,
        source="invented, shaped to vLLM's accounting (the profile run's peak and the KV "
        "cache inside the budget, CUDA graphs captured after it, outside); chosen so that "
        "the failing region is two values of --max-num-seqs and one pair, each failing by "
        "at least 0.5 GiB and each start fitting by as much",
    ),
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
    # 8 of 256 experts, 62 layers x 3 x 3072 x 1536 FP8 bytes each: 7.0 GB a token, 1.76
    # GB a rank at TP=4, 0.98 ms at 1792 GB/s of the 5.95 ms outside all-reduce at one stream.
    routing=RoutingFigures(
        experts=256,
        top_k=8,
        one_token_share=0.165,
        source="MiniMax-M2.5's config.json (256 experts, 8 a token, FP8); the RTX PRO "
        "6000's 1792 GB/s; max_share invented",
    ),
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
        MEMORY_TIGHT,
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
