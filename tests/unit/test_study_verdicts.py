"""Each trial's verdict in words, for optuna-dashboard: against the defaults, or why not."""

from __future__ import annotations

from pathlib import Path

import optuna

from tests.unit.views_helpers import (
    BASELINE,
    BASELINE_AGAIN,
    FAILED_REASON,
    final_block,
    hand_study,
)
from tuner.study import attrs
from tuner.study.facts import analysis
from tuner.study.run import verdicts
from tuner.views.study_access import open_study

FAST = {"NCCL_PROTO": "LL", "compilation": 3}
GAIN = [
    BASELINE,
    BASELINE_AGAIN,
    (FAST, [88.0, 88.3, 88.1]),
    (FAST, [87.9, 88.2, 88.4]),
    *final_block(FAST, [88.1, 88.2, 88.0]),
]


def test_final_verdicts_name_the_answer_and_compare_with_the_defaults(tmp_path: Path) -> None:
    slow = {"compilation": 0}
    opened = open_study(
        hand_study(tmp_path, [*GAIN[:4], (slow, [70.0, 70.2, 69.9]), (FAST, None), *GAIN[4:]]),
        "hand",
    )
    result = analysis.analyze(opened.store, opened.space)
    found = verdicts.final_verdicts(result, opened.optuna_study.get_trials())
    assert found[0] == found[1] == "the defaults (baseline)"
    assert found[2].startswith("best and recommended: vs the defaults: +8.")
    assert found[2].endswith(": better")
    assert found[4].startswith("vs the defaults: -13.8%") and found[4].endswith(": worse")
    assert found[5] == f"failed: {FAILED_REASON}"
    assert {found[n] for n in range(6, 10)} == {
        "a launch of the final comparison: the answer rests on these"
    }


def test_the_study_carries_the_answer_and_every_verdict(tmp_path: Path) -> None:
    opened = open_study(hand_study(tmp_path, GAIN), "hand", writable=True)
    result = analysis.analyze(opened.store, opened.space)
    verdicts.record_final(opened.optuna_study, result)
    stored = opened.optuna_study.user_attrs
    assert set(stored[attrs.VERDICTS]) == {str(n) for n in range(8)}  # the final launches too
    assert stored[attrs.VERDICT] == result.recommendation().reason  # type: ignore[union-attr]
    assert verdicts.measured_verdict(result, "no-such-config") is None


def test_a_sweep_leaves_every_verdict_and_names_its_objective(tmp_path: Path) -> None:
    """The end of `tuner run` (the controller's finish) writes what optuna-dashboard shows."""
    from tests.unit.test_sweep_decisions import _sweep

    _, runner, storage = _sweep(
        tmp_path, lambda p: 108.0 if p["NCCL_PROTO"] == "LL" else 100.0, trials=30
    )
    study = optuna.load_study(study_name="d", storage=storage)
    assert study.metric_names == ["output_throughput"]
    trials = study.get_trials()
    assert set(study.user_attrs[attrs.VERDICTS]) == {str(t.number) for t in trials}
    assert "recommended" in " ".join(study.user_attrs[attrs.VERDICTS].values())
    assert study.user_attrs[attrs.VERDICT]
    launched = [t for t in trials if t.user_attrs.get(attrs.LAUNCHED)]
    assert len(launched) == len(runner.launched)
    for trial in trials:  # each says against the defaults, or why it has no measurement
        assert trial.user_attrs.get(attrs.VERDICT), (trial.number, trial.user_attrs)
    better = [t for t in launched if str(t.user_attrs[attrs.VERDICT]).endswith(": better")]
    assert better and all(t.user_attrs[attrs.PARAMS]["NCCL_PROTO"] == "LL" for t in better)
