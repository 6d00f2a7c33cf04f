"""A one-objective study's `tuner best` is untouched by the several-objective code."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, final_block, hand_study
from tuner.stats import Candidate, recommend
from tuner.study.facts import analysis
from tuner.views.best import best_report
from tuner.views.best_print import print_best
from tuner.views.study_access import open_study

FAST = {"compilation": 3}
GAIN = [
    BASELINE,
    BASELINE_AGAIN,
    (FAST, [88.0, 88.3, 88.1]),
    (FAST, [87.9, 88.2, 88.4]),
    *final_block(FAST, [88.1, 88.2, 88.0]),
]


def test_one_objective_has_no_front_and_recommends_as_before(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, GAIN)
    opened = open_study(storage, "hand")
    result = analysis.analyze(opened.store, opened.space)
    assert result.objective_estimates is None  # no per-objective estimates computed
    report = best_report(storage, "hand")
    assert report.pareto is None
    # The recommendation is stats.recommend's, on the one objective.
    baseline = result.baseline
    assert baseline is not None
    expected = recommend(
        [
            Candidate(c.config_hash, c.estimate, c.n_changed, result.confirmed(c))
            for c in result.configs.values()
        ],
        direction="maximize",
        min_gain=opened.space.spec.stop.min_gain,
        confidence=opened.space.spec.stop.confidence,
        baseline_key=baseline.config_hash,
    )
    assert report.recommended is not None and report.recommended.config == expected.recommended

    console = Console(record=True, width=200)
    print_best(report, "json", console)
    answer = json.loads(console.export_text())
    assert "pareto" not in answer
    assert answer["objectives"] == [
        {"metric": "output_throughput", "concurrency": 1, "direction": "maximize"}
    ]
    table = Console(record=True, width=200)
    print_best(report, "table", table)
    text = table.export_text()
    assert "output_throughput at concurrency 1 (maximize)" in text
    assert "front of trusted configurations" not in text
