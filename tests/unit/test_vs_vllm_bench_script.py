"""benchmarks/vs_vllm_bench.py's own logic, without vLLM or a server.

The vllm tier's comparison is only as good as the script's reading of each client's
result: every figure must be read from where ``tuner bench --format json`` really puts
it (a key that is never there reads as "no level was client-limited", and the test that
asserts it could never fail), and ``agree`` must say no when the medians lie further
apart than the wider spread.
"""

from __future__ import annotations

import io
import json
import math
import types

import pytest
from rich.console import Console

from tests.unit.benchmark_scripts import load_benchmark
from tuner.bench import LevelResult, RequestRecord
from tuner.bench.summary import levels_document, summarize


@pytest.fixture(scope="module")
def vs() -> types.ModuleType:
    return load_benchmark("vs_vllm_bench.py")


def _record(index: int, ttft_s: float) -> RequestRecord:
    # 5 tokens in 5 chunks, 10 ms apart after the first.
    return RequestRecord(
        concurrency=2,
        round=0,
        index=index,
        start_s=0.0,
        ttft_s=ttft_s,
        e2el_s=ttft_s + 0.04,
        itl_s=(0.01,) * 4,
        chunks=5,
        prompt_tokens=65,
        output_tokens=5,
        reasoning_tokens=0,
        tokens_estimated=False,
    )


def _printed(*, limited: bool) -> str:
    """What ``tuner bench --format json`` prints for one level (its console, its document)."""
    result = LevelResult(
        records=(_record(0, 0.02), _record(1, 0.04)),
        duration_s=0.5,
        concurrency=2,
        client_limited=limited,
        warnings=("use --workers 2",) if limited else (),
    )
    document = levels_document([summarize(result)], url="http://x", model="tiny-llama")
    console = Console(file=io.StringIO(), width=100)
    console.print_json(json.dumps(document))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


def _vllm_run(ttft_ms: float) -> dict:
    """The keys of vllm bench serve's result JSON that the script reads."""
    return {
        "output_throughput": 20.0,
        "median_ttft_ms": ttft_ms,
        "p99_ttft_ms": ttft_ms,
        "mean_ttft_ms": ttft_ms,
        "mean_tpot_ms": 10.0,
        "mean_itl_ms": 10.0,
        "total_output_tokens": 10,
        "total_input_tokens": 130,
        "completed": 2,
        "itls": [[0.01] * 4, [0.01] * 4],
    }


@pytest.mark.parametrize("limited", [True, False])
def test_the_client_limited_flag_is_read_from_where_tuner_bench_puts_it(
    vs: types.ModuleType, limited: bool
) -> None:
    level = vs.first_level(_printed(limited=limited))
    assert vs.client_limited(level) is limited
    data = vs.table_data(vs.Load(), [_vllm_run(30.0)], [level])
    assert data["tuner_client_limited"] == [limited]
    assert (data["tuner_flagged"][0] is not None) is limited


def test_every_figure_read_from_tuners_level_is_the_levels_own(vs: types.ModuleType) -> None:
    level = vs.first_level(_printed(limited=False))
    data = vs.table_data(vs.Load(), [_vllm_run(30.0)], [level])
    tuner = {row["label"]: row["tuner"][0] for row in data["rows"]}
    assert tuner["output tok/s"] == pytest.approx(10 / 0.5)
    assert tuner["TTFT p50 ms"] == pytest.approx(30.0)
    assert tuner["TTFT p99 ms"] == pytest.approx(20.0 + 0.99 * 20.0)
    assert tuner["TPOT mean ms"] == pytest.approx(10.0)
    assert tuner["ITL mean ms"] == pytest.approx(10.0)
    assert data["tuner_tokens_per_chunk"] == [pytest.approx(1.0)]
    assert data["tuner_prompt_tokens"] == [pytest.approx(65.0)]
    # vllm's side: one token per SSE event (2 first events + 8 gaps for 10 tokens).
    assert data["vllm_tokens_per_event"] == [pytest.approx(1.0)]
    assert data["vllm_prompt_tokens"] == [pytest.approx(65.0)]
    assert data["runs"] == 1
    ttft_p50 = next(row for row in data["rows"] if row["label"] == "TTFT p50 ms")
    assert ttft_p50["ratio"] == pytest.approx(1.0) and ttft_p50["agrees"]


