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

import random
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import optuna
import sqlalchemy.exc

from tuner import stats
from tuner.check import check_space
from tuner.check.topology import TopologyReader
from tuner.errors import BenchmarkError, ConfigError, LaunchError, Terminated
from tuner.events import SweepObserver
from tuner.secrets import redact_space_text
from tuner.space import model_limits
from tuner.space.spec import Space
from tuner.storage import Store, health
from tuner.storage.health import remove_sqlite_files
from tuner.study import attrs, state
from tuner.study.policy.goal import goal_for
from tuner.study.run import queue
from tuner.study.run.controller import SweepController
from tuner.study.run.optuna_rdb import open_rdb, trial_id
from tuner.study.run.probe import SweepProbe
from tuner.study.run.probe_cache import ProbeRunner
from tuner.study.run.reader import trial_views
from tuner.study.run.recovery import recover_interrupted
from tuner.study.run.topology import prepare_topology
from tuner.study.run.trial import run_trial
from tuner.study.run.workers import Heartbeat, WorkerSession
from tuner.telemetry.fingerprint import Fingerprint, host_fingerprint
from tuner.telemetry.gpu import GpuBackend, NullGpuBackend
from tuner.telemetry.topology import read_topology as default_topology_reader
from tuner.trial.runner import Runner, RunnerOptions, TrialRunner


@dataclass(frozen=True)
class SweepOutcome:
    """How a sweep ended: the study, why it stopped (``stop_reason``), and its launches."""

    study_name: str
    stop_reason: str
    stop_detail: str
    launched: int


def open_study(
    storage: optuna.storages.BaseStorage,
    name: str,
    direction: stats.Direction | Sequence[stats.Direction],
    seed: int | None,
    metric: str | Sequence[str] | None = None,
) -> optuna.Study:
    """Create or load the optuna study; TPE seeded, our own stop logic; the objective named
    ``metric`` (optuna-dashboard shows the name instead of "Objective 0").

    Several objectives: ``direction`` and ``metric`` are sequences, one per objective; the
    study is optuna's multi-objective one (TPE models their Pareto front)."""
    directions = None if isinstance(direction, str) else list(direction)
    with warnings.catch_warnings():
        # multivariate TPE models interactions (NCCL_PROTO x channels); optuna still
        # labels it experimental, which is noise for our users.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=5, multivariate=True, group=True
        )
    for attempt in range(3):
        try:
            study = optuna.create_study(
                storage=storage,
                study_name=name,
                direction=direction if isinstance(direction, str) else None,
                directions=directions,
                sampler=sampler,
                load_if_exists=True,
            )
            name_objective(study, metric)
            return study
        except sqlalchemy.exc.IntegrityError:
            # Workers starting together on a fresh PostgreSQL race to create optuna's
            # tables; the loser retries and finds them made.
            if attempt == 2:
                raise
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")


def name_objective(study: optuna.Study, metric: str | Sequence[str] | None) -> None:
    """Name the study's objectives after their metrics, once (a stored name is kept)."""
    if metric is None or study.metric_names is not None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([metric] if isinstance(metric, str) else list(metric))


