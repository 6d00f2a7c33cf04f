"""The simulator's speed model: pure functions from (profile, settings, batch) to seconds.

A decode step's noise-free duration is the profile's calibrated step time at that batch size
(interpolated between calibration points), split into compute and all-reduce parts; the
all-reduce part is nudged by NCCL settings (:mod:`tuner.sim.nccl_effect`, clamped so NCCL
moves a whole step by at most -1.5%..+2%) and then by the transport and the profile's buffer
gain (tuner/sim/transport.py, outside the clamp), and the whole step by the compilation
level, interaction bonuses and speculative decoding (which helps on real weights and hurts
on dummy ones). The engine multiplies this by the per-launch speed factor, per-step noise
and ``--time-scale``; :func:`expected_output_throughput` gives the noise-free truth tests
compare against. The settings with the profile's defaults filled in, and the memory left
for the KV cache, are :mod:`tuner.sim.effective`'s, re-exported here. On dummy weights a
MoE profile's compute part reads fewer experts unless vLLM's routing simulation is on
(:mod:`tuner.sim.routing`).
"""

from __future__ import annotations

import math

# The settings as a launch runs them, re-exported (``X as X``): callers read them here.
from tuner.sim.effective import compilation_level as compilation_level
from tuner.sim.effective import effective_max_model_len as effective_max_model_len
from tuner.sim.effective import effective_max_num_batched_tokens as effective_max_num_batched_tokens
from tuner.sim.effective import effective_max_num_seqs as effective_max_num_seqs
from tuner.sim.effective import effective_pp as effective_pp
from tuner.sim.effective import effective_tp as effective_tp
from tuner.sim.effective import features as features
from tuner.sim.effective import free_memory_gib as free_memory_gib
from tuner.sim.effective import gpus_used as gpus_used
from tuner.sim.effective import kv_cache_bytes_per_token_per_gpu as kv_cache_bytes_per_token_per_gpu
from tuner.sim.effective import kv_capacity_tokens as kv_capacity_tokens
from tuner.sim.geometry import message_bytes
from tuner.sim.graphs import loses_graph
from tuner.sim.nccl_effect import (
    NCCL_STEP_EFFECT_MAX,
    NCCL_STEP_EFFECT_MIN,
    nccl_comm_factor,
    small_weight,
)
from tuner.sim.nccl_tuner_plugin import applied
from tuner.sim.profiles import Profile, SchedulerTrade, ThroughputTable, get_profile
from tuner.sim.routing import collapsed_compute
from tuner.sim.settings import SimSettings
from tuner.sim.transport import buffer_factor, transport_factor


def table_for(profile: Profile, tp: int, expert_parallel: bool) -> ThroughputTable:
    """The calibration table for this TP (and EP) if there is one, else the default-TP table."""
    for table in profile.tables:
        if table.tensor_parallel_size == tp and table.expert_parallel == expert_parallel:
            return table
    for table in profile.tables:
        if table.tensor_parallel_size == tp:
            return table
    for table in profile.tables:
        if table.tensor_parallel_size == profile.default_tp:
            return table
    return profile.tables[0]


def table_step_time(table: ThroughputTable, batch: int) -> float:
    """Seconds per decode step at ``batch``: linear in batch between calibration points."""
    pts = [(b, b / tok_s) for b, tok_s in table.points]
    if batch <= pts[0][0]:
        return pts[0][1]
    for (b0, t0), (b1, t1) in zip(pts, pts[1:], strict=False):
        if batch <= b1:
            return t0 + (t1 - t0) * (batch - b0) / (b1 - b0)
    (b0, t0), (b1, t1) = pts[-2], pts[-1]
    return t1 + max(0.0, (t1 - t0) / (b1 - b0)) * (batch - b1)


def _comm_scale(tp: int) -> float:
    """Relative all-reduce cost at ``tp`` ranks: ring traffic (tp-1)/tp plus hop latency."""
    if tp <= 1:
        return 0.0
    return (tp - 1) / tp * (1.0 + 0.1 * math.log2(tp))


def compilation_factor(settings: SimSettings, batch: int) -> float:
    """Multiplier on step time: eager mode pays CPU launch overhead, worst at small batch;
    a batch above the largest captured CUDA graph runs eager too (tuner/sim/graphs.py)."""
    level = compilation_level(settings)
    if settings.enforce_eager or level == 0 or loses_graph(settings, batch):
        ws = small_weight(batch)
        return 1.0 + 0.333 * ws + 0.08 * (1 - ws)  # ~25% fewer tok/s at batch 1
    return {1: 1.04, 2: 1.01}.get(level, 1.0)


