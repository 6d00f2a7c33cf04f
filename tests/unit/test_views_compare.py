"""`tuner compare A B` on a hand-made study: the interval, the verdict, the lines printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, hand_study
from tuner.errors import ConfigError, StoreError
from tuner.views.compare import compare_report, print_compare

SLOWER = ({"compilation": 0}, [61.0, 61.2, 60.9])


def test_compare_gives_the_interval_and_verdict(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE, BASELINE_AGAIN, SLOWER])
    slower = compare_report(storage, "hand", 2, 0)
    assert slower.verdict == "worse"
    assert slower.ci_high < 0 < 0.25 + slower.rel_diff
    assert (slower.a.trial, slower.b.trial, slower.b.launches) == (2, 0, 2)
    same = compare_report(storage, "hand", 1, 0)
    assert same.verdict == "within noise"
    assert same.ci_low < 0 < same.ci_high
    assert same.a.mean == same.b.mean  # one configuration: both trials pool its launches


def test_compare_json_and_lines(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE, BASELINE_AGAIN, SLOWER])
    as_json = compare_report(storage, "hand", 2, 0).to_json()
    assert list(as_json) == [
        "a",
        "b",
        "diff",
        "rel_diff",
        "ci_low",
        "ci_high",
        "verdict",
        "confidence",
        "min_gain",
    ]
    assert list(as_json["a"]) == ["trial", "mean", "stderr", "launches"]
    assert as_json["a"]["mean"] == pytest.approx(61.0333, abs=1e-3)
    assert (as_json["a"]["trial"], as_json["a"]["launches"], as_json["b"]["launches"]) == (2, 1, 2)
    console = Console(record=True, width=200)
    print_compare(storage, "hand", 2, 0, console)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("trial 2: 61.03 ± ") and lines[0].endswith("(1 launches)")
    assert lines[2].startswith("difference A - B: -24.")
    assert "(minimum gain 1.0%)" in lines[2]
    assert lines[3] == "verdict: A is worse than B"


def test_a_trial_without_a_measurement_cannot_be_compared(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE, ({"compilation": 0}, None)])
    with pytest.raises(StoreError, match="trial 1 of 'hand' has no completed measurement"):
        compare_report(storage, "hand", 1, 0)


def test_a_trial_number_the_study_does_not_have_is_named_with_the_range(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE, BASELINE_AGAIN, SLOWER])
    with pytest.raises(ConfigError, match=r"'hand' has no trial 7: its trials are 0 to 2"):
        compare_report(storage, "hand", 0, 7)
