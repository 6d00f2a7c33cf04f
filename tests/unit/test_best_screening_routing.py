"""`tuner best`'s screening routing line: how the screening launches routed a MoE's tokens,
read from the env each launch was started with (tuner/views/best_screening.py)."""

from __future__ import annotations

from tuner.storage import LaunchRow
from tuner.views.best_screening import screening_routing

VAR = "VLLM_MOE_ROUTING_SIMULATION_STRATEGY"


def row(fidelity: str, **env: str) -> LaunchRow:
    return LaunchRow(fidelity=fidelity, env=dict(env))


def test_all_screening_launches_simulated_and_full_ones_not_counted() -> None:
    launches = [row("screen", **{VAR: "uniform_random"}) for _ in range(3)] + [row("full")]
    found = screening_routing(launches)
    assert (found.launches, found.strategies) == (3, {"uniform_random": 3})
    assert found.sentence() == (
        f"all 3 screening launches ran with {VAR}=uniform_random: vLLM drew a MoE's experts "
        "as a trained router spreads them, on average"
    )
    assert found.to_json() == {"launches": 3, "strategies": {"uniform_random": 3}}


def test_some_or_none_of_them() -> None:
    some = screening_routing([row("screen", **{VAR: "uniform_random"}), row("screen")])
    assert some.sentence().startswith(f"1 of 2 screening launches ran with {VAR}=uniform_random")
    none = screening_routing([row("screen"), row("full", **{VAR: "uniform_random"})])
    assert none.sentence().startswith(f"no screening launch set {VAR}: a MoE model's random")
    assert screening_routing([row("full")]).launches == 0  # no screening: no line