def bonus_factor(profile: Profile, settings: SimSettings) -> float:
    """Throughput multiplier from interaction bonuses whose conditions all hold."""
    feats = features(settings)
    factor = 1.0
    for bonus in profile.bonuses:
        if all(feats.get(key) == value for key, value in bonus.conditions):
            factor *= bonus.speedup
    return factor


def _trades(profile: Profile, settings: SimSettings) -> list[SchedulerTrade]:
    if not profile.trades:
        return []
    feats = features(settings)
    return [t for t in profile.trades if all(feats.get(k) == v for k, v in t.conditions)]


def trade_factor(profile: Profile, settings: SimSettings, batch: int) -> float:
    """Throughput multiplier of the profile's scheduler trades at ``batch`` (1 at batch 1)."""
    factor = 1.0
    for trade in _trades(profile, settings):
        share = min(1.0, max(0, batch - 1) / max(1, trade.full_batch - 1))
        factor *= 1.0 + (trade.speedup - 1.0) * share
    return factor


def speculative_tokens_per_step(acceptance: float, drafts: int) -> float:
    """Tokens one request gains per verify step: the bonus token, plus each draft accepted
    while every draft before it was (1 + a + a^2 + ... + a^k)."""
    if drafts <= 0:
        return 1.0
    if acceptance >= 1.0:
        return float(drafts + 1)
    return (1.0 - acceptance ** (drafts + 1)) / (1.0 - acceptance)


def speculative_factor(profile: Profile, settings: SimSettings, batch: int) -> float:
    """Throughput multiplier of speculative decoding at ``batch`` (1.0 when it is off).

    A step drafts k tokens per request and verifies them in one pass over k + 1 positions.
    On real weights the model agrees with a share of the drafts, so a step yields more than
    one token; the verify pass costs little at small batch (decode is bound by reading the
    weights, which the extra positions share) and more as the batch grows (compute-bound),
    so the gain shrinks with concurrency, as vLLM's does. On dummy weights the model's
    tokens are noise, no draft is ever accepted, and the verify pass is pure cost: a
    screening launch sees the opposite of the truth, so it must never judge this setting.
    """
    k = settings.num_speculative_tokens
    sens = profile.sensitivity.speculative
    if k <= 0 or sens == 0:
        return 1.0
    fig = profile.speculative
    acceptance = 0.0 if settings.load_format == "dummy" else fig.acceptance
    ws = small_weight(max(1, batch))
    cost = 1.0 + k * (ws * fig.cost_small + (1 - ws) * fig.cost_large)
    return 1.0 + sens * (speculative_tokens_per_step(acceptance, k) / cost - 1.0)


def hold_steps(profile: Profile, settings: SimSettings) -> int:
    """Steps a request joining a non-empty batch waits for its first token (0: none)."""
    return max((t.hold_steps for t in _trades(profile, settings)), default=0)


def uses_custom_all_reduce(profile: Profile, tp: int) -> bool:
    """Whether vLLM would run its own all-reduce here, so that --disable-custom-all-reduce
    changes anything: 2, 4, 6 or 8 GPUs, and two of them or all joined by NVLink (vLLM's
    CustomAllreduce, the rule tuner/check/custom_allreduce.py applies to real boxes). On
    the seeds' PCIe box at TP=8 it is off whatever the flag says."""
    return tp in (2, 4, 6, 8) and (tp == 2 or profile.interconnect.path.startswith("NV"))


def step_parts(profile: Profile, settings: SimSettings, batch: int) -> tuple[float, float]:
    """(compute, all-reduce) seconds of one decode step, before the compilation level and
    the bonuses; the all-reduce part carries the NCCL settings' effect (the sim's probe,
    tuner/sim/probe.py, times the same all-reduce part)."""
    prof, st = profile, settings
    batch = max(1, batch)
    tp = effective_tp(prof, st)
    table = table_for(prof, tp, st.enable_expert_parallel)
    ref_tp = table.tensor_parallel_size
    total = table_step_time(table, batch)
    share = prof.comm_share
    compute_scale = (1.0 - share if ref_tp > 1 else 1.0) * (ref_tp / tp) ** 0.85
    compute = total * compute_scale
    if prof.routing is not None and st.load_format == "dummy" and not st.moe_routing:
        # Random weights' router picks the same experts for every token: fewer read.
        one = table_step_time(table, 1) * compute_scale
        compute = collapsed_compute(prof.routing, compute, one, batch)
    comm = total * share * _comm_scale(tp) / _comm_scale(max(ref_tp, 2))
    if comm > 0:
        sens = prof.sensitivity
        # A tuner plugin's table picks the protocol by this step's message size.
        env = applied(st.nccl, st.nccl_tuner, message_bytes(prof, batch), tp)
        nccl = 1.0 + sens.nccl * (nccl_comm_factor(env, batch) - 1.0)
        ratio = comm / (compute + comm)
        lo = 1.0 + NCCL_STEP_EFFECT_MIN / ratio
        hi = 1.0 + NCCL_STEP_EFFECT_MAX / ratio
        comm *= min(hi, max(lo, nccl))
        # The transport and the profile's buffer gain act outside the clamp: P2P off can
        # cost far more than tuning's 1-2% (tuner/sim/transport.py).
        ws = small_weight(batch)
        wire = transport_factor(prof.interconnect, st.nccl, ws)
        wire *= buffer_factor(prof.interconnect, st.nccl, ws)
        comm *= 1.0 + sens.nccl * (wire - 1.0)
        if st.disable_custom_all_reduce and uses_custom_all_reduce(prof, tp):
            comm *= 1.0 + sens.custom_all_reduce * 0.05 * small_weight(batch)
    return compute, comm


