"""benchmarks/vs_vllm_bench.py's own logic, without vLLM or a server.

The vllm tier's comparison is only as good as the script's reading of each client's
result: every figure must be read from where ``tuner bench --format json`` really puts
it (a key that is never there reads as "no level was client-limited", and the test that
asserts it could never fail), and ``agree`` must say no when the medians lie further
apart than the wider spread.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import sys
import types
from pathlib import Path

import pytest
from rich.console import Console

from tuner.bench import LevelResult, RequestRecord
from tuner.bench.summary import levels_document, summarize

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "vs_vllm_bench.py"


@pytest.fixture(scope="module")
def vs() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("vs_vllm_bench_unit", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


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