def test_agree_is_within_the_wider_spread_of_the_two_clients(vs: types.ModuleType) -> None:
    assert vs.agree([10.0, 12.0, 14.0], [13.0, 13.5, 14.0])  # medians 1 apart, spread 4
    assert vs.agree([10.0, 10.0, 10.0], [11.0, 12.0, 13.0])  # 2 apart, tuner's spread 2
    assert not vs.agree([10.0, 10.5, 11.0], [12.0, 12.0, 12.5])  # 1.5 apart, spread 1
    assert not vs.agree([5.0, 5.0, 5.0], [5.1, 5.1, 5.1])  # no spread: must be equal
    assert vs.agree([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    row = vs.Row("ITL mean ms", (5.2, 5.5, 4.2), (12.8, 14.7, 12.4))
    assert not row.agrees and math.isclose(row.ratio, 12.8 / 5.2)


_METRICS_TEXT = """\
# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.
vllm:inter_token_latency_seconds_sum{{engine="0",model_name="tiny-llama"}} {itl}
vllm:inter_token_latency_seconds_count{{engine="0",model_name="tiny-llama"}} {tokens}
vllm:time_to_first_token_seconds_sum{{engine="0",model_name="tiny-llama"}} {ttft}
vllm:time_to_first_token_seconds_count{{engine="0",model_name="tiny-llama"}} {requests}
vllm:e2e_request_latency_seconds_sum{{engine="0",model_name="tiny-llama"}} {e2el}
vllm:e2e_request_latency_seconds_count{{engine="0",model_name="tiny-llama"}} {requests}
"""


class _Reply(io.BytesIO):
    """What urlopen returns, as a context manager."""

    def __enter__(self) -> _Reply:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_the_servers_own_record_of_a_run_is_the_difference_of_its_histograms(
    vs: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = iter(
        [
            _METRICS_TEXT.format(itl=1.0, tokens=100, ttft=0.5, e2el=2.0, requests=10),
            _METRICS_TEXT.format(itl=1.7, tokens=200, ttft=0.9, e2el=3.2, requests=18),
        ]
    )

    monkeypatch.setattr(vs.urllib.request, "urlopen", lambda *a, **k: _Reply(next(pages).encode()))
    run = vs.recorded("http://x", lambda: {"mean_itl_ms": 7.0})
    server = run["server"]
    assert server["itl_ms"] == pytest.approx(7.0)  # 0.7 s over 100 tokens
    assert server["ttft_ms"] == pytest.approx(50.0)  # 0.4 s over 8 requests
    assert server["e2el_ms"] == pytest.approx(150.0)
    assert server["requests"] == 8


def test_a_metrics_page_without_the_histogram_is_an_error_not_a_zero(
    vs: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vs.urllib.request, "urlopen", lambda *a, **k: _Reply(b"# nothing\n"))
    with pytest.raises(SystemExit, match="inter_token_latency_seconds_sum"):
        vs.server_sums("http://x")


def _with_server(run: dict, **server: float) -> dict:
    return {**run, "server": {"itl_ms": 10.0, "ttft_ms": 30.0, "e2el_ms": 650.0, **server}}


def test_a_gap_the_server_itself_recorded_is_the_servers_pace_and_no_other_is(
    vs: types.ModuleType,
) -> None:
    # vllm's repeats are tight (TPOT 10.0 and 10.1 ms); tuner's TPOT is 10.45 in both runs:
    # medians 4% apart, further than either spread, so the spread rule alone says no.
    vllm_runs = [_with_server({**_vllm_run(30.0), "mean_tpot_ms": t}) for t in (10.0, 10.1)]
    level = vs.first_level(_printed(limited=False))
    slow = {**level, "tpot_ms": {**level["tpot_ms"], "mean": 10.45}}

    def tpot_row(server_itl_ms: float) -> dict:
        data = vs.table_data(vs.Load(), vllm_runs, [_with_server(slow, itl_ms=server_itl_ms)] * 2)
        row: dict = next(row for row in data["rows"] if row["label"] == "TPOT mean ms")
        assert not row["agrees"]
        return row

    # The server recorded its own ITL 4% longer in tuner's runs: the gap is its pace.
    paced = tpot_row(10.4)
    assert paced["server_ratio"] == pytest.approx(1.04) and paced["paced"]
    # The server ran tuner's runs at vllm's pace: the gap is tuner's, and it is a NO.
    unpaced = tpot_row(10.0)
    assert unpaced["server_ratio"] == pytest.approx(1.0) and not unpaced["paced"]
    data = vs.table_data(vs.Load(), vllm_runs, [_with_server(slow, itl_ms=10.4)] * 2)
    assert data["tuner_tpot_over_server"] == [pytest.approx(10.45 / 10.4)] * 2
    assert data["vllm_tpot_over_server"] == [pytest.approx(1.0), pytest.approx(1.01)]
    # Throughput goes against the request time: requests 4% longer on the server in
    # tuner's runs explain a throughput 4% lower.
    longer = vs.table_data(vs.Load(), vllm_runs, [_with_server(level, e2el_ms=676.0)] * 2)
    rate = next(row for row in longer["rows"] if row["label"] == "output tok/s")
    assert rate["server_ratio"] == pytest.approx(650 / 676)
    # Without the server's record (an older JSON) nothing is called paced.
    bare = vs.table_data(vs.Load(), [_vllm_run(30.0)], [level])
    assert all(row["server_ratio"] is None and not row["paced"] for row in bare["rows"])
    assert bare["tuner_itl_over_server"] is None


def test_ttft_on_the_servers_own_pace_run_by_run_tells_a_measurement_gap_from_a_pace(
    vs: types.ModuleType,
) -> None:
    # vllm's two runs: TTFT 30 and 33 ms where the server itself recorded 30 and 33 (its
    # pace moved 10% between them): on the server's pace, 1.0 both times.
    vllm_runs = [_with_server(_vllm_run(t), ttft_ms=t) for t in (30.0, 33.0)]
    level = vs.first_level(_printed(limited=False))
    tuner = {**level, "ttft_ms": {**level["ttft_ms"], "p50": 33.0, "p99": 33.0, "mean": 33.0}}

    def p50_row(server_ttft_ms: float) -> dict:
        data = vs.table_data(
            vs.Load(), vllm_runs, [_with_server(tuner, ttft_ms=server_ttft_ms)] * 2
        )
        row: dict = next(row for row in data["rows"] if row["label"] == "TTFT p50 ms")
        return {**row, "added": data["tuner_ttft_added_ms"]}

    # The server recorded 30 ms in tuner's runs: tuner's 33 is 10% over the server's own
    # TTFT where vllm's is 0% over it, a difference of measurement, whatever the raw
    # medians (31.5 against 33, within vllm's 3 ms spread) say.
    gap = p50_row(30.0)
    assert gap["agrees"] and not gap["paired"]
    assert gap["tuner_on_pace"] == [pytest.approx(1.1)] * 2
    assert gap["paired_ratio"] == pytest.approx(1.1)
    assert gap["added"] == [pytest.approx(3.0)] * 2  # its mean, 33, less the server's 30
    # The server recorded 33 ms in tuner's runs: the same 33 is the server's pace.
    same = p50_row(33.0)
    assert same["paired"] and same["paired_ratio"] == pytest.approx(1.0)
    # Throughput is put on the pace the other way: times the server's request time.
    data = vs.table_data(vs.Load(), vllm_runs, [_with_server(level, e2el_ms=676.0)] * 2)
    rate = next(row for row in data["rows"] if row["label"] == "output tok/s")
    assert rate["tuner_on_pace"] == [pytest.approx(level["output_throughput"] * 676.0)] * 2
    # Without the server's record nothing is paired.
    bare = vs.table_data(vs.Load(), [_vllm_run(30.0)], [level])
    assert all(row["paired_ratio"] is None and not row["paired"] for row in bare["rows"])
