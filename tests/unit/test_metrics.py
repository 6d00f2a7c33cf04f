"""Level summaries from hand-made records, checked against vLLM's definitions by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from tuner.bench import ClientLag, LevelResult, RequestRecord
from tuner.bench.summary import (
    Distribution,
    levels_document,
    parse_goodput,
    peak_output_throughput,
    percentile,
    summarize,
)
from tuner.errors import ConfigError
from tuner.vocabulary import OBJECTIVE_METRICS, is_load_metric


def record(
    index: int,
    *,
    start: float = 0.0,
    ttft: float | None = 0.1,
    itl: tuple[float, ...] = (0.02, 0.02, 0.02),
    output: int | None = None,
    prompt: int = 10,
    reasoning: int = 0,
    estimated: bool = False,
    error: str | None = None,
) -> RequestRecord:
    chunks = len(itl) + 1 if ttft is not None else 0
    e2el = ttft + sum(itl) if ttft is not None and error is None else None
    return RequestRecord(
        concurrency=2,
        round=0,
        index=index,
        start_s=start,
        ttft_s=ttft,
        e2el_s=e2el,
        itl_s=itl,
        chunks=chunks,
        prompt_tokens=prompt,
        output_tokens=chunks if output is None else output,
        reasoning_tokens=reasoning,
        tokens_estimated=estimated,
        error=error,
    )


def level(*records: RequestRecord, duration: float = 2.0, **extra: object) -> LevelResult:
    return LevelResult(records=records, duration_s=duration, concurrency=2, **extra)


def test_percentile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 90) == pytest.approx(3.7)
    assert percentile(values, 99) == pytest.approx(3.97)
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 4.0
    assert percentile([5.0], 99) == 5.0
    assert math.isnan(percentile([], 50))


def test_distribution_in_ms_with_population_std() -> None:
    dist = Distribution.of([0.001, 0.002, 0.003, 0.004])
    assert dist.mean == pytest.approx(2.5) and dist.p50 == pytest.approx(2.5)
    assert dist.std == pytest.approx(math.sqrt(1.25))
    assert dist.count == 4
    empty = Distribution.of([])
    assert math.isnan(empty.mean) and empty.to_dict()["p50"] is None


def test_the_vllm_definitions() -> None:
    a = record(0, ttft=0.1, itl=(0.02, 0.02, 0.02))  # 4 chunks, 4 tokens
    b = record(1, start=0.5, ttft=0.3, itl=(0.04,), output=3)  # 2 chunks carrying 3 tokens
    s = summarize(level(a, b, duration=2.0))
    assert (s.completed, s.errors, s.error_rate, s.flagged) == (2, 0, 0.0, None)
    assert s.ttft_ms.mean == pytest.approx(200.0) and s.ttft_ms.p50 == pytest.approx(200.0)
    # TPOT = (e2el - ttft) / (output - 1): a 0.06/3 = 20 ms, b 0.04/2 = 20 ms.
    assert s.tpot_ms.mean == pytest.approx(20.0)
    # ITL: one sample per chunk gap, 4 of them.
    assert s.itl_ms.count == 4 and s.itl_ms.mean == pytest.approx(25.0)
    assert s.e2el_ms.p50 == pytest.approx((160 + 340) / 2)
    assert s.output_throughput == pytest.approx(7 / 2.0)
    assert s.request_throughput == pytest.approx(1.0)
    assert s.total_throughput == pytest.approx((7 + 20) / 2.0)
    assert s.tokens_per_chunk == pytest.approx(7 / 6)


def test_one_token_requests_have_no_tpot() -> None:
    s = summarize(level(record(0, itl=()), record(1, itl=(0.01,))))
    assert s.tpot_ms.count == 1


def test_failed_requests_count_as_errors_not_in_throughput_or_latency() -> None:
    ok = record(0)
    bad = record(1, ttft=5.0, itl=(), error="http 500: boom")
    timeout = record(2, ttft=None, itl=(), error="timeout: no end of response after 1 s")
    s = summarize(level(ok, bad, timeout, duration=2.0))
    assert (s.completed, s.errors) == (1, 2)
    assert s.error_rate == pytest.approx(2 / 3)
    assert s.flagged is not None and "2 of 3 requests failed" in s.flagged
    assert s.output_throughput == pytest.approx(4 / 2.0)
    assert s.ttft_ms.count == 1
    assert s.error_reasons == {"http 500": 1, "timeout": 1}


def test_the_error_threshold() -> None:
    result = level(*(record(i) for i in range(9)), record(9, error="http 500: x"))
    assert summarize(result, max_error_rate=0.2).flagged is None
    assert summarize(result, max_error_rate=0.05).flagged is not None


def test_client_limited_levels_are_flagged_with_the_warning() -> None:
    result = level(
        record(0),
        client_limited=True,
        warnings=("use --workers 2",),
        client_lag=ClientLag(max_s=0.05, p99_s=0.03, busy=0.97),
    )
    s = summarize(result)
    assert s.flagged is not None and "client-limited" in s.flagged and "--workers 2" in s.flagged
    assert s.client_lag_ms_p99 == pytest.approx(30.0)


def test_a_level_where_everything_failed_cannot_look_fast() -> None:
    s = summarize(level(record(0, error="connection failed: refused", ttft=None, itl=())))
    assert s.completed == 0 and s.output_throughput == 0.0
    assert math.isnan(s.metric("ttft_ms_p50"))
    assert s.to_dict()["ttft_ms"]["p50"] is None


def test_goodput_as_vllm() -> None:
    fast = record(0, ttft=0.1, itl=(0.01,) * 3)  # TTFT 100 ms, e2el 130 ms
    slow_first = record(1, ttft=0.6, itl=(0.01,) * 3)  # TTFT 600 ms
    slow_tokens = record(2, ttft=0.1, itl=(0.5,) * 3)  # TPOT 500 ms
    result = level(fast, slow_first, slow_tokens, duration=1.0)
    assert summarize(result, goodput={"ttft_ms": 500}).goodput == pytest.approx(2.0)
    both = {"ttft_ms": 500, "tpot_ms": 100}
    assert summarize(result, goodput=both).goodput == pytest.approx(1.0)
    assert summarize(result).goodput is None


def test_parse_goodput() -> None:
    assert parse_goodput(["ttft_ms:500", "e2el_ms:2000"]) == {"ttft_ms": 500.0, "e2el_ms": 2000.0}
    assert parse_goodput("ttft:500 tpot:50") == {"ttft_ms": 500.0, "tpot_ms": 50.0}
    for bad in ("ttft_ms", "itl_ms:5", "ttft_ms:-1", "ttft_ms:abc", "ttft_ms:inf"):
        with pytest.raises(ConfigError):
            parse_goodput([bad])


def test_peak_output_in_one_second_buckets() -> None:
    # 10 chunks 0.05 s apart from t=0.1, then one at 2.5 s: 10 in the first second.
    a = record(0, ttft=0.1, itl=(0.05,) * 9 + (1.95,))
    # b's chunks carry 2 tokens each, in the second bucket.
    b = record(1, start=1.0, ttft=0.2, itl=(0.1, 0.1), output=6)
    assert peak_output_throughput([a, b]) == pytest.approx(10.0)
    assert summarize(level(a, b)).peak_output_throughput == pytest.approx(10.0)
    c = record(2, start=1.0, ttft=0.2, itl=(0.1,) * 5, output=14)  # 6 chunks x 14/6 tokens
    assert peak_output_throughput([a, c]) == pytest.approx(14.0)


def test_peak_leaves_out_the_partial_last_second_and_short_levels_use_their_span() -> None:
    a = record(0, ttft=0.1, itl=(0.1,) * 14)  # chunks at 0.1 .. 1.5: 10 in [0, 1), 5 after
    assert peak_output_throughput([a]) == pytest.approx(10.0)
    short = record(0, ttft=0.1, itl=(0.1,) * 3)  # 4 tokens by 0.4 s
    assert peak_output_throughput([short]) == pytest.approx(4 / 0.4)
    assert peak_output_throughput([]) == 0.0


def test_the_chat_role_announcement_is_timed_but_in_no_peak_bucket() -> None:
    # Role chunk at 0.95 s, then 4 one-token chunks at 0.96, 0.97, 1.5 and 2.5 s: 2
    # tokens in the first second (3 if the role chunk were counted), 1 in the second.
    chat = replace(record(0, ttft=0.95, itl=(0.01, 0.01, 0.53, 1.0)), chunks=4, output_tokens=4)
    assert chat.role_chunks == 1 and chat.tokens_per_chunk == 1.0
    assert peak_output_throughput([chat]) == pytest.approx(2.0)
    s = summarize(level(chat, duration=2.5))
    assert s.ttft_ms.p50 == pytest.approx(950.0)  # TTFT at the role chunk, as vLLM's
    assert s.itl_ms.count == 4 and s.tokens_per_chunk == 1.0
    assert s.tpot_ms.mean == pytest.approx((2.5 - 0.95) / 3 * 1000)
    assert record(1).role_chunks == 0


def test_reasoning_and_content_tokens_apart() -> None:
    s = summarize(level(record(0, output=10, reasoning=6), record(1, output=4, reasoning=0)))
    assert (s.output_tokens, s.reasoning_tokens, s.content_tokens) == (14, 6, 8)


def test_estimated_tokens_are_marked() -> None:
    assert summarize(level(record(0, estimated=True), record(1))).tokens_estimated
    assert not summarize(level(record(0))).tokens_estimated


@pytest.mark.parametrize(
    "name", [m for m in OBJECTIVE_METRICS if m != "capacity" and not is_load_metric(m)]
)
def test_every_objective_metric_has_a_value(name: str) -> None:
    """Every objective a level measures (capacity is a search's result: test_capacity_study;
    a launch's load is its launch row's: test_load_explained); goodput with an SLO, as
    benchmark.goodput gives in a study."""
    s = summarize(level(record(0), record(1, start=0.2)), goodput={"ttft_ms": 1000})
    value = s.metric(name)
    assert isinstance(value, float) and not math.isnan(value)


def test_metric_names_map_to_fields() -> None:
    s = summarize(level(record(0), record(1, ttft=0.3)))
    assert s.metric("output_throughput") == s.output_throughput
    assert s.metric("ttft_ms_p50") == s.ttft_ms.p50
    assert s.metric("itl_ms_p99") == s.itl_ms.p99
    assert s.metric("e2el_ms_std") == s.e2el_ms.std
    assert math.isnan(s.metric("goodput"))
    with pytest.raises(KeyError, match="unknown metric"):
        s.metric("ttft_ms_p42")


def test_json_contract_of_tuner_bench() -> None:
    s = summarize(level(record(0), record(1)), goodput={"e2el_ms": 1000})
    doc = json.loads(json.dumps(levels_document([s], url="http://x")))
    assert doc["url"] == "http://x"
    (lvl,) = doc["levels"]
    for key in ("concurrency", "completed", "errors", "output_throughput"):
        assert key in lvl
    for family in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
        assert set(lvl[family]) >= {"mean", "p50", "p99"}
    assert lvl["goodput"] == pytest.approx(1.0) and lvl["client"]["limited"] is False
