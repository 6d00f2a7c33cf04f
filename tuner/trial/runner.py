"""One launch of the server for one trial: start, wait, benchmark, stop, record.

The runner owns the order of operations around a single server process and
makes sure every outcome (healthy and measured, pruned, failed to start, died
mid-benchmark, interrupted) ends with the server stopped and a row in the store
that says why. It does not decide anything: the sweep asks it to run a launch
and passes a ``prune_check`` that looks at the rounds measured so far. The pieces it
joins: ``launch_spec`` (how to start the server), ``rounds`` (the benchmark of a healthy
launch) and ``launch_record`` (the launch row's last update, secrets hidden).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tuner import telemetry
from tuner.errors import BenchmarkError, LaunchError, PortTakenError, Terminated
from tuner.events import SweepObserver
from tuner.launcher import ServerProcess, StopReport, ensure_gpus_idle, free_port
from tuner.launcher.load_metrics import load_metric_value
from tuner.secrets import private_dir, scrub, secret_values
from tuner.space.settings import Settings
from tuner.space.spec import BenchmarkSpec, Space
from tuner.storage import LaunchStatus, Store
from tuner.telemetry.gpu import GpuBackend
from tuner.telemetry.weights_disk import model_folder
from tuner.trial.launch_record import final_fields, read_load_phases, scrub_error
from tuner.trial.launch_spec import launch_spec_for, server_gpus
from tuner.trial.rounds import HEADLINE_METRICS, LaunchOutcome, LaunchRounds, PruneCheck
from tuner.vocabulary import is_load_metric

__all__ = [
    "HEADLINE_METRICS",
    "PORT_ATTEMPTS",
    "LaunchOutcome",
    "PruneCheck",
    "Runner",
    "RunnerOptions",
    "TrialRunner",
    "launch_spec_for",
    "read_load_phases",
    "server_gpus",
]

PORT_ATTEMPTS = 3
"""Launches of one trial whose port was taken before its server bound it, at most (the
race of ``server.port: auto``: a free port is picked, then bound seconds later)."""


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
            phases = read_load_phases(launch.log_path, seconds)
            self.store.update_launch(launch_id, seconds_to_healthy=seconds, load_phases=phases)
            phases_read = True
            self.observer.healthy(trial_number, seconds)
            outcome = self._benchmark(
                process,
                launch_id,
                trial_number,
                prune_check,
                self.spec.benchmark_for(fidelity),
                self._load_value(seconds, phases),
            )
            outcome = dataclasses.replace(outcome, seconds_to_healthy=seconds)
            status = LaunchStatus.PRUNED if outcome.pruned_reason else LaunchStatus.COMPLETE
            reason = outcome.pruned_reason
            return outcome
        except LaunchError as exc:
            scrub_error(exc, hide)
            reason = exc.reason
            raise
        except BenchmarkError as exc:
            scrub_error(exc, hide)
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
            fields = final_fields(
                process,
                report,
                status=status,
                reason=reason,
                hide=hide,
                outcome=outcome,
                phases_read=phases_read,
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
        load_value: float | None,
    ) -> LaunchOutcome:
        """The study's inventory once (from its first healthy server), then the rounds."""
        if not self._inventory_done:
            self._record_inventory(process.url, process)
        rounds = LaunchRounds(
            self.spec,
            self.store,
            self.observer,
            self.gpu,
            telemetry_interval_s=self.options.telemetry_interval_s,
        )
        return rounds.run(process, launch_id, trial_number, prune_check, benchmark, load_value)

    def _load_value(self, seconds: float, phases: dict[str, Any] | None) -> float | None:
        """The objective's value when it is the launch's load (None: it is a level's
        figure); BenchmarkError when the log did not say the phase it names."""
        metric = self.spec.objective.metric
        if not is_load_metric(metric):
            return None
        value = load_metric_value(metric, seconds, phases)
        if value is None:
            raise BenchmarkError(
                f"objective {metric}: the server's log said no phase of its load (the lines "
                'tuner reads: docs/launcher.md, "The phases of a load"); use time_to_healthy_s'
            )
        return value

    def _record_inventory(self, base_url: str, process: ServerProcess) -> None:
        hide = secret_values(process.spec.argv, process.spec.child_env())
        # The model's weights on this machine (bytes, filesystem) explain a load
        # (tuner/study/facts/load_explained.py).
        inventory = telemetry.collect_inventory(
            self.gpu,
            base_url=base_url,
            log_text=scrub(process.log_tail(400), hide),
            weights_dir=model_folder(self.space),
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
