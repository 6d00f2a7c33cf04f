"""The live view and the final table of ``tuner bench``, with a canned engine."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tuner import bench_command
from tuner.bench import LevelResult, LiveStats, LoadSpec, RequestRecord
from tuner.bench.summary import summarize
from tuner.bench_command import measure_levels
from tuner.views.bench import levels_table, print_warnings, progress_line


def record(index: int, error: str | None = None, estimated: bool = False) -> RequestRecord:
    return RequestRecord(
        concurrency=4,
        round=0,
        index=index,
        start_s=0.01 * index,
        ttft_s=0.05,
        e2el_s=None if error else 0.25,
        itl_s=(0.05,) * 4,
        chunks=5,
        prompt_tokens=8,
        output_tokens=5,
        reasoning_tokens=2,
        tokens_estimated=estimated,
        error=error,
    )


def result(concurrency: int, round_index: int = 0, **extra: object) -> LevelResult:
    records = tuple(record(i) for i in range(4))
    return LevelResult(
        records=records, duration_s=1.0, concurrency=concurrency, round=round_index, **extra
    )  # type: ignore[arg-type]


def render(table: object) -> str:
    console = Console(file=io.StringIO(), width=220, record=True)
    console.print(table)
    return console.export_text()


def test_table_has_a_row_per_level_and_the_headline_columns() -> None:
    text = render(levels_table([summarize(result(1)), summarize(result(8))]))
    for column in ("Level", "Out tok/s", "TTFT p50", "ITL p99", "E2EL p50"):
        assert column in text
    assert "50.0" in text  # TTFT p50 in ms
    assert "reasoning 40% of output tokens" in text


def test_flags_errors_estimates_goodput_and_rounds() -> None:
    broken = LevelResult(
        records=(record(0), record(1, error="http 500: x"), record(2, estimated=True)),
        duration_s=1.0,
        concurrency=2,
        client_limited=True,
        warnings=("use --workers 2",),
    )
    summaries = [
        summarize(broken, goodput={"ttft_ms": 100}),
        summarize(result(2, round_index=1), goodput={"ttft_ms": 100}),
    ]
    text = render(levels_table(summaries))
    assert "client-limited" in text and "errors 33%" in text and "http 500" in text
    assert "Goodput" in text and "Round" in text
    assert "no usage from the server" in text


def test_warnings_after_the_table() -> None:
    out = io.StringIO()
    limited = result(4, client_limited=True, warnings=("use --workers 2",))
    print_warnings(Console(file=out, width=200), [summarize(limited)])
    assert "use --workers 2" in out.getvalue()


def test_progress_line() -> None:
    live = LiveStats(
        phase="measuring",
        concurrency=8,
        planned=32,
        completed=5,
        in_flight=8,
        chunks=100,
        errors=1,
        lag_max_s=0.05,
    )
    import time

    live.window_start = time.perf_counter() - 1.0
    text = progress_line(LoadSpec(model="m", concurrency=8), live).plain
    assert "concurrency 8" in text and "5/32 done" in text and "1 errors" in text
    assert "client lag" in text
    assert "rate 2/s" in progress_line(LoadSpec(model="m", rate=2.0), LiveStats()).plain


def test_measure_levels_measures_each_level_each_round(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []
    firsts: list[int] = []

    def fake(url: str, load: LoadSpec, *, round_index: int, live: LiveStats) -> LevelResult:
        calls.append((load.concurrency, round_index))
        firsts.append(load.first_index)
        live.phase = "done"
        return result(load.concurrency, round_index)

    monkeypatch.setattr(bench_command, "measure_level", fake)
    loads = [LoadSpec(model="m", concurrency=c) for c in (1, 4)]
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    runs = measure_levels("http://x", loads, rounds=2, console=console)
    assert calls == [(1, 0), (4, 0), (1, 1), (4, 1)]
    assert firsts == [0, 16, 32, 48]  # each window after the ones before: 16 requests each
    assert [r.summary.concurrency for r in runs] == [1, 4, 1, 4]
    assert runs[0].result.records and runs[0].load is loads[0]
