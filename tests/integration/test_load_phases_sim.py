"""The runner stores each launch's load phases, read from the log of `tuner sim`, which
prints vLLM's V1 lines ("Model loading took ...", "Graph capturing finished in ...")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.sweep_helpers import FAST_SIM, write_space
from tuner.errors import LaunchError
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.telemetry.gpu import NullGpuBackend
from tuner.trial.runner import RunnerOptions, TrialRunner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _runner(tmp_path: Path, command: list[str]) -> tuple[TrialRunner, Store]:
    tmp_path.mkdir(exist_ok=True)
    space = load_space(write_space(tmp_path, server={"command": command}))
    store = Store(f"sqlite:///{tmp_path}/phases.db")
    store.ensure_study(space.study_name, space_path=None, space_text=None)
    options = RunnerOptions(runs_dir=tmp_path / "runs")
    return TrialRunner(space, store, gpu=NullGpuBackend("no GPU"), options=options), store


def test_a_healthy_launch_and_a_failed_one_keep_the_phases_their_logs_said(
    tmp_path: Path,
) -> None:
    runner, store = _runner(tmp_path, FAST_SIM)
    settings = settings_from_params(runner.spec, {})
    outcome = runner.run(
        trial_id=None, trial_number=0, role="baseline", settings=settings, fidelity="full"
    )
    row = store.launches(runner.space.study_name)[0]
    assert row.load_phases is not None
    # The sim prints vLLM's lines of each phase: compile (at -O3, its default) and graphs.
    assert row.load_phases["found"] == ["weights", "compile", "cuda_graphs"]
    assert row.load_phases["healthy_s"] == pytest.approx(outcome.seconds_to_healthy, abs=1e-3)
    assert row.load_phases["rest_s"] >= 0

    failing, store = _runner(tmp_path / "f", [*FAST_SIM, "--fail-after-load"])
    with pytest.raises(LaunchError):
        failing.run(trial_id=None, trial_number=1, role="baseline", settings=settings)
    row = store.launches(failing.space.study_name)[0]
    assert row.status == "failed" and row.seconds_to_healthy is None
    assert row.load_phases is not None and row.load_phases["found"] == ["weights", "compile"]
    assert row.load_phases["healthy_s"] is None and row.load_phases["rest_s"] is None
