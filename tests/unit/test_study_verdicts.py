"""Each trial's verdict in words, for optuna-dashboard: against the defaults, or why not."""

from __future__ import annotations

from pathlib import Path

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, FAILED_REASON, hand_study
from tuner.study import analysis, attrs, verdicts
from tuner.views.study_access import open_study

FAST = {"NCCL_PROTO": "LL", "compilation": 3}
GAIN = [BASELINE, BASELINE_AGAIN, (FAST, [88.0, 88.3, 88.1]), (FAST, [87.9, 88.2, 88.4])]


def test_final_verdicts_name_the_answer_and_compare_with_the_defaults(tmp_path: Path) -> None:
    slow = {"compilation": 0}
    opened = open_study(
        hand_study(tmp_path, [*GAIN, (slow, [70.0, 70.2, 69.9]), (FAST, None)]), "hand"
    )
    result = analysis.analyze(opened.store, opened.space)
    found = verdicts.final_verdicts(result, opened.optuna_study.get_trials())
    assert found[0] == found[1] == "the defaults (baseline)"
    assert found[2].startswith("best and recommended: vs the defaults: +8.")
    assert found[2].endswith(": better")
    assert found[4].startswith("vs the defaults: -13.8%") and found[4].endswith(": worse")
    assert found[5] == f"failed: {FAILED_REASON}"


def test_the_study_carries_the_answer_and_every_verdict(tmp_path: Path) -> None:
    opened = open_study(hand_study(tmp_path, GAIN), "hand")
    result = analysis.analyze(opened.store, opened.space)
    verdicts.record_final(opened.optuna_study, result)
    stored = opened.optuna_study.user_attrs
    assert set(stored[attrs.VERDICTS]) == {"0", "1", "2", "3"}
    assert stored[attrs.VERDICT] == result.recommendation().reason  # type: ignore[union-attr]
    assert verdicts.measured_verdict(result, "no-such-config") is None
