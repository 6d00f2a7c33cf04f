"""A port taken between the runner's pick and the server's bind (the likely cause of stop 34's
CI failure, two sweeps on one host): the runner launches the trial again on another port,
keeps the failed launch's row, and gives up after PORT_ATTEMPTS; a fixed port is never
retried.

The server is a script that fails the way uvicorn does when its port is taken (the real vLLM
log of tests/unit/fixtures/vllm_logs/gpu_0.6_pp_port_in_use_issue8791.txt) for its first
``fails`` launches, then runs `tuner sim`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.sweep_helpers import FAST_SIM, write_space
from tuner.errors import LaunchError, PortTakenError
from tuner.launcher import free_port
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.telemetry.gpu import NullGpuBackend
from tuner.trial.runner import PORT_ATTEMPTS, RunnerOptions, TrialRunner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FIXTURES = Path(__file__).parents[1] / "unit" / "fixtures" / "vllm_logs"
PORT_LOG = FIXTURES / "gpu_0.6_pp_port_in_use_issue8791.txt"

# $1: the launches left to fail (a counter file); the rest: the sim's command line.
FAIL_THEN_SIM = """
counter=$1; shift
left=$(cat "$counter")
if [ "$left" -gt 0 ]; then
  echo $((left - 1)) > "$counter"
  grep -v '^# ' "$LOG"
  exit 1
fi
exec "$@"
"""


def _runner(tmp_path: Path, fails: int, **server: Any) -> tuple[TrialRunner, Store]:
    counter = tmp_path / "fails-left"
    counter.write_text(str(fails))
    command = ["env", f"LOG={PORT_LOG}", "sh", "-c", FAIL_THEN_SIM]
    server = {"command": [*command, "server", str(counter), *FAST_SIM], **server}
    space = load_space(write_space(tmp_path, server=server))
    store = Store(f"sqlite:///{tmp_path}/ports.db")
    store.ensure_study(space.study_name, space_path=None, space_text=None)
    options = RunnerOptions(runs_dir=tmp_path / "runs")
    return TrialRunner(space, store, gpu=NullGpuBackend("no GPU"), options=options), store


def test_a_taken_port_is_launched_again_on_another(tmp_path: Path) -> None:
    runner, store = _runner(tmp_path, fails=1)
    settings = settings_from_params(runner.spec, {})
    outcome = runner.run(trial_id=None, trial_number=0, role="baseline", settings=settings)
    assert outcome.round_values
    failed, done = store.launches(runner.space.study_name)
    assert failed.status == "failed" and "address already in use" in (failed.reason or "")
    assert done.status == "complete" and done.id == outcome.launch_id
    assert failed.trial_number == done.trial_number == 0
    assert failed.port != done.port
    # `tuner trials` and `tuner show` read the trial's last launch: the one that measured
    # (`tuner show` names the earlier ones).
    assert store.launch_for_trial(runner.space.study_name, 0).id == done.id
    launches = store.launches_for_trial(runner.space.study_name, 0)
    assert [r.id for r in launches] == [failed.id, done.id]


def test_a_port_taken_every_time_gives_up_after_the_attempts(tmp_path: Path) -> None:
    runner, store = _runner(tmp_path, fails=PORT_ATTEMPTS + 1)
    settings = settings_from_params(runner.spec, {})
    with pytest.raises(PortTakenError):
        runner.run(trial_id=None, trial_number=0, role="baseline", settings=settings)
    rows = store.launches(runner.space.study_name)
    assert [r.status for r in rows] == ["failed"] * PORT_ATTEMPTS


def test_a_fixed_port_is_not_retried(tmp_path: Path) -> None:
    # The user chose the port: another launch on it would meet the same holder.
    runner, store = _runner(tmp_path, fails=1, port=free_port("127.0.0.1"))
    settings = settings_from_params(runner.spec, {})
    with pytest.raises(LaunchError, match="address already in use"):
        runner.run(trial_id=None, trial_number=0, role="baseline", settings=settings)
    assert len(store.launches(runner.space.study_name)) == 1