def memory_floor_s(profile: Profile, settings: SimSettings) -> float | None:
    """Seconds a decode step needs to read its weights once: the compute part's floor.

    The compute part of :func:`step_parts` holds it (tests/unit/test_sim_profiles.py
    checks that it fits); the rest of that part is kernels, launches and imperfect
    overlap. None when the profile gives no figures.
    """
    bw, weights = profile.memory_bandwidth_gbps, profile.decode_weight_bytes_per_gpu
    if not bw or not weights:
        return None
    # Sharded weights spread over more ranks; the replicated part is ignored here.
    return weights * profile.default_tp / effective_tp(profile, settings) / (bw * 1e9)


def ceiling_tokens_per_s(profile: Profile, settings: SimSettings) -> float | None:
    """The sim's own bound of one stream: reading the weights plus the all-reduces, nothing
    else (what tuner's ceiling estimates from config.json, the bandwidth and the probe)."""
    memory = memory_floor_s(profile, settings)
    if memory is None:
        return None
    _, comm = step_parts(profile, settings, 1)
    return 1.0 / (memory + comm)


def step_time(profile: Profile | str, settings: SimSettings | None, batch: int) -> float:
    """Noise-free seconds of one decode step with ``batch`` running requests (before the
    per-launch speed factor and ``--time-scale``)."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    st = settings or SimSettings()
    pp = effective_pp(st)
    # With PP, a step is one microbatch's pass through every stage (PipelineFigures).
    batch = -(-max(1, batch) // pp)
    compute, comm = step_parts(prof, st, batch)
    compile_f = 1.0 + prof.sensitivity.compilation * (compilation_factor(st, batch) - 1.0)
    speedup = bonus_factor(prof, st) * trade_factor(prof, st, batch)
    step = (compute + comm) * compile_f / (speedup * speculative_factor(prof, st, batch))
    if pp == 1:
        return step
    return (step + pp * prof.pipeline.hop_s) / prof.pipeline.efficiency


def prefill_time(profile: Profile, settings: SimSettings, tokens: int) -> float:
    """Extra step seconds to prefill ``tokens`` prompt tokens (compute-bound, scales with TP)."""
    if tokens <= 0:
        return 0.0
    tp = effective_tp(profile, settings)
    ref_tp = table_for(profile, tp, settings.enable_expert_parallel).tensor_parallel_size
    return tokens * profile.prefill_s_per_token * (ref_tp / tp) ** 0.85


def expected_output_throughput(
    profile: Profile | str,
    settings: SimSettings | None = None,
    concurrency: int = 1,
    *,
    prompt_tokens: int = 0,
    output_tokens: int = 512,
    time_scale: float = 1.0,
) -> float:
    """Noise-free steady-state total output tok/s with ``concurrency`` closed-loop streams.

    Each stream runs requests of ``output_tokens`` back to back; at most ``--max-num-seqs`` run
    at once. Over ``output_tokens`` steps every running request is prefilled once, which adds
    its prefill time to one step. Ignores client overhead, prefix-cache hits and KV-cache
    preemption. Divide-by-``time_scale`` gives what a sim started with ``--time-scale`` shows.
    """
    prof = get_profile(profile) if isinstance(profile, str) else profile
    st = settings or SimSettings()
    if concurrency <= 0 or output_tokens <= 0:
        return 0.0
    batch = min(concurrency, effective_max_num_seqs(prof, st))
    period = output_tokens * step_time(prof, st, batch) + batch * prefill_time(
        prof, st, prompt_tokens
    )
    return batch * output_tokens / period / time_scale


def relative_speed(profile: Profile | str, settings: SimSettings, concurrency: int = 1) -> float:
    """Throughput with ``settings`` over throughput with every knob at its default."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    base = SimSettings(profile=prof.name)
    return expected_output_throughput(prof, settings, concurrency) / expected_output_throughput(
        prof, base, concurrency
    )
