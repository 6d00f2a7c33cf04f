"""One launch of the server for one trial: start, wait, benchmark, stop, record.

The runner owns the order of operations around a single server process and
makes sure every outcome (healthy and measured, pruned, failed to start, died
mid-benchmark, interrupted) ends with the server stopped and a row in the store
that says why. It does not decide anything: the sweep asks it to run a launch
and passes a ``prune_check`` that looks at the rounds measured so far.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from tuner import bench, stats, telemetry
from tuner.bench.records import LevelResult
from tuner.bench.summary import LevelSummary, summarize
from tuner.errors import BenchmarkError, LaunchError, PortTakenError, Terminated
from tuner.events import BenchStep, SweepObserver
from tuner.launcher import (
    LaunchSpec,
    ServerProcess,
    StopReport,
    ensure_gpus_idle,
    free_port,
    parse_visible_devices,
)
from tuner.launcher.load_phases import NEEDLES, load_phases
from tuner.launcher.logfile import matching_lines
from tuner.secrets import private_dir, scrub, secret_values
from tuner.space.layout import layout_of
from tuner.space.secret_params import launch_settings
from tuner.space.settings import Settings, server_argv, server_env
from tuner.space.spec import BenchmarkSpec, Space
from tuner.storage import LaunchStatus, Store, request_row, utcnow
from tuner.telemetry.gpu import GpuBackend
from tuner.trial import capacity_round
from tuner.trial.monitor import LaunchMonitor, plain_dict

HEADLINE_METRICS = ("output_throughput", "ttft_ms_p50", "tpot_ms_p50", "itl_ms_p99", "e2el_ms_p99")
"""Metrics of the objective's level a launch reports (the sweep copies them onto the trial)."""

PORT_ATTEMPTS = 3
"""Launches of one trial whose port was taken before its server bound it, at most (the
race of ``server.port: auto``: a free port is picked, then bound seconds later)."""

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


class Runner(Protocol):
    """What the sweep needs of a runner: launch these settings, return what was measured.

    It must record the launch in the store (the sweep's decisions read it from there)
    and raise LaunchError or BenchmarkError for a launch that failed.
    """

    def run(
        self,
        *,
        trial_id: int | None,
        trial_number: int,
        role: str,
        settings: Settings,
        prune_check: PruneCheck | None = None,
        fidelity: str = "full",
    ) -> LaunchOutcome: ...


@dataclass(frozen=True)
class RunnerOptions:
    """Knobs of the runner that are not part of the space file."""

    runs_dir: Path = Path("tuner-runs")
    gpu_idle_timeout_s: float = 120.0
    gpu_idle_max_memory_mib: float = 1024.0
    telemetry_interval_s: float = 1.0


