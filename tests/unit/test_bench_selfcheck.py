"""The client's verdict on itself: a late event loop marks the level, with what to do."""

from __future__ import annotations

import os

import pytest

from tuner.bench import LoadSpec
from tuner.bench.level import LiveStats, Window, summarize_lag
from tuner.bench.measure import BUSY_LIMIT, LAG_LIMIT_S, assemble, pinned


def window(lag_s: float, busy: float, preempted: int = 0, t0: float = 100.0) -> Window:
    return Window(
        records=[],
        t0=t0,
        t_end=t0 + 1.0,
        lag_samples=[0.0001] * 98 + [lag_s] * 2,
        busy=busy,
        cpu_s=busy,
        peak_in_flight=4,
        preempted=preempted,
        live=LiveStats(),
    )


LOAD = LoadSpec(model="m", concurrency=8)


def test_a_punctual_client_is_not_flagged() -> None:
    result = assemble(LOAD, 0, [window(0.002, 0.5)])
    assert not result.client_limited and result.warnings == ()
    assert result.client_lag.max_s == pytest.approx(0.002)
    assert result.duration_s == pytest.approx(1.0)


def test_a_saturated_client_says_use_more_workers() -> None:
    result = assemble(LOAD, 0, [window(0.050, BUSY_LIMIT + 0.05)])
    assert result.client_limited
    (warning,) = result.warnings
    assert "--workers 2" in warning and "busy" in warning


def test_a_crowded_out_client_says_free_a_core() -> None:
    result = assemble(LOAD, 0, [window(LAG_LIMIT_S * 5, 0.3, preempted=120)])
    assert result.client_limited
    (warning,) = result.warnings
    assert "120 preemptions" in warning and "free" in warning


def test_workers_are_merged_on_one_axis() -> None:
    result = assemble(LOAD, 0, [window(0.001, 0.2), window(0.001, 0.4, t0=100.2)])
    assert result.workers == 2 and result.peak_in_flight == 8
    assert result.duration_s == pytest.approx(1.2)
    assert result.client_lag.busy == pytest.approx(0.4)
    assert result.client_lag.cpu_s == pytest.approx(0.6)


def test_lag_percentiles() -> None:
    lag = summarize_lag([0.001 * i for i in range(100)], busy=0.1)
    assert lag.max_s == pytest.approx(0.099) and lag.p50_s == pytest.approx(0.050)
    assert lag.samples == 100


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_pinning_is_undone() -> None:
    before = os.sched_getaffinity(0)
    core = min(before)
    with pinned([core]):
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before
