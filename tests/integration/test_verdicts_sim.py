"""A clear gain at 3% between-launch noise is never answered "keep the defaults" (issue 37).

`tuner sim`'s ``hidden-gain`` profile: NCCL_ALGO=allreduce:tree, NCCL_PROTO=LL128 and
NCCL_MAX_NCHANNELS=16 are each 2.5% faster and all three together 8% faster. At
``--launch-noise 0.03`` (each launch seeded apart, as tests/integration/test_false_gains.py
does) a study of ``--trials 30`` must end ``confirmed`` or ``not_settled``, never
``no_gain``: the launches cannot support "nothing here helps". Where it ends not settled,
the answer names how many more launches a side would settle it; the same study resumed
with the ``--trials`` that holds them finishes its final comparison first and ends
``confirmed``.

Marked ``alone``: the rounds are timed in wall clock, and a neighbour's load adds noise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from tests.integration.test_false_gains import LAUNCHES_FILE, SEEDED_SIM
from tuner import stats
from tuner.space.spec import Space, load_space
from tuner.storage import Store
from tuner.study.facts.analysis import analyze
from tuner.study.run.sweep import run_sweep
from tuner.study.state import StudyState, TrialView, full_launched
from tuner.trial.runner import RunnerOptions

pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(900)]

SEED = 3
TRIALS = 30


def gain_space() -> dict[str, Any]:
    command = [
        "{python}", "-c", SEEDED_SIM, f"{{study_dir}}/{LAUNCHES_FILE}", str(SEED),
        "--profile", "hidden-gain", "--launch-noise", "0.03",
        "--load-seconds", "0.02", "--time-scale", "0.5",
        "--host", "127.0.0.1", "--port", "{port}",
    ]  # fmt: skip
    return {
        "study": "clear-gain",
        "server": {"command": command, "port": "auto", "startup_timeout_s": 30},
        "params": {
            "NCCL_ALGO": {
                "env": "NCCL_ALGO",
                "choices": ["default", "allreduce:ring", "allreduce:tree"],
            },
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL128"]},
            "NCCL_MAX_NCHANNELS": {"env": "NCCL_MAX_NCHANNELS", "choices": ["default", 4, 16]},
        },
        "benchmark": {
            "api": "completions",
            "prompt_tokens": 16,
            "max_tokens": 16,
            "concurrency": [1],
            "requests": 1,
            "warmup": 0,
            "rounds": 3,
        },
        "objective": {"metric": "output_throughput", "concurrency": 1},
        "stop": {"patience": 30, "min_gain": 0.01, "confidence": 0.95},
    }


def answer(space: Space, storage: str) -> tuple[stats.Recommendation, int]:
    """The answer as `tuner best` reads it, and the study's full launches so far."""
    study = optuna.load_study(study_name=space.study_name, storage=storage)
    state = StudyState.from_attrs(study.user_attrs)
    facts = analyze(Store(storage), space).with_looks(state.final_looks)
    rec = facts.recommendation()
    assert rec is not None
    trials = [TrialView.of(t.number, t.state.name, t.user_attrs) for t in study.get_trials()]
    return rec, full_launched(trials)


def sweep(space: Space, storage: str, trials: int, runs: Path) -> None:
    run_sweep(
        space,
        storage=storage,
        n_trials=trials,
        seed=SEED,
        preflight=False,  # `python -c` answers --help with python's own flags
        runner_options=RunnerOptions(runs_dir=runs),
    )


def test_a_clear_gain_at_3pct_noise_is_confirmed_or_not_settled_never_no_gain(
    tmp_path: Path,
) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(gain_space(), sort_keys=False))
    space = load_space(path)
    storage = f"sqlite:///{tmp_path / 'experiments.db'}"
    runs = tmp_path / "runs"
    sweep(space, storage, TRIALS, runs)
    rec, launched = answer(space, storage)
    assert rec.outcome != stats.NO_GAIN, rec.reason
    assert launched <= TRIALS
    if rec.outcome == stats.CONFIRMED:
        return
    unsettled = rec.unsettled
    assert unsettled is not None and unsettled.more_each >= 1, rec.reason
    assert "not settled" in rec.reason and "more launches a side" in rec.reason
    # Resumed with the --trials the answer names: the comparison goes on first, and settles.
    sweep(space, storage, launched + 2 * unsettled.more_each, runs)
    resumed, _ = answer(space, storage)
    assert resumed.outcome == stats.CONFIRMED, resumed.reason