class TrialRunner:
    """Runs launches of one study's server; one instance per sweep."""

    def __init__(
        self,
        space: Space,
        store: Store,
        *,
        gpu: GpuBackend,
        observer: SweepObserver | None = None,
        options: RunnerOptions | None = None,
    ) -> None:
        self.space = space
        self.spec = space.spec
        self.store = store
        self.gpu = gpu
        self.observer = observer or SweepObserver()
        self.options = options or RunnerOptions()
        self._inventory_done = False

    def run(
        self,
        *,
        trial_id: int | None,
        trial_number: int,
        role: str,
        settings: Settings,
        prune_check: PruneCheck | None = None,
        fidelity: str = "full",
    ) -> LaunchOutcome:
        """Launch, benchmark every round, stop; raise LaunchError/BenchmarkError on failure.

        ``fidelity`` "screen": with the space's ``screening:`` args and env added.

        Whatever happens (Ctrl-C, SIGTERM and a second one during the stop included), the
        server is stopped and the launch row is left with a final status and reason
        before this returns or raises.

        With ``server.port: auto``, a launch whose port was taken before the server bound
        it (PortTakenError: another server or a client on this host got there first) is
        made again on another port, up to PORT_ATTEMPTS launches; a failed one that had
        started keeps its row. The settings are not at fault, and a failed launch would
        count against them.
        """
        auto = self.spec.server.port == "auto"
        attempts = PORT_ATTEMPTS if auto else 1
        for attempt in range(1, attempts + 1):
            try:
                return self._launch(
                    trial_id=trial_id,
                    trial_number=trial_number,
                    role=role,
                    settings=settings,
                    prune_check=prune_check,
                    fidelity=fidelity,
                )
            except PortTakenError as exc:
                if attempt == attempts:
                    raise
                self.observer.message(
                    f"trial {trial_number}: {exc.reason}; launching it again on another port "
                    f"(launch {attempt + 1} of at most {attempts})"
                )
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _launch(
        self,
        *,
        trial_id: int | None,
        trial_number: int,
        role: str,
        settings: Settings,
        prune_check: PruneCheck | None,
        fidelity: str,
    ) -> LaunchOutcome:
        """One launch of ``run``: a port, the server, its row, the benchmark, the stop."""
        server = self.spec.server
        port = free_port(server.host) if server.port == "auto" else int(server.port)
        trial_dir = self.options.runs_dir / self.space.study_name / f"trial-{trial_number:04d}"
        launch = launch_spec_for(
            self.space,
            settings,
            port=port,
            trial_dir=trial_dir.resolve(),
            gpu=self.gpu,
            screening=fidelity == "screen",
        )
        if self.gpu.available:
            ensure_gpus_idle(
                self.gpu,
                launch.gpu_devices,
                max_memory_mib=self.options.gpu_idle_max_memory_mib,
                timeout_s=self.options.gpu_idle_timeout_s,
            )
        # Owner-only folders: the server's log may quote its command line and env.
        for folder in (self.options.runs_dir, trial_dir.parent, launch.log_path.parent):
            private_dir(folder)
        argv, env, unset = launch.argv, launch.env, launch.unset
        # What the server may echo in its log: the secrets it is given, inherited ones too.
        hide = secret_values(argv, launch.child_env())
        process = ServerProcess(launch, gpu=self.gpu if self.gpu.available else None)
        self.observer.trial_started(trial_number, role, settings.changed)
        identity = process.start()
        # The identity is in the database before we wait on the server, so a later
        # run can find and stop it if this process dies (kill -9, lost terminal).
        launch_id = self.store.add_launch(
            study=self.space.study_name,
            trial_id=trial_id,
            trial_number=trial_number,
            role=role,
            fidelity=fidelity,
            config_hash=settings.config_hash,
            params=dict(settings.params),
            env=env,
            unset_env=sorted(unset),
            argv=argv,
            port=port,
            pid=identity.pid,
            pgid=identity.pgid,
            create_time=identity.create_time,
            cmdline=list(identity.cmdline),
            marker=identity.marker,
            log_path=str(launch.log_path),
        )
        status = LaunchStatus.FAILED
        reason: str | None = "interrupted"
        outcome: LaunchOutcome | None = None
        phases_read = False
        try:
            seconds = process.wait_healthy(
                on_progress=lambda p: self.observer.load_progress(trial_number, p.percent, p.line)
            )
            # The load's phases, from the log as it stands now: the benchmark adds nothing.
            self.store.update_launch(
                launch_id,
                seconds_to_healthy=seconds,
                load_phases=read_load_phases(launch.log_path, seconds),
            )
            phases_read = True
            self.observer.healthy(trial_number, seconds)
            outcome = self._benchmark(
                process, launch_id, trial_number, prune_check, self.spec.benchmark_for(fidelity)
            )
            outcome = dataclasses.replace(outcome, seconds_to_healthy=seconds)
            status = LaunchStatus.PRUNED if outcome.pruned_reason else LaunchStatus.COMPLETE
            reason = outcome.pruned_reason
            return outcome
        except LaunchError as exc:
            _scrub_error(exc, hide)
            reason = exc.reason
            raise
        except BenchmarkError as exc:
            _scrub_error(exc, hide)
            reason = f"benchmark failed: {exc}"
            if not process.is_running():
                reason += f" (server exited with code {process.exit_code()})"
            raise
        except Terminated as exc:  # SIGTERM/SIGHUP: a Ctrl-C that names its signal
            reason = exc.reason
            raise
        except Exception as exc:  # a bug of ours: record it truthfully, then let it surface
            reason = f"internal error: {exc!r}"
            raise
        finally:
            self.observer.stopping(trial_number)
            report, again = _stop_keeping_interruption(process)
            # The server may print a secret it was given (an old vLLM logs its --api-key):
            # what is stored and shown of its log has the values hidden.
            fields: dict[str, Any] = dict(
                status=status,
                reason=scrub(reason, hide) if reason else reason,
                log_tail=scrub(process.log_tail(60), hide),
                cleanup_ok=left_nothing_behind(report),
                cleanup=plain_dict(report),
                finished_at=utcnow(),
            )
            if not phases_read:  # never healthy: the phases it went through before it failed
                fields["load_phases"] = read_load_phases(launch.log_path, None)
            if outcome is not None:
                fields.update(
                    objective_mean=outcome.mean,
                    objective_se=stats.mean_se(outcome.round_values)[1],
                    objective_rounds=list(outcome.round_values),
                    rounds_done=len(outcome.round_values),
                )
            self.store.update_launch(launch_id, **fields)
            if report.problems:
                what = "left something behind" if not fields["cleanup_ok"] else "needed force"
                self.observer.message(
                    f"trial {trial_number}: server stop {what}: {'; '.join(report.problems)}"
                )
            if again is not None:
                raise again

    def _benchmark(
        self,
        process: ServerProcess,
        launch_id: int,
        trial_number: int,
        prune_check: PruneCheck | None,
        benchmark: BenchmarkSpec,
    ) -> LaunchOutcome:
        """Every round of every level of ``benchmark`` (the launch's fidelity's: a screening
        launch may run fewer); the objective's value per round; pruning between."""
        spec = self.spec
        base_url = process.url  # IPv6 in brackets; a wildcard bind reached on loopback
        if not self._inventory_done:
            self._record_inventory(base_url, process)
        model = benchmark.model or bench.discover_model(base_url)
        server_pid = process.pid
        assert server_pid is not None, "the server is started before it is benchmarked"
        monitor = LaunchMonitor(
            self.gpu,
            server_pid=server_pid,
            base_url=base_url,
            interval_s=self.options.telemetry_interval_s,
        )
        round_values: list[float] = []
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
                    summary = self._measure_level(
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
                        round_values.append(summary.metric(spec.objective.metric) / gpus)
                        headline = _headline(summary)
                if benchmark.capacity is not None:
                    measure = partial(
                        self._measure_level,
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

    def _measure_level(
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

    def _record_inventory(self, base_url: str, process: ServerProcess) -> None:
        hide = secret_values(process.spec.argv, process.spec.child_env())
        inventory = telemetry.collect_inventory(
            self.gpu, base_url=base_url, log_text=scrub(process.log_tail(400), hide)
        )
        self.store.update_study(self.space.study_name, inventory=inventory.to_dict())
        self._inventory_done = True


def _stop_keeping_interruption(process: ServerProcess) -> tuple[StopReport, BaseException | None]:
    """Stop the server; a second Ctrl-C or signal during the stop is held, not lost.

    ServerProcess.stop then kills what is left at once, keeps its report and re-raises;
    the launch row still gets its final status before the interruption goes on.
    """
    try:
        return process.stop(), None
    except BaseException as exc:  # noqa: BLE001 - the caller re-raises it after the record
        return process.stop(), exc


def left_nothing_behind(report: StopReport) -> bool:
    """Whether the next trial can start: no process survived and the GPU memory came back.

    A SIGKILL that worked or a leftover /dev/shm file is worth a notice (the report
    keeps it) but leaves the GPUs free, so it does not mark the cleanup as failed.
    """
    return not report.survivors and report.gpu_memory_ok is not False


def read_load_phases(log_path: Path, seconds_to_healthy: float | None) -> dict[str, Any] | None:
    """The phases of a launch's load from its log (launcher/load_phases.py) and its KV cache's
    size, as stored in ``tuner_launches.load_phases``; None when the log names neither (or
    cannot be read)."""
    phases = load_phases(matching_lines(log_path, NEEDLES), healthy_s=seconds_to_healthy)
    return phases.to_json() if phases.said_anything else None


def launch_spec_for(
    space: Space,
    settings: Settings,
    *,
    port: int,
    trial_dir: Path,
    gpu: GpuBackend | None = None,
    screening: bool = False,
) -> LaunchSpec:
    """How to start the server for these settings: argv, env, unset variables, log file.

    ``screening``: a screening launch, the space's ``screening.args`` after the trial's and
    its ``screening.env`` over the rest (tuner/space/screening.py).

    The server's env is built here once; its ``CUDA_VISIBLE_DEVICES`` (or tuner's own)
    names the GPUs to watch, UUIDs resolved through ``gpu``. A secret param's real value
    goes in here, and only here (``launch_settings``).
    """
    settings = launch_settings(space, settings)
    server = space.spec.server
    names = {
        "trial_dir": str(trial_dir),
        "study_dir": str(trial_dir.parent),
        # The space file's folder: a model or script shipped beside the space (vllm-cpu.yaml).
        "space_dir": str(space.path.resolve().parent),
    }
    env = server_env(server, settings, port=port, **names)
    argv = server_argv(server, settings, port=port, **names)
    extra = space.spec.screening if screening else None
    if extra is not None:
        argv += list(extra.args)
        env.update(extra.env)
    return LaunchSpec(
        argv=argv,
        env=env,
        # `default` removes a variable from the inherited environment too, unless the
        # space's fixed env sets it on purpose.
        unset=frozenset(settings.unset - set(server.env) - set(extra.env if extra else ())),
        host=server.host,
        port=port,
        health_path=server.health_path,
        startup_timeout_s=server.startup_timeout_s,
        stop_timeout_s=server.stop_timeout_s,
        log_path=trial_dir / "server.log",
        cpus=server.cpus,
        gpu_devices=server_gpus(env, gpu),
    )


def server_gpus(server_env: Mapping[str, str], gpu: GpuBackend | None) -> list[int] | None:
    """The GPUs a server with this env uses: its CUDA_VISIBLE_DEVICES, else tuner's own.

    None means every GPU (or the answer is unknown: check them all, the safe side).
    """
    value = server_env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    return parse_visible_devices(value, gpu)


def _scrub_error(exc: LaunchError | BenchmarkError, hide: set[str]) -> None:
    """Hide secret values in the error before it is recorded, shown or re-raised.

    In place, so the traceback stays the original one.
    """
    if isinstance(exc, LaunchError):
        exc.reason = scrub(exc.reason, hide)
        exc.log_tail = scrub(exc.log_tail, hide)
        exc.args = (exc.reason,)
    else:
        exc.args = tuple(scrub(str(a), hide) for a in exc.args)


def _headline(summary: LevelSummary) -> dict[str, float]:
    return {name: summary.metric(name) for name in HEADLINE_METRICS}


def _first_error(result: LevelResult) -> str:
    for record in result.records:
        if record.error:
            return str(record.error)
    return "no error recorded"
