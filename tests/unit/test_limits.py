"""The limit grammar: METRIC[.STAT][@LEVEL] OP NUMBER, parsed, never eval'ed."""

from __future__ import annotations

import math

import pytest

from tuner.space.limits import LIMIT_METRICS, MetricLimit, parse_limit


@pytest.mark.parametrize(
    ("text", "metric", "op", "value", "level"),
    [
        ("ttft_ms.p99@64 <= 2000", "ttft_ms_p99", "<=", 2000.0, 64),
        ("ttft_ms_p99<=2000", "ttft_ms_p99", "<=", 2000.0, None),
        ("error_rate@* <= 0.01", "error_rate", "<=", 0.01, "*"),
        ("  itl_ms.mean <= 5e1 ", "itl_ms_mean", "<=", 50.0, None),
        ("output_throughput@1 >= 80.5", "output_throughput", ">=", 80.5, 1),
        ("goodput >= .5", "goodput", ">=", 0.5, None),
    ],
)
def test_limits_are_read_in_either_spelling(
    text: str, metric: str, op: str, value: float, level: object
) -> None:
    limit = parse_limit(text)
    assert (limit.metric, limit.op, limit.value, limit.level) == (metric, op, value, level)
    assert parse_limit(limit.text) == limit  # the text it shows reads back the same


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ttft.p99 <= 1", "unknown metric 'ttft_p99'"),
        ("ttft_ms.p95 <= 1", "unknown metric 'ttft_ms_p95'"),
        ("ttft_ms.p99 < 1", "use <= or >="),
        ("ttft_ms.p99 <= __import__('os')", "cannot read the limit"),
        ("ttft_ms.p99@0 <= 1", "level is 1 or more"),
        ("", "METRIC[.STAT][@LEVEL] <= NUMBER"),
    ],
)
def test_a_bad_limit_says_what_to_write(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        parse_limit(text)
    assert says in str(info.value)


def test_where_the_level_must_or_must_not_be_given() -> None:
    with pytest.raises(ValueError, match="name the level"):
        parse_limit("ttft_ms.p99 <= 1", level="required")
    with pytest.raises(ValueError, match="no @LEVEL here"):
        parse_limit("ttft_ms.p99@8 <= 1", level="forbidden")
    assert parse_limit("ttft_ms.p99@* <= 1", level="required").level == "*"


def test_holds_and_excess_and_nan_never_holds() -> None:
    upper = MetricLimit("ttft_ms_p99", "<=", 1000.0)
    assert upper.holds(1000.0) and not upper.holds(1000.1)
    assert upper.excess(1500.0) == pytest.approx(0.5) and upper.excess(900.0) == 0.0
    lower = MetricLimit("output_throughput", ">=", 80.0)
    assert lower.holds(81.0) and not lower.holds(60.0)
    assert lower.excess(60.0) == pytest.approx(0.25)
    assert not upper.holds(math.nan) and upper.excess(math.nan) == math.inf


def test_every_latency_family_and_stat_is_a_limit_metric() -> None:
    assert {"ttft_ms_p99", "tpot_ms_mean", "itl_ms_p50", "e2el_ms_p90"} <= set(LIMIT_METRICS)
