"""The sweep: open (or resume) the study and run it until the controller stops it.

``run_sweep`` drives ``optuna.Study.optimize`` with one objective, ``run_trial`` (settings
from the trial, refusals before any launch, then one launch measured by the trial
runner, tuner/trial/runner.py), and one callback, the ``SweepController``
(tuner/study/controller.py), which decides what comes next and when to stop.
Before the first trial it joins the study as a worker (tuner/study/workers.py: same
hardware as the study's other workers, one live worker on SQLite, a heartbeat), recovers
what a dead worker left behind (tuner/study/recovery.py; again after every trial), runs
the pre-flight checks, and queues the baseline. Re-running the same command resumes the
same study; several workers on one PostgreSQL database share it (docs/distributed.md).
"""

from __future__ import annotations

import random
import socket
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import optuna
import sqlalchemy.exc

from tuner import stats
from tuner.check import check_space
from tuner.errors import BenchmarkError, ConfigError, LaunchError, Terminated
from tuner.events import SweepObserver
from tuner.secrets import redact_space_text
from tuner.space import model_limits
from tuner.space.objectives import is_multi_objective, study_objectives
from tuner.space.settings import violated_constraints
from tuner.space.spec import Space
from tuner.storage import Store
from tuner.study import analysis, attrs, feasibility, limit_steering, queue, verdicts
from tuner.study.controller import SweepController
from tuner.study.objective_values import launch_means
from tuner.study.probing import ProbeRunner, SweepProbe
from tuner.study.recovery import recover_interrupted
from tuner.study.storage import open_storage, trial_id
from tuner.study.suggest import suggest
from tuner.study.workers import Heartbeat, WorkerSession, worker_id
from tuner.telemetry.fingerprint import Fingerprint, host_fingerprint
from tuner.telemetry.gpu import GpuBackend, NullGpuBackend
from tuner.trial.runner import Runner, RunnerOptions, TrialRunner


