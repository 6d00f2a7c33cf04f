"""The simulator's MoE routing (tuner/sim/routing.py): on dummy weights a MoE profile's router
sends every token to the same experts, so above one stream its step spends less in expert
compute and a larger share in all-reduce, and NCCL settings move it more than on a full
launch; VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random makes the dummy step the
trained model's again."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from tuner.sim.log import Log
from tuner.sim.model import expected_output_throughput, step_parts
from tuner.sim.profiles import PROFILES
from tuner.sim.settings import ArgError, SimSettings, parse_settings
from tuner.sim.startup import SimServer

KIMI = "kimi-k2.5-int4-tp8"
VAR = "VLLM_MOE_ROUTING_SIMULATION_STRATEGY"
UNIFORM = {VAR: "uniform_random"}


def settings(*argv: str, env: dict[str, str] | None = None, profile: str = KIMI) -> SimSettings:
    return parse_settings(["--profile", profile, *argv], env or {})


def share(parts: tuple[float, float]) -> float:
    compute, comm = parts
    return comm / (compute + comm)


@pytest.mark.parametrize("profile", [KIMI, "minimax-m2.5-fp8-tp4"])
def test_dummy_weights_read_fewer_experts_unless_routing_is_simulated(profile: str) -> None:
    prof = PROFILES[profile]
    for batch in (1, 8, 64, 256):
        full = step_parts(prof, settings(profile=profile), batch)
        dummy = step_parts(prof, settings("--load-format", "dummy", profile=profile), batch)
        routed = step_parts(
            prof, settings("--load-format", "dummy", env=UNIFORM, profile=profile), batch
        )
        assert routed == full  # the trained router's spread, on average
        assert dummy[1] == full[1]  # all-reduce sizes do not depend on the weights
        if batch == 1:
            assert dummy == full  # one token: both routers read k experts
        else:
            assert dummy[0] < 0.8 * full[0] and share(dummy) > share(full) + 0.05
    # At 64 streams on Kimi the collapsed router leaves about a quarter of the compute.
    compute = step_parts(PROFILES[KIMI], settings("--load-format", "dummy"), 64)[0]
    assert compute / step_parts(PROFILES[KIMI], settings(), 64)[0] == pytest.approx(0.26, abs=0.02)


def test_a_full_launch_is_the_same_with_or_without_the_variable() -> None:
    for batch in (1, 8, 256):
        assert step_parts(PROFILES[KIMI], settings(env=UNIFORM), batch) == step_parts(
            PROFILES[KIMI], settings(), batch
        )


def test_a_dense_profile_has_nothing_to_route() -> None:
    prof = PROFILES["reasoning"]
    assert prof.routing is None
    for batch in (1, 64):
        dummy = step_parts(prof, settings("--load-format", "dummy", profile="reasoning"), batch)
        assert dummy == step_parts(prof, settings(profile="reasoning"), batch)


def effect(c: int, *argv: str, env: dict[str, str] | None = None, base: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """An NCCL setting's effect on throughput at ``c`` streams, against the same fidelity's
    defaults."""
    env = env or {}

    def speed(extra: dict[str, str]) -> float:
        return expected_output_throughput(KIMI, settings(*base, env={**env, **extra}), c)

    return speed(dict(kv.split("=", 1) for kv in argv)) / speed({}) - 1.0


def test_nccl_settings_weigh_more_on_collapsed_dummy_launches_than_on_full_ones() -> None:
    dummy = ("--load-format", "dummy")
    for c in (8, 64):
        full = effect(c, "NCCL_PROTO=Simple")
        collapsed = effect(c, "NCCL_PROTO=Simple", base=dummy)
        routed = effect(c, "NCCL_PROTO=Simple", base=dummy, env=UNIFORM)
        assert full < 0 and collapsed < full * 1.15  # a loss, larger on random weights
        assert routed == pytest.approx(full, rel=1e-9)
    assert effect(1, "NCCL_PROTO=Simple", base=dummy) == pytest.approx(
        effect(1, "NCCL_PROTO=Simple"), rel=1e-12
    )


def test_the_variable_is_read_as_vllm_reads_it() -> None:
    assert settings(env={VAR: "Uniform_Random"}).moe_routing == "uniform_random"
    assert settings(env={VAR: "normal_routing"}).moe_routing == "normal_routing"
    assert settings().moe_routing == ""
    with pytest.raises(ArgError, match="Unknown routing strategy: balanced. Available"):
        settings(env={VAR: "balanced"})


def test_the_log_says_so_as_vllm_does(tmp_path: Path) -> None:
    counter = tmp_path / "launches"
    counter.write_text("not a count")  # the start stops there, after the startup warnings

    def log(env: dict[str, str], profile: str = KIMI) -> str:
        argv = ["--profile", profile, "--port", "0", "--launch-index-file", str(counter)]
        server = SimServer(parse_settings(argv, env), [], env)
        buf = io.StringIO()
        server.log = Log(out=buf, err=buf)
        assert asyncio.run(server._run()) == 1
        return buf.getvalue()

    warning = "Simulating MoE routing using a uniform_random strategy."
    assert warning in log(UNIFORM)
    assert warning not in log({})
    assert warning not in log(UNIFORM, profile="reasoning")  # a dense model routes nothing
