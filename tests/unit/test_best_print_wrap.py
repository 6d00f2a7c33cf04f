"""`tuner best`'s lines at 80 columns: each wrapped at the console's width alike, the
Ceiling's and the Hosts' too (none left for the terminal to cut mid-word)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, hand_study
from tuner.probe.ceiling import CeilingInputs, ceiling
from tuner.views.best import best_report
from tuner.views.best_print import print_best


def test_every_line_of_the_answer_fits_80_columns(tmp_path: Path) -> None:
    report = best_report(hand_study(tmp_path, [BASELINE, BASELINE_AGAIN]), "hand")
    c = ceiling(
        CeilingInputs(
            weight_bytes_per_gpu=6e9,
            memory_bandwidth_gbps=1500.0,
            allreduces_per_token=100,
            best_us=60.0,
            own_us=62.0,
            measured_tokens_per_s=80.0,
            other_settings=False,
        )
    )
    assert len(f"Ceiling: {c.sentence}.") > 80
    console = Console(record=True, width=80)
    print_best(dataclasses.replace(report, ceiling=c), "table", console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    ceiling_lines = text[text.index("Ceiling: ") :].splitlines()
    assert len(ceiling_lines) > 1 and " ".join(ceiling_lines).startswith(
        f"Ceiling: {c.sentence[:60]}"
    )
