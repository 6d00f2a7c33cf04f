"""The simulator's screening launches: ``--load-format dummy`` (no weight phase, a small noisy
bias) and ``--speculative-config`` (helps on real weights, hurts on dummy ones), without a
server process."""

from __future__ import annotations

import asyncio
import io
import math
import statistics

import pytest

from tuner.sim import PROFILES
from tuner.sim.cli import main
from tuner.sim.log import Log
from tuner.sim.model import (
    expected_output_throughput,
    relative_speed,
    speculative_factor,
    speculative_tokens_per_step,
)
from tuner.sim.noise import dummy_throughput_factor
from tuner.sim.phases import dummy_share, startup_plan
from tuner.sim.profiles import (
    REF_COMPILE_S,
    REF_ENGINE_S,
    REF_GRAPHS_S,
    REF_LAYERS,
    SpeculativeFigures,
)
from tuner.sim.settings import ArgError, SimSettings, parse_settings
from tuner.sim.startup import SimServer

KIMI = "kimi-k2.5-int4-tp8"
MINIMAX = "minimax-m2.5-fp8-tp4"
SPEC = ("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}')


def parse(*argv: str) -> SimSettings:
    return parse_settings(list(argv), {})


# -- the load: calibrated phases, and what dummy skips ---------------------------------------
def test_the_startup_figures_come_from_the_seeds_and_vllms_timings() -> None:
    kimi = PROFILES[KIMI].startup
    assert kimi.weights_s == 36 * 60  # calibration.yaml: load_minutes 36
    assert PROFILES[MINIMAX].startup.weights_s == 75  # load_seconds 75
    assert kimi.compile_s == pytest.approx(REF_COMPILE_S * 61 / REF_LAYERS)
    assert kimi.graphs_s == pytest.approx(REF_GRAPHS_S * 61 / REF_LAYERS)
    assert kimi.engine_s == pytest.approx(REF_ENGINE_S)
    assert kimi.full_s == pytest.approx(2230.7, abs=0.1)
    # A dummy launch of Kimi costs about 71 s of a 37-minute launch: 3.2%.
    assert kimi.dummy_s == pytest.approx(70.7, abs=0.1)
    assert dummy_share(PROFILES[KIMI]) == pytest.approx(0.0317, abs=0.0005)
    # MiniMax reads its 230 GB in 75 s: the rest of its startup is about half of it.
    assert dummy_share(PROFILES[MINIMAX]) == pytest.approx(0.486, abs=0.002)


@pytest.mark.parametrize("profile", [KIMI, MINIMAX, "reasoning"])
def test_a_full_launch_takes_load_seconds_and_a_dummy_one_its_share(profile: str) -> None:
    prof = PROFILES[profile]
    full = startup_plan(prof, parse("--load-seconds", "2", "--profile", profile))
    dummy = startup_plan(
        prof, parse("--load-seconds", "2", "--profile", profile, "--load-format", "dummy")
    )
    assert full.total_s == pytest.approx(2.0)
    assert full.weights_s == pytest.approx(2.0 * prof.startup.weights_s / prof.startup.full_s)
    assert (dummy.weights_s, dummy.dummy, full.dummy) == (0.0, True, False)
    assert dummy.total_s == pytest.approx(2.0 * dummy_share(prof))
    # every other phase is the same at both fidelities
    for phase in ("model_init_s", "compile_s", "graphs_s", "engine_s"):
        assert getattr(dummy, phase) == getattr(full, phase) > 0


def test_eager_and_o0_drop_the_compile_and_graph_phases() -> None:
    o0 = startup_plan(PROFILES[KIMI], parse("-O0"))
    eager = startup_plan(PROFILES[KIMI], parse("--enforce-eager", "--load-format", "dummy"))
    eager_o3 = startup_plan(PROFILES[KIMI], parse("--enforce-eager", "-O3"))
    o1 = startup_plan(PROFILES[KIMI], parse("-O1"))
    assert (o0.compile_s, o0.graphs_s, o0.compile_logged) == (0.0, 0.0, False)
    assert (eager.compile_s, eager.graphs_s, eager.weights_s) == (0.0, 0.0, 0.0)
    assert eager_o3.compile_s > 0 and eager_o3.graphs_s == 0 and eager_o3.compile_logged
    assert o1.compile_s > 0 and o1.graphs_s > 0 and not o1.compile_logged  # vLLM's own lines: -O3


# -- the log lines of each phase -------------------------------------------------------------
def _startup_log(*argv: str) -> str:
    """The load and warmup phases' log of one launch, at a tiny --load-seconds."""
    settings = parse("--port", "1", "--seed", "1", "--load-seconds", "0.05", *argv)
    server = SimServer(settings, [], {})
    buf = io.StringIO()
    server.log = Log(out=buf, err=buf)

    async def phases() -> tuple[int | None, int | None]:
        return await server._load(None), await server._warmup(None)

    assert asyncio.run(phases()) == (None, None)
    return buf.getvalue()


def test_a_full_load_logs_shards_then_each_phase_as_vllm_does() -> None:
    log = _startup_log()
    order = [
        "Loading safetensors checkpoint shards:   0% Completed | 0/64 [",
        "Loading safetensors checkpoint shards: 100% Completed | 64/64 [",
        "[default_loader.py:267] Loading weights took ",
        "[gpu_model_runner.py:2370] Model loading took 63.7500 GiB and ",
        "Dynamo bytecode transform time: ",
        "Directly load the compiled graph(s) for dynamic shape from the cache, took ",
        "[monitor.py:34] torch.compile takes ",
        "Available KV cache memory: ",
        "GPU KV cache size: ",
        "Graph capturing finished in ",
        "init engine (profile, create kv cache, warmup model) took ",
    ]
    assert [log.index(text) for text in order] == sorted(log.index(text) for text in order)
    assert "dummy weights" not in log


def test_a_dummy_load_logs_the_dummy_loader_and_no_shards() -> None:
    log = _startup_log("--load-format", "dummy")
    assert "Skipping validation when loading dummy weights for sim/kimi-k2.5-int4-tp8." in log
    assert "Model loading took 63.7500 GiB and " in log
    assert "Loading safetensors checkpoint shards" not in log
    assert "Loading weights took" not in log
    for text in ("torch.compile takes ", "Graph capturing finished in ", "init engine ("):
        assert text in log  # the warmup is the same as a full launch's


@pytest.mark.parametrize("flag", [("-O0",), ("--enforce-eager",), ("--compilation-config", "0")])
def test_without_compilation_there_are_no_compile_or_graph_lines(flag: tuple[str, ...]) -> None:
    log = _startup_log(*flag)
    assert "torch.compile" not in log and "Dynamo" not in log
    assert "Graph capturing" not in log
    assert "Loading weights took" in log and "init engine (" in log


# -- the dummy weights' bias and noise -------------------------------------------------------
def test_the_dummy_factor_is_drawn_per_launch_and_reproducible_by_seed() -> None:
    assert dummy_throughput_factor(7, 0.005, 0.005) == dummy_throughput_factor(7, 0.005, 0.005)
    assert dummy_throughput_factor(7, 0.005, 0.005) != dummy_throughput_factor(8, 0.005, 0.005)
    assert dummy_throughput_factor(7, 0.01, 0.0) == 1.01  # no noise: the bias alone
    draws = [dummy_throughput_factor(seed, 0.005, 0.02) for seed in range(4000)]
    assert statistics.fmean(draws) == pytest.approx(1.005, abs=0.001)
    assert statistics.stdev(draws) / statistics.fmean(draws) == pytest.approx(0.02, rel=0.06)


def test_a_dummy_launch_runs_at_the_factor_and_keeps_the_seeds_other_noise() -> None:
    def server(*argv: str) -> SimServer:
        return SimServer(parse("--port", "1", "--seed", "3", *argv), argv, {})

    full, dummy = server(), server("--load-format", "dummy")
    assert full.dummy_factor == 1.0
    assert dummy.dummy_factor == dummy_throughput_factor(3, 0.005, 0.005)
    assert dummy.speed_factor == full.speed_factor  # the launch's own noise is untouched
    assert dummy.engine_speed_factor == pytest.approx(full.speed_factor / dummy.dummy_factor)
    asked = server("--load-format", "dummy", "--dummy-bias", "-0.02", "--dummy-noise", "0")
    assert asked.dummy_factor == 0.98
    assert server("--dummy-bias", "0.3").dummy_factor == 1.0  # real weights: no bias
    cfg = dummy.config_json(1)
    assert cfg["load_format"] == "dummy"
    assert cfg["dummy_throughput_factor"] == dummy.dummy_factor
    assert cfg["startup_s"]["weights"] == 0.0


@pytest.mark.parametrize(
    "argv",
    [
        ["--dummy-bias", "2"],
        ["--dummy-bias", "nan"],
        ["--dummy-noise", "-0.01"],
        ["--dummy-noise", "5"],
        ["--load-format", "pt"],
    ],
)
def test_bad_dummy_flags_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(ArgError):
        parse(*argv)


# -- speculative decoding: real weights accept drafts, dummy ones never do -------------------
def test_speculative_flags_parse_both_forms() -> None:
    spec = parse(*SPEC)
    assert (spec.speculative_method, spec.num_speculative_tokens) == ("ngram", 3)
    legacy = parse("--num-speculative-tokens", "3")
    assert (legacy.speculative_method, legacy.num_speculative_tokens) == ("ngram", 3)
    both = parse(*SPEC, "--num-speculative-tokens", "3")
    assert both.num_speculative_tokens == 3
    assert parse().num_speculative_tokens == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--speculative-config", "{"],
        ["--speculative-config", "[3]"],
        ["--speculative-config", '{"method": "ngram"}'],
        ["--speculative-config", '{"num_speculative_tokens": "3"}'],
        ["--speculative-config", '{"num_speculative_tokens": 0}'],
        ["--num-speculative-tokens", "2", *SPEC],
    ],
)
def test_bad_speculative_configs_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(ArgError):
        parse(*argv)