def run_sweep(
    space: Space,
    *,
    storage: str,
    n_trials: int,
    seed: int | None = None,
    observer: SweepObserver | None = None,
    gpu: GpuBackend | None = None,
    runner_options: RunnerOptions | None = None,
    runner: Runner | None = None,
    preflight: bool = True,
    probe_runner: ProbeRunner | None = None,
    worker_trials: int | None = None,
    split_by_host: bool = False,
    fingerprint: Fingerprint | None = None,
    heartbeat: Heartbeat | None = None,
    hours: float | None = None,
    read_topology: TopologyReader | None = None,
) -> SweepOutcome:
    """Run (or resume) the study until the budget, a plateau, Ctrl-C or SIGTERM/SIGHUP.

    ``runner`` replaces the real launcher + benchmark (tests, statistical benchmarks);
    by default a TrialRunner launches the space's server for each trial. ``probe_runner``
    replaces the space's probe command (tests). ``n_trials`` is the study's budget (all
    workers together: full launches, with a ``screening:`` section), ``worker_trials`` this
    worker's own, ``hours`` the study's hours of launches (None: no limit).
    ``split_by_host`` runs on the study ``NAME@FINGERPRINT`` of this host's hardware
    (``fingerprint``: this host's by default) instead of refusing a study that runs on
    other hardware. ``read_topology`` replaces NVML's reading of the GPUs' topology (tests;
    a space's ``topology:`` file is read in any case).
    """
    observer = observer or SweepObserver()
    gpu = gpu if gpu is not None else NullGpuBackend()
    fingerprint = fingerprint or host_fingerprint(gpu)
    if split_by_host:
        space = space.model_copy(update={"study_name": f"{space.study_name}@{fingerprint.digest}"})
    heartbeat = heartbeat or Heartbeat.from_env()
    if split_by_host:
        observer.message(
            f"--split-by-host: this host's kind of hardware ({fingerprint.describe()}) works "
            f"on study {space.study_name}"
        )
    store = Store(storage)
    # A damaged page anywhere: said now, before a launch writes more into the file.
    health.quick_check(store.engine, storage)
    new_study = store.study(space.study_name) is None
    try:
        # Refused here, before the study is touched: other hardware, a second SQLite worker.
        with WorkerSession(store, space.study_name, fingerprint, heartbeat) as session:
            return _run_joined(
                space,
                store,
                session,
                storage=storage,
                n_trials=n_trials,
                seed=seed,
                observer=observer,
                gpu=gpu,
                runner_options=runner_options,
                runner=runner,
                preflight=preflight,
                probe_runner=probe_runner,
                worker_trials=worker_trials,
                hours=hours,
                read_topology=read_topology,
            )
    except BaseException:
        if new_study:
            discard_unlaunched(storage, store, space.study_name)
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
    space: Space,
    store: Store,
    session: WorkerSession,
    *,
    storage: str,
    n_trials: int,
    seed: int | None,
    observer: SweepObserver,
    gpu: GpuBackend,
    runner_options: RunnerOptions | None,
    runner: Runner | None,
    preflight: bool,
    probe_runner: ProbeRunner | None,
    worker_trials: int | None,
    hours: float | None = None,
    read_topology: TopologyReader | None = None,
) -> SweepOutcome:
    # The model's config.json, when it is on this machine: configurations it rules out
    # are recorded as not launched instead of failing after a load.
    model_config = model_limits.load_model_config(space)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    name = space.study_name
    # The space as stored: its secret values (server.env HF_TOKEN, --api-key ...) as ***.
    space_text = redact_space_text(space.path.read_text())
    store.ensure_study(name, space_path=str(space.path), space_text=space_text)
    rdb = open_rdb(storage)
    study = _open_objectives(rdb, name, space, seed)
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
        read_topology or default_topology_reader,
        said=None if gpu.available else getattr(gpu, "reason", None),
    )
    if preflight and runner is None:
        # `tuner check` first: a bad flag or a misspelt NCCL variable fails in seconds,
        # not after a model load. An injected runner launches nothing: nothing to check.
        report = check_space(space, storage=storage, topology=topo)
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
    probe = SweepProbe.for_space(space, model_config, observer, probe_runner)
    if probe is not None:
        probe.prepare(study)
    if runner is None:
        runner = TrialRunner(space, store, gpu=gpu, observer=observer, options=runner_options)
    controller = SweepController(
        space,
        store,
        n_trials=n_trials,
        observer=observer,
        seed=seed,
        probe=probe,
        claims=claims,
        worker_trials=worker_trials,
        recover=recover,
        hours=hours,
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

    if state.full_launched(trial_views(study)) < n_trials:
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
            study, attrs.BUDGET, f"the budget of {n_trials} launches was already used"
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


def _open_objectives(
    storage: optuna.storages.BaseStorage, name: str, space: Space, seed: int | None
) -> optuna.Study:
    """The optuna study: one objective, or several (``objectives:``) named ``metric@level``."""
    direction, metric = goal_for(space.spec).optuna_objectives(space.spec)
    return open_study(storage, name, direction, seed, metric)
