"""benchmarks/ttft_truth.py's own arithmetic, without vLLM or a server: what a client
added to the truth is read run by run and never the wrong way round."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "ttft_truth.py"


@pytest.fixture(scope="module")
def truth() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("ttft_truth_unit", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_what_a_client_added_is_its_runs_median_of_client_less_truth(
    truth: types.ModuleType,
) -> None:
    # The truth moves between runs (12.0, 20.0, 12.5): the raw medians would say 14.0
    # against 12.5, the runs say 2 ms added each time.
    assert truth.added_ms([(14.0, 12.0), (22.0, 20.0), (14.5, 12.5)]) == pytest.approx(2.0)
    assert truth.added_ms([(12.0, 12.5)]) == pytest.approx(-0.5)


def test_the_table_prints_each_run_and_what_each_client_added(
    truth: types.ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {"first_ms": 12.0, "interval_ms": 3.4}
    for label, *_ in truth.FIGURES:
        data[label] = {"vllm": [(14.0, 12.0), (15.0, 12.5)], "tuner": [(12.2, 12.0), (12.6, 12.5)]}
    truth.print_table(data)
    out = capsys.readouterr().out
    assert "14.00 / 12.00, 15.00 / 12.50" in out
    assert "| +2.25 | +0.15 |" in out
