"""The benchmark of one healthy launch: every round of every level, stored as it goes.

Each level is measured, summarised and stored with its telemetry before the next one
starts, so a launch cut short (pruned, failed, interrupted) keeps what it measured. The
objective's value per round comes out of it, with the pruning check between rounds; the
runner (tuner/trial/runner.py) owns the server around it. An objective on the launch's
load (``time_to_healthy_s``, ...) has one value, known before the first round: the
launch's only value, whatever the rounds (they measure the limits' levels).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tuner import bench, telemetry
from tuner.bench.records import LevelResult
from tuner.bench.summary import LevelSummary, summarize
from tuner.errors import BenchmarkError
from tuner.events import BenchStep, SweepObserver
from tuner.launcher import ServerProcess
from tuner.space.layout import layout_of
from tuner.space.spec import BenchmarkSpec, SpaceSpec
from tuner.storage import Store, request_row
from tuner.telemetry.gpu import GpuBackend
from tuner.trial import capacity_round
from tuner.trial.monitor import LaunchMonitor

HEADLINE_METRICS = ("output_throughput", "ttft_ms_p50", "tpot_ms_p50", "itl_ms_p99", "e2el_ms_p99")
"""Metrics of the objective's level a launch reports (the sweep copies them onto the trial)."""

PruneCheck = Callable[[Sequence[float]], "str | None"]
"""Given the objective of each round so far, a reason to stop benchmarking, or None."""


@dataclass(frozen=True)
class LaunchOutcome:
    """What a finished launch measured."""

    launch_id: int
    round_values: tuple[float, ...]
    pruned_reason: str | None = None
    seconds_to_healthy: float | None = None
    headline: dict[str, float] = field(default_factory=dict)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.round_values)


