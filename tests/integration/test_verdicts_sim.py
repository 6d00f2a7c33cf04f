"""A clear gain at 3% between-launch noise is never answered "keep the defaults" (issue 37).

`tuner sim`'s ``clear-gain`` profile: NCCL_PROTO=LL makes decode 9% faster. At
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
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep
from tuner.study.state import StudyState, TrialView, full_launched

pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(900)]

SEED = 3
TRIALS = 30


def gain_space(seed: int = SEED) -> dict[str, Any]:
    command = [
        "{python}", "-c", SEEDED_SIM, f"{{study_dir}}/{LAUNCHES_FILE}", str(seed),
        "--profile", "clear-gain", "--launch-noise", "0.03",
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
    facts = analyze(Store(storage), space).with_looks(state.final.looks)
    rec = facts.recommendation()
    assert rec is not None
    trials = [TrialView.of(t.number, t.state.name, t.user_attrs) for t in study.get_trials()]
    return rec, full_launched(trials)


def sweep(space: Space, storage: str, trials: int, runs: Path, seed: int = SEED) -> None:
    run_sweep(space, RunRequest(storage, trials, seed=seed, preflight=False, runs_dir=runs))


def first_then_resumed(
    tmp_path: Path, trials: int, seed: int = SEED
) -> tuple[stats.Recommendation, bool]:
    """A study of ``trials`` launches; when it is not settled, the same study resumed with
    the ``--trials`` its answer names. The last answer, and whether it was resumed."""
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(gain_space(seed), sort_keys=False))
    space = load_space(path)
    storage = f"sqlite:///{tmp_path / 'experiments.db'}"
    runs = tmp_path / "runs"
    sweep(space, storage, trials, runs, seed)
    rec, launched = answer(space, storage)
    assert rec.outcome != stats.NO_GAIN, rec.reason
    assert launched <= trials
    if rec.outcome == stats.CONFIRMED:
        return rec, False
    unsettled = rec.unsettled
    assert unsettled is not None and unsettled.more_each >= 1, rec.reason
    assert "not settled" in rec.reason and "more launch" in rec.reason
    # Resumed with the --trials the answer names: the comparison goes on first, and settles.
    sweep(space, storage, launched + 2 * unsettled.more_each, runs, seed)
    resumed, _ = answer(space, storage)
    return resumed, True


def test_a_clear_gain_at_3pct_noise_is_confirmed_or_not_settled_never_no_gain(
    tmp_path: Path,
) -> None:
    rec, _ = first_then_resumed(tmp_path, TRIALS)
    assert rec.outcome == stats.CONFIRMED, rec.reason


def test_a_budget_with_no_room_for_a_comparison_is_not_settled_then_resumed(
    tmp_path: Path,
) -> None:
    # 6 launches hold the opening and a search, no final comparison (its first look takes
    # 4): the search's choice is not settled, and the answer names the --trials that hold
    # its comparison; resumed with them, it runs first and confirms the gain.
    rec, resumed = first_then_resumed(tmp_path, 6)
    assert resumed, rec.reason
    assert rec.outcome == stats.CONFIRMED, rec.reason
