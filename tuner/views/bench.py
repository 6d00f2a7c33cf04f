"""What ``tuner bench`` shows: a rich live view while levels run, and the table at the end.

``BenchView`` keeps a live line for the running level under the rows of the finished
ones; ``levels_table`` renders summaries on their own; ``print_warnings`` says what a
flagged level means; ``capacity_lines`` gives a capacity search's answer. The levels
themselves are run by tuner/bench_command.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from tuner.bench import LiveStats, LoadSpec
from tuner.bench.capacity import CapacityResult
from tuner.bench.summary import LevelSummary


class BenchView:
    """The live display: finished levels as table rows, the running one as a status line."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self.console = console
        self.enabled = enabled and console.is_terminal
        self.done: list[LevelSummary] = []
        self.live: LiveStats | None = None
        self.load: LoadSpec | None = None
        self.round = 0
        self._display: Live | None = None

    def __enter__(self) -> BenchView:
        if self.enabled:
            self._display = Live(
                get_renderable=self._render,
                console=self.console,
                refresh_per_second=4,
                transient=True,
            )
            self._display.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._display is not None:
            self._display.__exit__(None, None, None)
            self._display = None

    def start(self, load: LoadSpec, round_index: int) -> LiveStats:
        """A fresh progress record for the level about to run."""
        self.load = load
        self.round = round_index
        self.live = LiveStats(concurrency=load.concurrency, planned=load.requests)
        return self.live

    def finish(self, summary: LevelSummary) -> None:
        self.done.append(summary)
        self.live = None

    def _render(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self.done:
            parts.append(levels_table(self.done))
        if self.live is not None and self.load is not None:
            parts.append(progress_line(self.load, self.live, self.round))
        return Group(*parts)


def progress_line(load: LoadSpec, live: LiveStats, round_index: int = 0) -> Text:
    """One line on the running level: phase, requests, streams, tokens/s, errors, lag."""
    shape = f"rate {load.rate:g}/s" if load.rate else f"concurrency {load.concurrency}"
    text = Text(f"round {round_index + 1} {shape}: ", style="bold")
    text.append(live.phase)
    if live.window_start is not None and live.phase == "measuring":
        elapsed = max(1e-9, time.perf_counter() - live.window_start)
        planned = f"/{live.planned}" if live.planned else ""
        text.append(
            f"  {live.completed}{planned} done, {live.in_flight} streaming, "
            f"{live.chunks / elapsed:,.0f} chunks/s, {elapsed:.0f} s"
        )
        if live.errors:
            text.append(f", {live.errors} errors", style="red")
        if live.lag_max_s > 0.010:
            text.append(f", client lag up to {live.lag_max_s * 1000:.0f} ms", style="yellow")
    return text


def levels_table(summaries: Sequence[LevelSummary], *, title: str | None = None) -> Table:
    """The end-of-run table: one row per level and round, latencies in ms."""
    goodput = any(s.goodput is not None for s in summaries)
    rounds = len({s.round for s in summaries}) > 1
    table = Table(title=title, header_style="bold", show_lines=False)
    if rounds:
        table.add_column("Round", justify="right")
    table.add_column("Level", justify="right")
    table.add_column("OK", justify="right")
    table.add_column("Err", justify="right")
    table.add_column("Out tok/s", justify="right")
    table.add_column("Peak tok/s", justify="right")
    table.add_column("Req/s", justify="right")
    if goodput:
        table.add_column("Goodput", justify="right")
    for name in ("TTFT p50", "TTFT p99", "TPOT p50", "ITL p50", "ITL p99", "E2EL p50"):
        table.add_column(name, justify="right")
    table.add_column("Notes")
    notes: list[str] = []
    for s in summaries:
        row: list[str | Text] = [str(s.round + 1)] if rounds else []
        row += [
            f"{s.rate:g}/s" if s.rate else str(s.concurrency),
            str(s.completed),
            Text(str(s.errors), style="red" if s.errors else ""),
            _num(s.output_throughput, "{:,.0f}") + ("*" if s.tokens_estimated else ""),
            _num(s.peak_output_throughput, "{:,.0f}"),
            _num(s.request_throughput, "{:.2f}"),
        ]
        if goodput:
            row.append(_num(s.goodput, "{:.2f}"))
        row += [
            _num(s.ttft_ms.p50),
            _num(s.ttft_ms.p99),
            _num(s.tpot_ms.p50),
            _num(s.itl_ms.p50),
            _num(s.itl_ms.p99),
            _num(s.e2el_ms.p50),
        ]
        row.append(_flags(s))
        table.add_row(*row)
        if s.reasoning_tokens and "reasoning" not in " ".join(notes):
            share = s.reasoning_tokens / s.output_tokens if s.output_tokens else 0.0
            notes.append(f"reasoning {share:.0%} of output tokens (level {s.concurrency})")
    if any(s.tokens_estimated for s in summaries):
        notes.append("* no usage from the server: one token counted per chunk")
    if notes:
        table.caption = "; ".join(notes)
    return table


def _flags(summary: LevelSummary) -> Text:
    text = Text()
    if summary.client_limited:
        text.append("client-limited ", style="yellow")
    if summary.flagged and summary.errors:
        text.append(f"errors {summary.error_rate:.0%} ", style="red")
        if summary.error_reasons:
            reason = next(iter(summary.error_reasons))
            text.append(f"({reason})", style="red")
    return text


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value)


def print_warnings(console: Console, summaries: Sequence[LevelSummary]) -> None:
    """Each level's flags and warnings, once, after the table."""
    for s in summaries:
        for line in ([s.flagged] if s.flagged else []) + [
            w for w in s.warnings if not (s.flagged and w in s.flagged)
        ]:
            console.print(f"[yellow]level {s.concurrency}, round {s.round + 1}:[/] {line}")


def capacity_lines(found: CapacityResult) -> Text:
    """The capacity search's answer under the levels table: capacity, bound, knee."""
    text = Text(found.sentence(), style="bold" if found.capacity else "red")
    if found.knee is not None:
        text.append(
            f"\nknee at {found.knee} streams: throughput grows by less than 10% per doubling "
            f"beyond it"
        )
    else:
        text.append("\nno knee within the levels measured: throughput still grows")
    return text
