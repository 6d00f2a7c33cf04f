"""tuner.sim.profiles and tuner.sim.model: the calibrated speed model, without any server."""

from __future__ import annotations

import itertools

import pytest

from tuner.sim import HIDDEN_GAIN_COMBINATION, PROFILES, expected_output_throughput
from tuner.sim.model import (
    kv_capacity_tokens,
    relative_speed,
    step_time,
)
from tuner.sim.settings import SimSettings, parse_settings

KIMI = "kimi-k2.5-int4-tp8"
# The demo space's NCCL choices (DESIGN.md's example space file), "None" meaning unset.
ALGO = [None, "allreduce:ring", "allreduce:tree"]
PROTO = [None, "LL", "LL128", "Simple"]
MAX_CH = [None, "4", "8", "16", "32"]


def settings(*argv: str, **env: str | None) -> SimSettings:
    return parse_settings(list(argv), {k: v for k, v in env.items() if v is not None})


@pytest.mark.parametrize(
    ("concurrency", "tok_s"), [(1, 81.4), (2, 133.1), (4, 236.3), (8, 413.1), (256, 2276.0)]
)
def test_kimi_matches_calibration(concurrency: int, tok_s: float) -> None:
    got = expected_output_throughput(KIMI, None, concurrency)
    assert got == pytest.approx(tok_s, rel=0.01)


@pytest.mark.parametrize(("batch", "ms"), [(1, 12.3), (2, 15.0), (4, 16.9), (8, 19.4)])
def test_kimi_step_times(batch: int, ms: float) -> None:
    assert step_time(KIMI, None, batch) * 1000 == pytest.approx(ms, rel=0.01)


def test_kimi_512_token_latency_matches_calibration() -> None:
    # calibration: 6.29 s for 512 tokens at one stream
    assert 512 * step_time(KIMI, None, 1) == pytest.approx(6.29, rel=0.01)


def test_a_short_prompt_costs_little() -> None:
    with_prompt = expected_output_throughput(KIMI, None, 1, prompt_tokens=256)
    assert 0.99 * 81.4 < with_prompt < 81.4


def test_throughput_grows_with_concurrency_and_plateaus() -> None:
    values = [expected_output_throughput(KIMI, None, c) for c in (1, 2, 4, 8, 16, 64, 256, 1024)]
    assert values == sorted(values)
    assert values[-1] < 1.05 * values[-2]


def test_minimax_matches_calibration() -> None:
    name = "minimax-m2.5-fp8-tp4"
    assert expected_output_throughput(name, None, 1) == pytest.approx(84, rel=0.01)
    assert expected_output_throughput(name, None, 256) == pytest.approx(2586, rel=0.01)
    ep = settings("-tp", "8", "--enable-expert-parallel")
    assert expected_output_throughput(name, ep, 256) == pytest.approx(3982, rel=0.01)
    assert expected_output_throughput(name, ep, 1024) == pytest.approx(3997, rel=0.01)


@pytest.mark.parametrize(("algo", "proto", "max_ch"), list(itertools.product(ALGO, PROTO, MAX_CH)))
def test_nccl_moves_kimi_by_at_most_two_percent(
    algo: str | None, proto: str | None, max_ch: str | None
) -> None:
    s = settings(NCCL_ALGO=algo, NCCL_PROTO=proto, NCCL_MAX_NCHANNELS=max_ch)
    for c in (1, 8, 64, 256):
        assert abs(relative_speed(KIMI, s, c) - 1.0) <= 0.02


@pytest.mark.parametrize(
    "env",
    [
        {"NCCL_MAX_NCHANNELS": "1", "NCCL_MIN_NCHANNELS": "1"},
        {"NCCL_MIN_NCHANNELS": "32"},
        {"NCCL_BUFFSIZE": "65536"},
        {"NCCL_BUFFSIZE": "16777216"},
        {"NCCL_NTHREADS": "64"},
        {"NCCL_NTHREADS": "512"},
        {"CUDA_DEVICE_MAX_CONNECTIONS": "1"},
        {"CUDA_DEVICE_MAX_CONNECTIONS": "32"},
        {
            "NCCL_PROTO": "Simple",
            "NCCL_ALGO": "allreduce:tree",
            "NCCL_MAX_NCHANNELS": "1",
            "NCCL_BUFFSIZE": "65536",
            "NCCL_NTHREADS": "64",
        },  # everything bad at once
    ],
)
def test_other_nccl_knobs_are_small(env: dict[str, str]) -> None:
    s = settings(**env)
    for c in (1, 8, 256):
        assert abs(relative_speed(KIMI, s, c) - 1.0) <= 0.02