@dataclass(frozen=True)
class SweepResult:
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
) -> SweepResult:
    """Run (or resume) the study until the budget, a plateau, Ctrl-C or SIGTERM/SIGHUP.

    ``runner`` replaces the real launcher + benchmark (tests, statistical benchmarks);
    by default a TrialRunner launches the space's server for each trial. ``probe_runner``
    replaces the space's probe command (tests). ``n_trials`` is the study's budget (all
    workers together), ``worker_trials`` this worker's own. ``split_by_host`` runs on the
    study ``NAME@FINGERPRINT`` of this host's hardware (``fingerprint``: this host's by
    default) instead of refusing a study that runs on other hardware.
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
        )


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
) -> SweepResult:
    # The model's config.json, when it is on this machine: configurations it rules out
    # are recorded as not launched instead of failing after a load.
    model_config = model_limits.load_model_config(space)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    name = space.study_name
    # The space as stored: its secret values (server.env HF_TOKEN, --api-key ...) as ***.
    space_text = redact_space_text(space.path.read_text())
    store.ensure_study(name, space_path=str(space.path), space_text=space_text)
    optuna_storage = open_storage(storage)
    study = _open_objectives(optuna_storage, name, space, seed)
    # A server left by a killed tuner may hold the port or GPUs the check looks at.
    reported: set[int] = set()

    def recover() -> None:
        recover_interrupted(
            study, optuna_storage, store, observer, heartbeat=session.heartbeat, reported=reported
        )

    recover()
    if preflight and runner is None:
        # `tuner check` first: a bad flag or a misspelt NCCL variable fails in seconds,
        # not after a model load. An injected runner launches nothing: nothing to check.
        report = check_space(space, storage=storage)
        for item in report.warnings:
            observer.message(f"check: {item.key}: {item.message}")
        if not report.ok:
            raise ConfigError(
                "\n".join(f"{space.path}: {i.key}: {i.message}" for i in report.errors)
            )
    claims = queue.Claims(store, name, session.worker)
    queue.enqueue_baselines(study, space, claims)
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
    )
    controller.stop_seen = study.user_attrs.get(attrs.STOPPED_BY)
    result = analysis.analyze(store, space)
    controller.queue_confirmations(study, result)
    controller.queue_proposal(study, result)  # a resumed study goes on where it was

    def objective(trial: optuna.Trial) -> float | list[float]:
        return run_trial(
            trial,
            space,
            runner,
            controller,
            launch_trial_id=trial_id(optuna_storage, name, trial.number),
            model_config=model_config,
            probe=probe,
        )

    if controller.launched(study) < n_trials:
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
                "terminated",
                f"stopped by {stop.signal_name}; run the same command to resume",
            )
            raise
        except KeyboardInterrupt:
            controller.finish(
                study, "interrupted", "stopped by Ctrl-C; run the same command to resume"
            )
            raise
    else:
        controller.finish(study, "budget", f"the budget of {n_trials} launches was already used")
    if controller.worker_stop is not None:
        reason, detail = controller.worker_stop
        return SweepResult(name, reason, detail, launched=controller.launched(study))
    row = store.study(name)
    return SweepResult(
        study_name=name,
        stop_reason=(row.stop_reason if row else None) or "budget",
        stop_detail=(row.stop_detail if row else None) or "",
        launched=controller.launched(study),
    )


def run_trial(
    trial: optuna.Trial,
    space: Space,
    runner: Runner,
    controller: SweepController,
    *,
    launch_trial_id: int | None = None,
    model_config: Mapping[str, Any] | None = None,
    probe: SweepProbe | None = None,
) -> float | list[float]:
    """The objective: settings from the trial, then launch and measure them.

    ``launch_trial_id`` is optuna's storage-wide id of the trial, kept on the launch row.
    With several objectives it returns one value per objective (the launch's mean over its
    rounds at that objective's level), and neither reports rounds nor prunes: optuna's
    multi-objective studies take neither.
    """
    multi = is_multi_objective(space.spec)
    spec = space.spec
    role: attrs.Role = trial.user_attrs.get(attrs.ROLE, attrs.SEARCH)
    trial.set_user_attr(attrs.WORKER, controller.worker or worker_id())
    trial.set_user_attr(attrs.HOST, socket.gethostname())
    if controller.store.fingerprint is not None:
        trial.set_user_attr(attrs.FINGERPRINT, controller.store.fingerprint)
    settings = suggest(trial, spec)
    trial.set_user_attr(attrs.PARAMS, dict(settings.params))
    trial.set_user_attr(attrs.CONFIG, settings.config_hash)
    if role == attrs.SEARCH:
        trial.set_user_attr(attrs.ROLE, role)
        if attrs.PROPOSER not in trial.user_attrs:
            trial.set_user_attr(attrs.PROPOSER, "tpe")
    broken = violated_constraints(spec, settings.params)
    if broken:
        _not_launched(trial, f"violates constraint {broken[0]}; not launched")
    refused = model_limits.settings_refusal(space, model_config, settings)
    if refused:
        _not_launched(trial, f"cannot start with this model: {refused}; not launched")
    if role == attrs.SEARCH and attrs.RETRY_OF not in trial.user_attrs:
        previous = controller.previous_trial_of(trial.study, settings.config_hash, trial.number)
        if previous is not None:
            _not_launched(trial, f"same configuration as trial {previous}; not launched again")
        # The probe: a slower all-reduce, or a param it froze, is not worth a model load.
        refused = probe.refusal(trial, settings) if probe is not None else None
        if refused:
            _not_launched(trial, refused)
        if trial.user_attrs.get(attrs.PROPOSER) == "tpe":  # the local search's are screened
            steered = limit_steering.refusal(controller.store, space, settings.params, trial.number)
            if steered:
                _not_launched(trial, steered)
    trial.set_user_attr(attrs.LAUNCHED, True)
    prune_check = (
        controller.prune_check(trial.study) if role == attrs.SEARCH and not multi else None
    )
    try:
        outcome = runner.run(
            trial_id=launch_trial_id,
            trial_number=trial.number,
            role=role,
            settings=settings,
            prune_check=prune_check,
        )
    except (LaunchError, BenchmarkError) as exc:
        reason = getattr(exc, "reason", None) or str(exc)
        trial.set_user_attr(attrs.REASON, reason)
        trial.set_user_attr(attrs.VERDICT, f"failed: {reason}")
        raise
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM/SIGHUP as Terminated
        trial.set_user_attr(
            attrs.REASON, str(stop) if isinstance(stop, Terminated) else "interrupted"
        )
        raise
    for step, value in enumerate(() if multi else outcome.round_values):
        trial.report(value, step)
    for key, value in outcome.headline.items():
        trial.set_user_attr(key, value)
    if outcome.seconds_to_healthy is not None:
        trial.set_user_attr(attrs.SECONDS_TO_HEALTHY, round(outcome.seconds_to_healthy, 2))
    if outcome.pruned_reason:
        trial.set_user_attr(attrs.REASON, outcome.pruned_reason)
        trial.set_user_attr(attrs.VERDICT, outcome.pruned_reason)  # "pruned after ..."
        raise optuna.TrialPruned(outcome.pruned_reason)
    if spec.objective.subject_to:
        _record_limits(trial, space, controller, outcome.launch_id)
    # The launch row is complete: the study's analysis now counts it.
    verdict = verdicts.measured_verdict(
        analysis.analyze(controller.store, space), settings.config_hash
    )
    if verdict is not None:
        trial.set_user_attr(attrs.VERDICT, verdict)
    if multi:
        objectives = study_objectives(spec)
        return launch_means(controller.store, outcome.launch_id, objectives)
    return outcome.mean


def _open_objectives(
    storage: optuna.storages.BaseStorage, name: str, space: Space, seed: int | None
) -> optuna.Study:
    """The optuna study: one objective, or several (``objectives:``) named ``metric@level``."""
    spec = space.spec
    if not is_multi_objective(spec):
        return open_study(storage, name, spec.direction, seed, spec.objective.metric)
    objectives = study_objectives(spec)
    return open_study(
        storage, name, [o.direction for o in objectives], seed, [o.name for o in objectives]
    )


def _record_limits(
    trial: optuna.Trial, space: Space, controller: SweepController, launch_id: int
) -> None:
    """This launch against each limit (value minus limit, <= 0 meets it) as optuna's trial
    constraints, which its samplers read, and as a user attr, which optuna-dashboard shows."""
    values = feasibility.optuna_values(controller.store, space, launch_id)
    named = dict(zip(space.spec.objective.subject_to, values, strict=True))
    for text, value in named.items():
        trial.set_constraint(text, value)
    trial.set_user_attr(attrs.CONSTRAINTS, named)


def _not_launched(trial: optuna.Trial, reason: str) -> NoReturn:
    trial.set_user_attr(attrs.LAUNCHED, False)
    trial.set_user_attr(attrs.REASON, reason)
    trial.set_user_attr(attrs.VERDICT, reason)  # every such reason ends "not launched"
    raise optuna.TrialPruned(reason)
