"""The sweep: open (or resume) the study and run it until the policy stops it.

``run_sweep`` drives ``optuna.Study.optimize`` with one objective, ``run_trial``
(tuner/study/run/trial.py: settings from the trial, the refusals before any launch, then
one launch measured by the trial runner), and one callback, the ``SweepController``
(tuner/study/run/controller.py), which carries out what the policy decides comes next
and when to stop (tuner/study/policy/next_launch.py).
Before the first trial it joins the study as a worker (tuner/study/run/workers.py: same
hardware as the study's other workers, one live worker on SQLite, a heartbeat), recovers
what a dead worker left behind (tuner/study/run/recovery.py; again after every trial), runs
the pre-flight checks, and queues the baseline. Re-running the same command resumes the
same study; several workers on one PostgreSQL database share it (docs/distributed.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import optuna

from tuner.check import check_space
from tuner.errors import BenchmarkError, ConfigError, LaunchError, Terminated
from tuner.secrets import redact_space_text
from tuner.space import model_limits
from tuner.space.spec import Space
from tuner.storage import Store, health
from tuner.storage.health import remove_sqlite_files
from tuner.study import attrs, state
from tuner.study.run import queue
from tuner.study.run.controller import SweepController
from tuner.study.run.optuna_rdb import open_rdb, trial_id
from tuner.study.run.optuna_study import open_objectives
from tuner.study.run.probe import SweepProbe
from tuner.study.run.reader import trial_views
from tuner.study.run.recovery import recover_interrupted
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.topology import prepare_topology
from tuner.study.run.trial import run_trial
from tuner.study.run.workers import Heartbeat, WorkerSession
from tuner.telemetry.fingerprint import host_fingerprint
from tuner.telemetry.topology import read_topology as default_topology_reader
from tuner.trial.runner import TrialRunner


@dataclass(frozen=True)
class SweepOutcome:
    """How a sweep ended: the study, why it stopped (``stop_reason``), and its launches."""

    study_name: str
    stop_reason: str
    stop_detail: str
    launched: int


def run_sweep(space: Space, request: RunRequest, seams: Seams | None = None) -> SweepOutcome:
    """Run (or resume) the study until the budget, a plateau, Ctrl-C or SIGTERM/SIGHUP.

    ``request``: what `tuner run` asked (tuner/study/run/request.py); ``space`` is already
    under the study name it asked for (``RunRequest.named``). ``seams``: what the run talks
    to, each replaceable (tests, statistical benchmarks); by default a TrialRunner launches
    the space's server for each trial. With ``request.split_by_host`` the study is
    ``NAME@FINGERPRINT`` of this host's hardware instead of one that runs on other
    hardware being refused.
    """
    seams = seams or Seams()
    observer = seams.observer
    fingerprint = seams.fingerprint or host_fingerprint(seams.gpu)
    if request.split_by_host:
        space = space.model_copy(update={"study_name": f"{space.study_name}@{fingerprint.digest}"})
    heartbeat = seams.heartbeat or Heartbeat.from_env()
    if request.split_by_host:
        observer.message(
            f"--split-by-host: this host's kind of hardware ({fingerprint.describe()}) works "
            f"on study {space.study_name}"
        )
    store = Store(request.storage)
    # A damaged page anywhere: said now, before a launch writes more into the file.
    health.quick_check(store.engine, request.storage)
    new_study = store.study(space.study_name) is None
    try:
        # Refused here, before the study is touched: other hardware, a second SQLite worker.
        with WorkerSession(store, space.study_name, fingerprint, heartbeat) as session:
            return _run_joined(space, store, session, request, seams)
    except BaseException:
        if new_study:
            discard_unlaunched(request.storage, store, space.study_name)
        raise


def discard_unlaunched(storage: str, store: Store, name: str) -> bool:
    """Remove a study this run created and refused before its first launch (the check
    failed, a port was taken, Ctrl-C): no trial in optuna, no launch, no other worker.
    A SQLite file this run created, left holding no study, is removed too. Whether the
    study was removed; a failure to remove it is left unsaid (the refusal is the news).
    """
    try:
        rdb = open_rdb(storage)
        in_optuna = name in [s.study_name for s in optuna.get_all_study_summaries(rdb, False)]
        if in_optuna and optuna.load_study(study_name=name, storage=rdb).get_trials(deepcopy=False):
            return False
        if store.launches(name) or any(w.stopped_at is None for w in store.workers(name)):
            return False
        if in_optuna:
            optuna.delete_study(study_name=name, storage=rdb)
        store.delete_study(name)
        emptied = not store.study_names() and not optuna.get_all_study_summaries(rdb, False)
        if store.created_file and emptied:
            rdb.engine.dispose()  # type: ignore[attr-defined]
            store.engine.dispose()
            remove_sqlite_files(storage)
        return True
    except Exception:  # noqa: BLE001 - best effort, after the error the user must see
        return False


def _run_joined(
    space: Space, store: Store, session: WorkerSession, request: RunRequest, seams: Seams
) -> SweepOutcome:
    """The sweep once this worker has joined the study (see the module)."""
    observer, gpu, runner = seams.observer, seams.gpu, seams.runner
    # The model's config.json, when it is on this machine: configurations it rules out
    # are recorded as not launched instead of failing after a load.
    model_config = model_limits.load_model_config(space)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    name = space.study_name
    # The space as stored: its secret values (server.env HF_TOKEN, --api-key ...) as ***.
    space_text = redact_space_text(space.path.read_text())
    store.ensure_study(name, space_path=str(space.path), space_text=space_text)
    rdb = open_rdb(request.storage)
    study = open_objectives(rdb, name, space, request.seed)
    # A server left by a killed tuner may hold the port or GPUs the check looks at.
    reported: set[int] = set()

    def recover() -> None:
        recover_interrupted(
            study, rdb, store, observer, heartbeat=session.heartbeat, reported=reported
        )

    recover()
    # The GPUs' topology, stored with the study: the settings vLLM ignores on it are skipped.
    topo = prepare_topology(
        study,
        space,
        observer,
        seams.read_topology or default_topology_reader,
        said=None if gpu.available else getattr(gpu, "reason", None),
    )
    if request.preflight and runner is None:
        # `tuner check` first: a bad flag or a misspelt NCCL variable fails in seconds,
        # not after a model load. An injected runner launches nothing: nothing to check.
        report = check_space(space, storage=request.storage, topology=topo)
        for item in report.warnings:
            if item.key != "topology":  # said just above, with what it costs
                observer.message(f"check: {item.key}: {item.message}")
        if not report.ok:
            raise ConfigError(
                "\n".join(f"{space.path}: {i.key}: {i.message}" for i in report.errors)
            )
    claims = queue.Claims(
        store, name, session.worker, queued_in=study, grace_s=session.heartbeat.grace_s
    )

    # The probe (docs/probe.md): every NCCL setting measured in seconds, before any load.
    probe = SweepProbe.for_space(space, model_config, observer, seams.probe_runner)
    if probe is not None:
        probe.prepare(study)
    if runner is None:
        options = request.runner_options()
        runner = TrialRunner(space, store, gpu=gpu, observer=observer, options=options)
    controller = SweepController(
        space, store, request, observer, probe=probe, claims=claims, recover=recover
    )
    # The baseline, then what a resumed study left (confirmations, the next proposal).
    controller.open(study)

    def objective(trial: optuna.Trial) -> float | list[float]:
        return run_trial(
            trial,
            space,
            runner,
            controller,
            launch_trial_id=trial_id(rdb, name, trial.number),
            model_config=model_config,
            probe=probe,
            topology=topo.topology,
        )

    if state.full_launched(trial_views(study)) < request.trials:
        try:
            study.optimize(
                objective,
                n_trials=None,
                callbacks=[controller],
                catch=(LaunchError, BenchmarkError),
                gc_after_trial=False,
            )
        except Terminated as stop:  # SIGTERM/SIGHUP: optuna has marked the trial FAIL
            controller.finish(
                study,
                attrs.TERMINATED,
                f"stopped by {stop.signal_name}; run the same command to resume",
            )
            raise
        except KeyboardInterrupt:
            controller.finish(
                study, attrs.INTERRUPTED, "stopped by Ctrl-C; run the same command to resume"
            )
            raise
    else:
        controller.finish(
            study, attrs.BUDGET, f"the budget of {request.trials} launches was already used"
        )
    if controller.worker_stop is not None:
        reason, detail = controller.worker_stop
        return SweepOutcome(name, reason, detail, launched=launched(study))
    row = store.study(name)
    return SweepOutcome(
        study_name=name,
        stop_reason=(row.stop_reason if row else None) or attrs.BUDGET,
        stop_detail=(row.stop_detail if row else None) or "",
        launched=launched(study),
    )


def launched(study: optuna.Study) -> int:
    """Launches run to the end in all workers, of both fidelities."""
    return state.launched(trial_views(study))