def test_small_knobs_are_tiny() -> None:
    for env in (
        {"NCCL_BUFFSIZE": "16777216"},
        {"NCCL_NTHREADS": "256"},
        {"CUDA_DEVICE_MAX_CONNECTIONS": "1"},
    ):
        assert abs(relative_speed(KIMI, settings(**env), 1) - 1.0) <= 0.006


def test_the_calibrated_nccl_tuning_is_within_noise() -> None:
    s = settings(
        NCCL_PROTO="LL",
        NCCL_ALGO="allreduce:ring",
        NCCL_MAX_NCHANNELS="16",
        NCCL_BUFFSIZE="16777216",
        CUDA_DEVICE_MAX_CONNECTIONS="1",
    )
    got = expected_output_throughput(KIMI, s, 1)
    assert 81.4 < got < 82.5  # calibration: 81.9, "within noise of the 81.4 baseline"


def test_ll_helps_small_batches_and_tree_hurts() -> None:
    assert relative_speed(KIMI, settings(NCCL_PROTO="LL"), 1) > 1.0
    assert relative_speed(KIMI, settings(NCCL_PROTO="LL"), 256) < 1.0
    assert relative_speed(KIMI, settings(NCCL_ALGO="allreduce:tree"), 1) < 1.0


@pytest.mark.parametrize("argv", [["-O0"], ["--enforce-eager"], ["-O", "0", "--enforce-eager"]])
def test_eager_is_about_25_percent_slower(argv: list[str]) -> None:
    assert relative_speed(KIMI, settings(*argv), 1) == pytest.approx(0.75, abs=0.03)
    assert relative_speed(KIMI, settings(*argv), 256) > 0.85  # launch overhead amortized


def test_o3_is_the_default() -> None:
    assert relative_speed(KIMI, settings("-O3"), 1) == 1.0
    assert relative_speed(KIMI, settings("-O1"), 1) < relative_speed(KIMI, settings("-O2"), 1) < 1


def test_disabling_custom_all_reduce_costs_a_few_percent_where_vllm_uses_it() -> None:
    # At TP=2 vLLM runs its own all-reduce: turning it off costs at small batches.
    two = settings("-tp", "2")
    off = settings("-tp", "2", "--disable-custom-all-reduce")
    for batch, low, high in ((1, 0.95, 0.99), (256, 0.99, 1.0)):
        ratio = expected_output_throughput(KIMI, off, batch) / expected_output_throughput(
            KIMI, two, batch
        )
        assert low <= ratio <= high, (batch, ratio)


def test_disabling_custom_all_reduce_changes_nothing_at_tp8_over_pcie() -> None:
    # vLLM's rule (tuner/check/custom_allreduce.py): more than 2 GPUs not all joined by
    # NVLink never use it, so the flag is a no-op on the seeds' box.
    assert relative_speed(KIMI, settings("--disable-custom-all-reduce"), 1) == 1.0


def test_max_num_seqs_caps_the_batch() -> None:
    capped = settings("--max-num-seqs", "4")
    assert expected_output_throughput(KIMI, capped, 8) == pytest.approx(
        expected_output_throughput(KIMI, None, 4)
    )
    assert expected_output_throughput(KIMI, capped, 2) == expected_output_throughput(KIMI, None, 2)


def test_time_scale_divides_the_truth() -> None:
    assert expected_output_throughput(KIMI, None, 1, time_scale=0.1) == pytest.approx(814.0)


@pytest.mark.parametrize(
    "s",
    [
        settings("-O0"),
        settings("--enforce-eager"),
        settings("--disable-custom-all-reduce"),
        settings(NCCL_PROTO="Simple", NCCL_ALGO="allreduce:tree", NCCL_MAX_NCHANNELS="1"),
        settings(NCCL_PROTO="LL128", NCCL_ALGO="allreduce:tree", NCCL_MAX_NCHANNELS="16"),
        settings(NCCL_BUFFSIZE="65536", NCCL_NTHREADS="64", CUDA_DEVICE_MAX_CONNECTIONS="1"),
    ],
)
def test_flat_ignores_every_knob(s: SimSettings) -> None:
    for c in (1, 8, 256):
        assert relative_speed("flat", s, c) == pytest.approx(1.0, abs=1e-12)


def test_flat_has_kimis_speed() -> None:
    assert expected_output_throughput("flat", None, 1) == expected_output_throughput(KIMI, None, 1)


