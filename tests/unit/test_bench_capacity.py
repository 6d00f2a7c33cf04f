"""The capacity search on synthetic servers whose true capacity is known."""

from __future__ import annotations

import itertools

import pytest

from tuner.bench import LevelResult, RequestRecord
from tuner.bench.capacity import find_capacity, knee
from tuner.bench.summary import LevelSummary, summarize
from tuner.space.limits import parse_limit

TTFT_LIMIT = parse_limit("ttft_ms.p99 <= 100")


def batch_server(slots: int, *, step_s: float = 0.01, tokens: int = 20):
    """A server that runs ``slots`` requests at once; the rest wait for a whole request.

    Each level sends two requests per stream. TTFT is 20 ms with a free slot and a whole
    request (20 steps of 10 ms, 200 ms) more when it waits, so ``ttft_ms.p99 <= 100``
    holds exactly up to ``slots`` streams.
    """
    calls: list[int] = []

    def measure(concurrency: int) -> LevelSummary:
        calls.append(concurrency)
        records = []
        request_s = tokens * step_s
        for i in range(2 * concurrency):
            start = (i // concurrency) * request_s
            wait = ((i % concurrency) // slots) * request_s
            ttft = 0.02 + wait
            records.append(
                RequestRecord(
                    concurrency=concurrency,
                    round=0,
                    index=i,
                    start_s=start,
                    ttft_s=ttft,
                    e2el_s=ttft + (tokens - 1) * step_s,
                    itl_s=(step_s,) * (tokens - 1),
                    chunks=tokens,
                    prompt_tokens=8,
                    output_tokens=tokens,
                    reasoning_tokens=0,
                    tokens_estimated=False,
                )
            )
        duration = 2 * -(-concurrency // slots) * request_s + 0.02
        return summarize(LevelResult(tuple(records), duration, concurrency))

    measure.calls = calls  # type: ignore[attr-defined]
    return measure


def true_capacity(slots: int, top: int = 256) -> int:
    """Every level measured, one by one: the largest below the first that breaks. With
    many streams a few waiting requests fall outside the p99, so it can exceed ``slots``."""
    measure = batch_server(slots)
    return next(c for c in range(1, top + 1) if measure(c).ttft_ms.p99 > 100) - 1


@pytest.mark.parametrize("slots", [1, 5, 8, 37, 100])
def test_the_search_lands_on_the_true_capacity(slots: int) -> None:
    measure = batch_server(slots)
    found = find_capacity(measure, [TTFT_LIMIT], max_concurrency=256)
    truth = true_capacity(slots)
    assert found.capacity == truth and truth >= slots
    assert found.first_broken == truth + 1
    assert found.stop == "resolved"
    at = found.at_capacity
    assert at is not None and at.held and at.summary.ttft_ms.p99 <= 100
    # Doubling, then bisecting: about 2 log2(capacity) levels, never one twice.
    assert len(measure.calls) == len(set(measure.calls)) <= 2 * slots.bit_length() + 2
    assert "capacity" in found.sentence() and "at " in found.sentence()


def test_a_server_that_holds_at_the_largest_level_says_the_capacity_may_be_higher() -> None:
    found = find_capacity(batch_server(1000), [TTFT_LIMIT], max_concurrency=64)
    assert (found.capacity, found.first_broken, found.stop) == (64, None, "max_concurrency")
    assert "may be higher" in found.sentence()


def test_a_first_level_that_breaks_gives_no_capacity() -> None:
    found = find_capacity(batch_server(1), [TTFT_LIMIT], start=4)
    assert found.capacity is None and found.stop == "start_broke"
    assert found.sentence().startswith("no capacity within ttft_ms.p99 <= 100")


def test_the_level_and_time_budgets_stop_the_search_with_the_best_so_far() -> None:
    found = find_capacity(batch_server(37), [TTFT_LIMIT], max_levels=7)
    assert found.stop == "level_budget" and len(found.levels) == 7
    assert found.capacity is not None and found.capacity <= 37 < found.first_broken  # type: ignore[operator]
    ticks = itertools.count()
    timed = find_capacity(
        batch_server(37), [TTFT_LIMIT], budget_s=3.0, clock=lambda: float(next(ticks))
    )
    assert timed.stop == "time_budget" and timed.capacity is not None


def test_every_limit_must_hold() -> None:
    # The error-rate limit holds everywhere; the TPOT limit never does.
    limits = [parse_limit("error_rate <= 0.01"), parse_limit("tpot_ms.mean <= 1")]
    found = find_capacity(batch_server(8), limits)
    assert found.capacity is None
    assert any("tpot_ms.mean <= 1" in b for b in found.levels[0].broken)


def test_the_knee_is_where_throughput_stops_growing() -> None:
    seeds_like = [(1, 82), (4, 300), (16, 1100), (64, 2400), (256, 3900), (1024, 3990)]
    assert knee(seeds_like) == 256
    assert knee([(1, 80), (2, 160), (4, 320)]) is None  # still growing
    assert knee([(1, 80), (2, 81), (4, 82)]) == 1
    found = find_capacity(batch_server(8), [TTFT_LIMIT], max_concurrency=64)
    assert found.knee == 8  # the batch is full at 8: more streams only wait
