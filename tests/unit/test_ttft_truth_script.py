"""benchmarks/ttft_truth.py's own arithmetic, without vLLM or a server: what a client
added to the truth is read run by run and never the wrong way round."""

from __future__ import annotations

import types

import pytest

from tests.unit.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def truth() -> types.ModuleType:
    return load_benchmark("ttft_truth.py")


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