@dataclass(frozen=True)
class LaunchRounds:
    """Benchmarks the launches of one study's server: what stays the same between them."""

    spec: SpaceSpec
    store: Store
    observer: SweepObserver
    gpu: GpuBackend
    telemetry_interval_s: float

    def run(
        self,
        process: ServerProcess,
        launch_id: int,
        trial_number: int,
        prune_check: PruneCheck | None,
        benchmark: BenchmarkSpec,
        load_value: float | None = None,
    ) -> LaunchOutcome:
        """Every round of every level of ``benchmark`` (the launch's fidelity's: a screening
        launch may run fewer); the objective's value per round; pruning between.
        ``load_value``: the objective's value when it is the launch's load."""
        spec = self.spec
        base_url = process.url  # IPv6 in brackets; a wildcard bind reached on loopback
        model = benchmark.model or bench.discover_model(base_url)
        server_pid = process.pid
        assert server_pid is not None, "the server is started before it is benchmarked"
        monitor = LaunchMonitor(
            self.gpu,
            server_pid=server_pid,
            base_url=base_url,
            interval_s=self.telemetry_interval_s,
        )
        round_values: list[float] = [] if load_value is None else [load_value]
        headline: dict[str, float] = {}
        pruned: str | None = None
        tokens, seconds = 0, 0.0
        by_capacity = spec.objective.metric == "capacity"
        # objective.per_gpu: the value per GPU of this launch's layout (TP x PP), so that
        # layouts of different sizes compare; the stored levels keep the whole server's.
        gpus = layout_of(process.spec.argv).gpus if spec.objective.per_gpu else 1
        searches: list[dict[str, Any]] = []
        prompts = bench.PromptCursor()  # each measured window its own prompts
        try:
            monitor.start()
            for round_index in range(benchmark.rounds):
                for level_index, concurrency in enumerate(benchmark.concurrency):
                    live = bench.LiveStats(concurrency=concurrency)
                    step = BenchStep(
                        round_index=round_index,
                        rounds=benchmark.rounds,
                        level_index=level_index,
                        levels=len(benchmark.concurrency),
                        concurrency=concurrency,
                        live=live,
                    )
                    self.observer.bench_level(trial_number, step)
                    summary = self.measure_level(
                        monitor,
                        base_url,
                        model,
                        launch_id,
                        round_index,
                        concurrency,
                        benchmark=benchmark,
                        prompts=prompts,
                        live=live,
                    )
                    self.observer.level_done(trial_number, round_index, summary)
                    tokens, seconds = tokens + summary.output_tokens, seconds + summary.duration_s
                    if concurrency == spec.objective_concurrency and not by_capacity:
                        if load_value is None:
                            round_values.append(summary.metric(spec.objective.metric) / gpus)
                        headline = _headline(summary)
                if benchmark.capacity is not None:
                    measure = partial(
                        self.measure_level,
                        monitor,
                        base_url,
                        model,
                        launch_id,
                        round_index,
                        benchmark=benchmark,
                        prompts=prompts,
                    )
                    found = capacity_round.search_round(benchmark, measure)
                    self.observer.message(f"trial {trial_number}: {found.sentence()}")
                    searches.append(capacity_round.round_record(found, round_index))
                    self.store.update_launch(launch_id, capacity=list(searches))
                    if by_capacity:
                        round_values.append(capacity_round.capacity_value(found))
                        at = found.at_capacity
                        headline = _headline(at.summary) if at is not None else headline
                if prune_check is not None and round_index + 1 < benchmark.rounds:
                    pruned = prune_check(round_values)
                    if pruned:
                        break
        finally:
            samples = monitor.stop()
            self.store.add_samples(launch_id, samples)
            notice = monitor.scrape_notice()
            if notice:
                self.observer.message(f"trial {trial_number}: {notice}")
        if monitor.gpu_sampler is not None:
            gpu = telemetry.summarize_gpu(
                monitor.gpu_sampler.records(), output_tokens=tokens, duration_s=seconds
            )
            self.store.update_launch(launch_id, gpu_summary=gpu.to_dict())
        return LaunchOutcome(
            launch_id=launch_id,
            round_values=tuple(round_values),
            pruned_reason=pruned,
            headline=headline,
        )

    def measure_level(
        self,
        monitor: LaunchMonitor,
        base_url: str,
        model: str,
        launch_id: int,
        round_index: int,
        concurrency: int,
        requests: int | None = None,
        *,
        benchmark: BenchmarkSpec,
        prompts: bench.PromptCursor,
        live: bench.LiveStats | None = None,
    ) -> LevelSummary:
        """One level: measure, summarise, store with its telemetry; fail if nothing came back.

        ``requests`` given: a capacity-search level (warm server, stored apart); a level
        where every request failed then breaks the limits rather than the launch.
        """
        search = requests is not None
        load = bench.load_from_benchmark_spec(benchmark, concurrency, model)
        if search:
            load = dataclasses.replace(load, requests=requests, warmup=0)
        if round_index > 0:  # the server is warm after the first round
            load = dataclasses.replace(load, warmup=0)
        load = prompts.take(load)
        if live is not None:  # the live view's count (several client processes leave it unset)
            live.planned = load.requests
        window = monitor.level()
        started = time.monotonic()
        result = bench.measure_level(base_url, load, round_index=round_index, live=live)
        # The level's wall time: its measured window plus the warm-up and connection setup
        # before it (the report's time per launch tells them apart).
        wall_s = time.monotonic() - started
        summary = summarize(
            result,
            goodput=benchmark.goodput,
            max_error_rate=benchmark.max_error_rate,
        )
        seen = window.finish(output_tokens=summary.output_tokens, duration_s=result.duration_s)
        flags = [f for f in (summary.flagged, seen.warning) if f]
        self.store.add_level(
            launch_id,
            round_index=round_index,
            summary={**summary.to_dict(), "host": seen.host, "wall_s": wall_s},
            requests=[request_row(r) for r in result.records],
            server_metrics=seen.server_metrics,
            gpu_summary=seen.gpu,
            flagged="; ".join(flags) or None,
            capacity_search=search,
        )
        if summary.completed == 0 and not search:
            raise BenchmarkError(
                f"every request failed at concurrency {concurrency}: {_first_error(result)}"
            )
        return summary


def _headline(summary: LevelSummary) -> dict[str, float]:
    return {name: summary.metric(name) for name in HEADLINE_METRICS}


def _first_error(result: LevelResult) -> str:
    for record in result.records:
        if record.error:
            return str(record.error)
    return "no error recorded"
