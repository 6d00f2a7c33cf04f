"""`tuner bench`: benchmark a server that is already running, with the sweep's own engine.

``measure_levels`` runs each level in turn (the engine the sweep uses) under the live
view of tuner/views/bench.py and returns every level's raw result with its summary,
for ``--format json`` or ``--record``; ``run_capacity`` searches the largest concurrency
within latency limits instead (tuner/bench/capacity.py). No restart, no optuna trial.
With ``record`` the levels and every request go into the study database as a launch of
role ``bench`` (status complete, no process identity), so a standalone measurement sits
beside a study's trials.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.console import Console

from tuner.bench import LevelResult, LoadSpec, PromptCursor, discover_model, measure_level
from tuner.bench.capacity import CapacityResult, find_capacity
from tuner.bench.summary import LevelSummary, parse_goodput, summarize
from tuner.space.limits import MetricLimit
from tuner.storage import LaunchStatus, Store, request_row
from tuner.study import attrs
from tuner.views.bench import BenchView


@dataclass(frozen=True)
class LevelRun:
    """One measured level: the raw records (for the store) and their summary."""

    load: LoadSpec
    result: LevelResult
    summary: LevelSummary


def measure_levels(
    base_url: str,
    loads: Sequence[LoadSpec],
    *,
    rounds: int = 1,
    goodput: dict[str, float] | None = None,
    max_error_rate: float = 0.0,
    console: Console | None = None,
    show: bool = True,
) -> list[LevelRun]:
    """Measure every level ``rounds`` times, showing progress when ``show``; in order."""
    console = console or Console(stderr=True)
    view = BenchView(console, enabled=show)
    runs: list[LevelRun] = []
    with view:
        prompts = PromptCursor()  # each window its own: a repeat hits the prefix cache
        for round_index in range(rounds):
            for load in loads:
                live = view.start(load, round_index)
                window = prompts.take(load)
                result = measure_level(base_url, window, round_index=round_index, live=live)
                summary = summarize(result, goodput=goodput, max_error_rate=max_error_rate)
                view.finish(summary)
                runs.append(LevelRun(load, result, summary))
    return runs


@dataclass(frozen=True)
class BenchOptions:
    """What `tuner bench` was asked to run."""

    url: str
    model: str | None = None
    api: Literal["completions", "chat"] = "completions"
    concurrency: tuple[int, ...] = (1,)
    requests: int = 16
    duration_s: float | None = None
    rate: float | None = None
    prompt_tokens: int = 256
    max_tokens: int = 256
    warmup: int = 2
    rounds: int = 1
    prompts_file: Path | None = None
    workers: int = 0
    cpus: tuple[int, ...] | None = None
    goodput: tuple[str, ...] = ()
    max_error_rate: float = 0.0


def _load(options: BenchOptions, model: str, concurrency: int, requests: int) -> LoadSpec:
    return LoadSpec(
        model=model,
        api=options.api,
        concurrency=concurrency,
        requests=None if options.duration_s else requests,
        duration_s=options.duration_s,
        rate=options.rate,
        prompt_tokens=options.prompt_tokens,
        max_tokens=options.max_tokens,
        warmup=options.warmup,
        prompts_file=options.prompts_file,
        workers=options.workers,
        cpus=options.cpus,
    )


def run_bench(options: BenchOptions, *, console: Console, show: bool) -> tuple[str, list[LevelRun]]:
    """Measure every level (and round) against ``options.url``; the model and the runs."""
    url = options.url.rstrip("/")
    model = options.model or discover_model(url)
    loads = [_load(options, model, c, options.requests) for c in options.concurrency]
    runs = measure_levels(
        url,
        loads,
        rounds=options.rounds,
        goodput=parse_goodput(list(options.goodput)),
        max_error_rate=options.max_error_rate,
        console=console,
        show=show,
    )
    return model, runs


@dataclass(frozen=True)
class CapacityOptions:
    """What `tuner bench --capacity` searches within."""

    limits: tuple[MetricLimit, ...]
    max_concurrency: int = 1024
    max_levels: int = 16
    budget_s: float | None = None
    requests_per_stream: int = 2
    """Each level sends at least this many requests per stream (and ``--requests``), so a
    p99 at high concurrency rests on more than one request per stream."""


def run_capacity(
    options: BenchOptions, capacity: CapacityOptions, *, console: Console, show: bool
) -> tuple[str, CapacityResult, list[LevelRun]]:
    """Search the largest concurrency within the limits, from ``options.concurrency[0]``."""
    url = options.url.rstrip("/")
    model = options.model or discover_model(url)
    runs: list[LevelRun] = []
    view = BenchView(console, enabled=show)

    prompts = PromptCursor()

    def measure(concurrency: int) -> LevelSummary:
        requests = max(options.requests, capacity.requests_per_stream * concurrency)
        load = _load(options, model, concurrency, requests)
        load = prompts.take(load)
        live = view.start(load, 0)
        result = measure_level(url, load, live=live)
        summary = summarize(
            result,
            goodput=parse_goodput(list(options.goodput)),
            max_error_rate=options.max_error_rate,
        )
        view.finish(summary)
        runs.append(LevelRun(load, result, summary))
        return summary

    with view:
        found = find_capacity(
            measure,
            capacity.limits,
            start=options.concurrency[0],
            max_concurrency=capacity.max_concurrency,
            max_levels=capacity.max_levels,
            budget_s=capacity.budget_s,
        )
    return model, found, runs


def record_bench(storage: str, study: str, url: str, model: str, runs: Sequence[LevelRun]) -> int:
    """Store a standalone measurement; returns the launch id."""
    store = Store(storage)
    store.ensure_study(study, space_path=None, space_text=None)
    launch_id = store.add_launch(
        study=study,
        trial_id=None,
        trial_number=None,
        role=attrs.BENCH,
        config_hash="standalone",
        params={"url": url, "model": model},
        env={},
        argv=[],
        host=socket.gethostname(),
        status=LaunchStatus.COMPLETE,
    )
    for run in runs:
        store.add_level(
            launch_id,
            round_index=run.summary.round,
            summary=run.summary.to_dict(),
            requests=[request_row(r) for r in run.result.records],
            flagged=run.summary.flagged,
        )
    return launch_id