def test_needle_needs_all_three_settings() -> None:
    env = {"NCCL_ALGO": "allreduce:tree", "NCCL_PROTO": "LL128", "NCCL_MAX_NCHANNELS": "16"}
    assert dict(HIDDEN_GAIN_COMBINATION) == {
        "allreduce_algo": "tree",
        "allreduce_proto": "LL128",
        "max_nchannels": "16",
    }
    for c in (1, 8, 256):
        assert relative_speed("needle", settings(**env), c) == pytest.approx(1.08)
    for k in (1, 2):
        for keys in itertools.combinations(env, k):
            partial = settings(**{key: env[key] for key in keys})
            assert relative_speed("needle", partial, 1) == pytest.approx(1.0)
    # neighbours of the combination do nothing either
    near = settings(**{**env, "NCCL_MAX_NCHANNELS": "32"})
    assert relative_speed("needle", near, 1) == pytest.approx(1.0)
    # other knobs do not disturb it
    assert relative_speed("needle", settings("-O0", **env), 1) == pytest.approx(1.08)


def test_hidden_gain_builds_up_to_eight_percent_with_all_three() -> None:
    env = {"NCCL_ALGO": "allreduce:tree", "NCCL_PROTO": "LL128", "NCCL_MAX_NCHANNELS": "16"}
    for c in (1, 8, 256):
        assert relative_speed("hidden-gain", settings(**env), c) == pytest.approx(1.08)
    for key in env:
        assert relative_speed("hidden-gain", settings(**{key: env[key]}), 1) == pytest.approx(1.025)
    for keys in itertools.combinations(env, 2):
        pair = settings(**{key: env[key] for key in keys})
        assert relative_speed("hidden-gain", pair, 1) == pytest.approx(1.025**2)
    near = settings(**{**env, "NCCL_MAX_NCHANNELS": "32"})
    assert relative_speed("hidden-gain", near, 1) == pytest.approx(1.025**2)
    assert relative_speed("hidden-gain", settings(), 1) == pytest.approx(1.0)


def test_interaction_profile_pair_helps_more_together_plus_an_additive_setting() -> None:
    def speed(**env: str) -> float:
        return relative_speed("interaction", parse_settings([], env), 1)

    pair = {"NCCL_PROTO": "LL128", "NCCL_MAX_NCHANNELS": "16"}
    additive = {"NCCL_BUFFSIZE": "16777216"}
    assert speed() == pytest.approx(1.0)
    assert speed(NCCL_PROTO="LL128") == pytest.approx(1.02)
    assert speed(NCCL_MAX_NCHANNELS="16") == pytest.approx(1.02)
    assert speed(**pair) == pytest.approx(1.07)
    assert speed(**additive) == pytest.approx(1.025)
    assert speed(NCCL_PROTO="LL128", **additive) == pytest.approx(1.02 * 1.025)
    assert speed(**pair, **additive) == pytest.approx(1.07 * 1.025)
    assert speed(**pair, NCCL_ALGO="allreduce:tree") == pytest.approx(1.07)  # others: nothing


def test_reasoning_profile() -> None:
    prof = PROFILES["reasoning"]
    assert prof.reasoning_share == 0.5
    assert prof.default_tp == 1
    one = expected_output_throughput("reasoning", None, 1)
    two = expected_output_throughput("reasoning", settings("-tp", "2"), 1)
    assert one == pytest.approx(150.0)
    assert one < two < 2 * one  # TP helps, all-reduce eats part of it
    # at TP=1 there is no all-reduce, so NCCL settings cannot matter
    assert relative_speed("reasoning", settings(NCCL_PROTO="Simple"), 1) == 1.0


def test_kv_capacity_fits_the_context() -> None:
    for name, prof in PROFILES.items():
        assert kv_capacity_tokens(prof, SimSettings(profile=name)) >= prof.max_model_len
    assert 200_000 < kv_capacity_tokens(PROFILES[KIMI], SimSettings()) < 350_000


def test_every_profile_has_noise_and_sane_tables() -> None:
    for prof in PROFILES.values():
        assert 0 < prof.launch_sd <= 0.005
        assert 0 < prof.step_noise_sd <= 0.02
        for table in prof.tables:
            conc = [c for c, _ in table.points]
            assert conc == sorted(conc) and conc[0] == 1


def test_the_slo_trade_speeds_up_high_concurrency_only() -> None:
    """slo-trade: the batched-token setting buys more throughput at 64 streams than the
    max-num-seqs one, neither changes one stream (docs/simulator.md)."""
    batched = settings("--max-num-batched-tokens", "16384")
    seqs = settings("--max-num-seqs", "256")
    assert step_time("slo-trade", batched, 1) == step_time("slo-trade", settings(), 1)
    assert step_time("slo-trade", seqs, 1) == step_time("slo-trade", settings(), 1)
    base = step_time("slo-trade", settings(), 64)
    assert base / step_time("slo-trade", batched, 64) == pytest.approx(1.55)
    assert base / step_time("slo-trade", seqs, 64) == pytest.approx(1.06)
    # Other profiles ignore both settings.
    assert step_time(KIMI, batched, 64) == step_time(KIMI, settings(), 64)