def test_speculative_helps_on_real_weights_by_the_models_figures() -> None:
    fig = SpeculativeFigures()
    tokens = speculative_tokens_per_step(fig.acceptance, 3)
    assert tokens == pytest.approx(1 + 0.25 + 0.25**2 + 0.25**3)
    ws = 1 / (1 + 1 / 32)  # the model's small-batch weight at batch 1
    cost = 1 + 3 * (ws * fig.cost_small + (1 - ws) * fig.cost_large)
    real = parse(*SPEC)
    assert relative_speed(KIMI, real, 1) == pytest.approx(tokens / cost, rel=1e-3)
    gains = [relative_speed(KIMI, real, c) for c in (1, 8, 64, 256)]
    assert gains == sorted(gains, reverse=True)  # shrinks as the batch grows
    assert 1.15 < gains[0] < 1.22 and 1.0 < gains[-1] < 1.06


def test_speculative_hurts_on_dummy_weights() -> None:
    dummy = parse(*SPEC, "--load-format", "dummy")
    ws = 1 / (1 + 1 / 32)
    fig = SpeculativeFigures()
    cost = 1 + 3 * (ws * fig.cost_small + (1 - ws) * fig.cost_large)
    assert speculative_factor(PROFILES[KIMI], dummy, 1) == pytest.approx(1 / cost)
    # Against a dummy launch without drafts: on dummy weights Kimi's router reads fewer
    # experts than the trained one (tuner/sim/routing.py), so the full defaults are slower.
    plain = parse("--load-format", "dummy")
    losses = [
        expected_output_throughput(KIMI, dummy, c) / expected_output_throughput(KIMI, plain, c)
        for c in (1, 8, 64, 256)
    ]
    assert all(x < 1 for x in losses)
    assert losses[0] == pytest.approx(0.896, abs=0.005)  # about -10% at one stream
    assert relative_speed(KIMI, parse(*SPEC, "--load-format", "dummy"), 1) < relative_speed(
        KIMI, parse(*SPEC), 1
    )


def test_flat_ignores_speculative_decoding() -> None:
    for load_format in ("auto", "dummy"):
        s = parse("--profile", "flat", *SPEC, "--load-format", load_format)
        assert relative_speed("flat", s, 1) == 1.0


@pytest.mark.parametrize(
    "argv",
    [
        ("-O0",),
        ("--enforce-eager",),
        ("--max-num-seqs", "4"),
        ("--max-num-batched-tokens", "16384"),
        ("-tp", "2", "--disable-custom-all-reduce"),  # where vLLM uses it: 2 GPUs
    ],
)
def test_other_settings_act_the_same_at_both_fidelities(argv: tuple[str, ...]) -> None:
    """Each against the defaults of its own fidelity; the dummy launches with vLLM's routing
    simulation, so that Kimi's experts are read as the trained router reads them
    (tests/unit/test_sim_moe_routing.py: without it they are not)."""
    profile = "slo-trade" if argv[0] == "--max-num-batched-tokens" else KIMI  # where it acts
    routed = {"VLLM_MOE_ROUTING_SIMULATION_STRATEGY": "uniform_random"}

    def effect(c: int, *extra: str, env: dict[str, str] | None = None) -> float:
        def speed(*more: str) -> float:
            settings = parse_settings(["--profile", profile, *more, *extra], env or {})
            return expected_output_throughput(profile, settings, c)

        return speed(*argv) / speed()

    moved = False
    for c in (1, 8, 64, 256):
        full = effect(c)
        dummy = effect(c, "--load-format", "dummy", env=routed)
        assert math.isclose(full, dummy, rel_tol=1e-12)
        moved = moved or not math.isclose(full, 1.0)
    assert moved


def test_help_lists_the_screening_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in (
        "--load-format",
        "{auto,dummy}",
        "--speculative-config",
        "--num-speculative-tokens",
        "--dummy-bias",
        "--dummy-noise",
    ):
        assert flag in out
