"""The sweep: baseline launches, optuna proposals, confirmations, early stop, resume.

``run_sweep`` drives ``optuna.Study.optimize`` with one objective (launch the
server with the trial's settings and benchmark it) and one callback, the
``SweepController``, which after every trial re-reads the study's launches,
queues confirmation launches of configurations that look better than the best,
and stops the study (``study.stop()``) on a plateau, the budget, or total failure.
Re-running the same command resumes the same study.
"""

from __future__ import annotations

import os
import random
import socket
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
import psutil
import sqlalchemy.exc
from optuna.trial import FrozenTrial, TrialState

from tuner import launcher, stats
from tuner.space import model_limits as validity
from tuner.study import analysis, search
from tuner.check import check_space
from tuner.space.spec import Scalar, Space, SpaceSpec
from tuner.errors import BenchmarkError, ConfigError, LaunchError
from tuner.events import SweepObserver
from tuner.telemetry.gpu import GpuBackend, NullGpuBackend
from tuner.trial.runner import Runner, RunnerOptions, TrialRunner
from tuner.space.settings import (
    PARAMS_ATTR,
    ROLE_ATTR,
    baseline_params,
    optuna_params,
    settings_from_params,
    suggest,
    violated_constraints,
)
from tuner.storage.store import LaunchStatus, Store

HASH_ATTR = "tuner_config"
LAUNCHED_ATTR = "tuner_launched"
REASON_ATTR = "tuner_reason"
WORKER_ATTR = "tuner_worker"
INCUMBENT_ATTR = "tuner_incumbent"
"""Study attr: the configuration whose significant gains reset the patience."""
LAST_GAIN_ATTR = "tuner_last_gain_trial"
SIMPLIFIED_ATTR = "tuner_simplified"
"""Study attr: the best configurations a simpler form was already launched for."""
PROPOSER_ATTR = "tuner_proposer"
"""Trial attr of a search trial: ``local`` (tuner/study/search.py) or ``tpe`` (optuna's sampler)."""
MAX_IDLE_PROPOSALS = 50
"""Proposals in a row that launch nothing (duplicates, constraint breaks) before giving up."""


@dataclass(frozen=True)
class SweepResult:
    study_name: str
    stop_reason: str
    stop_detail: str
    launched: int


def worker_id() -> str:
    """This tuner process as other workers and later runs see it: ``host:pid:start``.

    The start time (psutil's create time, in centiseconds) tells a live worker from
    an unrelated process that got its pid after it died.
    """
    start = round(psutil.Process().create_time() * 100)
    return f"{socket.gethostname()}:{os.getpid()}:{start}"


def open_study(storage: str, name: str, direction: str, seed: int | None) -> optuna.Study:
    """Create or load the optuna study; TPE seeded, our own stop logic."""
    with warnings.catch_warnings():
        # multivariate TPE models interactions (NCCL_PROTO x channels); optuna still
        # labels it experimental, which is noise for our users.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=5, multivariate=True, group=True
        )
    for attempt in range(3):
        try:
            return optuna.create_study(
                storage=storage,
                study_name=name,
                direction=direction,
                sampler=sampler,
                load_if_exists=True,
            )
        except sqlalchemy.exc.IntegrityError:
            # Workers starting together on a fresh PostgreSQL race to create optuna's
            # tables; the loser retries and finds them made.
            if attempt == 2:
                raise
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")


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
) -> SweepResult:
    """Run (or resume) the study until the budget, a plateau, or Ctrl-C.

    ``runner`` replaces the real launcher + benchmark (tests, statistical benchmarks);
    by default a TrialRunner launches the space's server for each trial.
    """
    observer = observer or SweepObserver()
    gpu = gpu if gpu is not None else NullGpuBackend()
    spec = space.spec
    # The model's config.json, when it is on this machine: configurations it rules out
    # are recorded as not launched instead of failing after a load.
    model_config = validity.load_model_config(space)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    store = Store(storage)
    name = space.study_name
    store.ensure_study(name, space_path=str(space.path), space_text=space.path.read_text())
    study = open_study(storage, name, spec.direction, seed)
    # A server left by a killed tuner may hold the port or GPUs the check looks at.
    recover_interrupted(study, store, observer)
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
    enqueue_baselines(study, space)

    if runner is None:
        runner = TrialRunner(space, store, gpu=gpu, observer=observer, options=runner_options)
    controller = SweepController(space, store, n_trials=n_trials, observer=observer, seed=seed)
    result = analysis.analyze(store, space)
    controller.queue_confirmations(study, result)
    controller.queue_proposal(study, result)  # a resumed study goes on where it was

    def objective(trial: optuna.Trial) -> float:
        return run_trial(trial, space, runner, controller, model_config=model_config)

    if controller.launched(study) < n_trials:
        try:
            study.optimize(
                objective,
                n_trials=None,
                callbacks=[controller],
                catch=(LaunchError, BenchmarkError),
                gc_after_trial=False,
            )
        except KeyboardInterrupt:
            controller.finish(
                study, "interrupted", "stopped by Ctrl-C; run the same command to resume"
            )
            raise
    else:
        controller.finish(study, "budget", f"the budget of {n_trials} launches was already used")
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
    model_config: Mapping[str, Any] | None = None,
) -> float:
    """The objective: settings from the trial, then launch and measure them."""
    spec = space.spec
    role = trial.user_attrs.get(ROLE_ATTR, "search")
    trial.set_user_attr(WORKER_ATTR, worker_id())
    settings = suggest(trial, spec)
    trial.set_user_attr(PARAMS_ATTR, dict(settings.params))
    trial.set_user_attr(HASH_ATTR, settings.config_hash)
    if role == "search":
        trial.set_user_attr(ROLE_ATTR, role)
        if PROPOSER_ATTR not in trial.user_attrs:
            trial.set_user_attr(PROPOSER_ATTR, "tpe")
    broken = violated_constraints(spec, settings.params)
    if broken:
        _not_launched(trial, f"violates constraint {broken[0]}; not launched")
    refused = validity.settings_refusal(space, model_config, settings)
    if refused:
        _not_launched(trial, f"cannot start with this model: {refused}; not launched")
    if role == "search":
        previous = controller.previous_trial_of(trial.study, settings.config_hash, trial.number)
        if previous is not None:
            _not_launched(trial, f"same configuration as trial {previous}; not launched again")
    trial.set_user_attr(LAUNCHED_ATTR, True)
    prune_check = controller.prune_check(trial.study) if role == "search" else None
    try:
        outcome = runner.run(
            trial_id=trial._trial_id,
            trial_number=trial.number,
            role=role,
            settings=settings,
            prune_check=prune_check,
        )
    except (LaunchError, BenchmarkError) as exc:
        trial.set_user_attr(REASON_ATTR, getattr(exc, "reason", None) or str(exc))
        raise
    except KeyboardInterrupt:
        trial.set_user_attr(REASON_ATTR, "interrupted")
        raise
    for step, value in enumerate(outcome.round_values):
        trial.report(value, step)
    for key, value in outcome.headline.items():
        trial.set_user_attr(key, value)
    if outcome.seconds_to_healthy is not None:
        trial.set_user_attr("seconds_to_healthy", round(outcome.seconds_to_healthy, 2))
    if outcome.pruned_reason:
        trial.set_user_attr(REASON_ATTR, outcome.pruned_reason)
        raise optuna.TrialPruned(outcome.pruned_reason)
    return outcome.mean


def _not_launched(trial: optuna.Trial, reason: str) -> None:
    trial.set_user_attr(LAUNCHED_ATTR, False)
    trial.set_user_attr(REASON_ATTR, reason)
    raise optuna.TrialPruned(reason)


def enqueue_baselines(study: optuna.Study, space: Space) -> None:
    """Queue the baseline until it has been (or is about to be) launched enough times."""
    wanted = space.spec.stop.baseline_launches
    have = sum(
        1
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get(ROLE_ATTR) == "baseline"
        and t.state in (TrialState.COMPLETE, TrialState.WAITING)
    )
    params = baseline_params(space.spec)
    for _ in range(wanted - have):
        enqueue_launch(study, space.spec, params, "baseline")


def enqueue_launch(
    study: optuna.Study,
    spec: SpaceSpec,
    params: Mapping[str, Scalar],
    role: str,
    attrs: Mapping[str, object] | None = None,
) -> None:
    """Queue one launch of ``params`` in ``role`` (baseline, search, confirm, simplify)."""
    study.enqueue_trial(
        optuna_params(spec, params),
        user_attrs={ROLE_ATTR: role, PARAMS_ATTR: dict(params), **(attrs or {})},
        skip_if_exists=False,
    )


def cleanup(storage: str, study_name: str | None, observer: SweepObserver) -> int:
    """`tuner cleanup`: recover every study (or one) of a storage; the number of studies seen."""
    names = (
        [study_name]
        if study_name
        else [
            s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)
        ]
    )
    store = Store(storage)
    for name in names:
        recover_interrupted(optuna.load_study(study_name=name, storage=storage), store, observer)
    return len(names)


def recover_interrupted(study: optuna.Study, store: Store, observer: SweepObserver) -> None:
    """After a crash of tuner: stop servers it left behind, fail the trials it left RUNNING.

    Only launches of this host whose tuner process is gone are touched: with a shared
    PostgreSQL storage, other workers' running trials are alive and theirs.
    """
    host = socket.gethostname()
    for record in store.running_servers(study.study_name):
        if record.host != host or _worker_alive(study, record.trial_id):
            continue
        identity = launcher.ProcessIdentity(
            pid=record.pid or -1,
            pgid=record.pgid or -1,
            create_time=record.create_time or 0.0,
            cmdline=record.cmdline,
            hostname=record.host,
            marker=record.marker,
        )
        stopped = record.pid is not None and launcher.reap_leftover(identity, stop_timeout_s=30)
        store.update_launch(record.launch_id, status=LaunchStatus.FAILED, reason="interrupted")
        if stopped:
            observer.message(f"stopped server pid {record.pid} left by an interrupted run")
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get(WORKER_ATTR, "")
        if worker.split(":", 1)[0] == host and not _pid_alive(worker):
            study._storage.set_trial_user_attr(trial._trial_id, REASON_ATTR, "interrupted")
            study.tell(trial.number, state=TrialState.FAIL)
            observer.message(f"trial {trial.number} was interrupted; marked failed")


def _worker_alive(study: optuna.Study, trial_id: int | None) -> bool:
    if trial_id is None:
        return False
    try:
        trial = study._storage.get_trial(trial_id)
    except KeyError:
        return False
    return trial.state == TrialState.RUNNING and _pid_alive(trial.user_attrs.get(WORKER_ATTR, ""))


def _pid_alive(worker: str) -> bool:
    """Whether the tuner process named ``host:pid:start`` (see worker_id) still runs."""
    try:
        _, pid_text, start_text = worker.rsplit(":", 2)
        pid, start = int(pid_text), int(start_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        proc = psutil.Process(pid)
        return proc.is_running() and abs(round(proc.create_time() * 100) - start) <= 100
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


class SweepController:
    """The optuna callback that decides what comes next and when to stop."""

    def __init__(
        self,
        space: Space,
        store: Store,
        *,
        n_trials: int,
        observer: SweepObserver,
        seed: int | None = None,
    ) -> None:
        self.space = space
        self.seed = seed
        self.spec = space.spec
        self.store = store
        self.n_trials = n_trials
        self.observer = observer
        self._idle_proposals = 0

    # --- queries used by the objective ---------------------------------------------------

    def launched(self, study: optuna.Study) -> int:
        return sum(
            1
            for t in study.get_trials(deepcopy=False)
            if t.user_attrs.get(LAUNCHED_ATTR) and t.state != TrialState.RUNNING
        )

    def previous_trial_of(self, study: optuna.Study, config_hash: str, number: int) -> int | None:
        for t in study.get_trials(deepcopy=False):
            if (
                t.number != number
                and t.user_attrs.get(HASH_ATTR) == config_hash
                and t.user_attrs.get(LAUNCHED_ATTR)
            ):
                return t.number
        return None

    def prune_check(self, study: optuna.Study):  # type: ignore[no-untyped-def]
        """A function of the rounds so far: a reason to stop this trial early, or None."""
        result = analysis.analyze(self.store, self.space)
        best = result.best
        if best is None:
            return None

        def check(rounds: Sequence[float]) -> str | None:
            if stats.should_prune(
                rounds,
                best.estimate,
                direction=self.spec.direction,
                confidence=self.spec.stop.confidence,
                noise=result.noise,
            ):
                return (
                    f"pruned after {len(rounds)} round{'s' if len(rounds) != 1 else ''}: "
                    "cannot reach the best "
                    f"(trial {best.trials[0]}) at {self.spec.stop.confidence:.0%} confidence"
                )
            return None

        return check

    # --- the callback ----------------------------------------------------------------------

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.observer.trial_finished(trial.number, trial_line(trial, self.spec.objective.metric))
        launched_now = trial.user_attrs.get(LAUNCHED_ATTR, False)
        self._idle_proposals = 0 if launched_now else self._idle_proposals + 1
        result = analysis.analyze(self.store, self.space)
        self._save_noise(study, result)
        self._track_gain(study, result, trial)  # first: confirmations screen against it
        self.queue_confirmations(study, result)

        verdict = self._stop_verdict(study, result)
        if verdict is not None:
            self.finish(study, *verdict)
            study.stop()  # optuna's own way out of optimize(), after this callback
            return
        left = self.n_trials - self.launched(study)
        if left == 1 + self.spec.stop.confirmations and not self._confirmation_pending(study):
            # The budget's last launches go to the checks before the answer, if any.
            self._queue_final_checks(study, result)
        self.queue_proposal(study, result)  # only when nothing else waits

    def _stop_verdict(
        self, study: optuna.Study, result: analysis.StudyAnalysis
    ) -> tuple[str, str] | None:
        """(reason, sentence) when the sweep should stop now, else None."""
        if self.launched(study) >= self.n_trials:
            return "budget", f"used the budget of {self.n_trials} launches"
        if result.all_failed(min_launches=self.spec.stop.baseline_launches):
            return "all_failed", "every launch failed; see `tuner trials` for the reasons"
        if self._plateau(study) and not self._confirmation_pending(study):
            # A confirmation queued by this very trial may still reset the patience, and
            # the checks before the answer are worth their launches.
            if self._queue_final_checks(study, result):
                return None
            return "plateau", self._plateau_sentence(study, result)
        if self._idle_proposals >= MAX_IDLE_PROPOSALS:
            return "exhausted", (
                f"{MAX_IDLE_PROPOSALS} proposals in a row were duplicates or broke "
                "constraints: the space looks exhausted"
            )
        return None

    def finish(self, study: optuna.Study, reason: str, detail: str) -> None:
        self.store.update_study(study.study_name, stop_reason=reason, stop_detail=detail)
        study.set_user_attr("stop_reason", reason)
        study.set_user_attr("stop_detail", detail)

    def queue_confirmations(
        self, study: optuna.Study, result: analysis.StudyAnalysis | None = None
    ) -> None:
        """Launch again any configuration that looks better than the best but is unconfirmed."""
        result = result or analysis.analyze(self.store, self.space)
        waiting = {
            t.user_attrs.get(HASH_ATTR)
            for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        }
        incumbent = study.user_attrs.get(INCUMBENT_ATTR)
        for config in result.needs_confirmation(against=incumbent):
            if config.config_hash in waiting:
                continue
            enqueue_launch(
                study, self.spec, config.params, "confirm", {HASH_ATTR: config.config_hash}
            )
            self.observer.message(
                f"trial {config.trials[-1]} looks better than the best; "
                "launching it again to confirm"
            )

    def queue_proposal(self, study: optuna.Study, result: analysis.StudyAnalysis) -> None:
        """Queue the local search's next launch near the incumbent, unless a trial waits.

        Nothing is queued with ``search.method: tpe``, before the baseline is measured, or
        when every neighbour of the incumbent has been tried: optuna's TPE then proposes.
        """
        baseline = result.baseline
        if self.spec.search.method != "local" or baseline is None:
            return
        trials = study.get_trials(deepcopy=False)
        if any(t.state == TrialState.WAITING for t in trials):
            return
        incumbent = result.configs.get(study.user_attrs.get(INCUMBENT_ATTR, "")) or baseline
        tried = {t.user_attrs[HASH_ATTR] for t in trials if HASH_ATTR in t.user_attrs}
        params = search.propose(
            self.spec,
            result.observations(),
            incumbent.params,
            exclude=tried,
            rng=self._rng(study),
            min_gain=self.spec.stop.min_gain,
            max_changes=self.spec.search.max_changes,
            trials_left=self.spec.stop.patience - self._search_trials_since_gain(study),
        )
        if params is None:
            return
        enqueue_launch(study, self.spec, params, "search", {PROPOSER_ATTR: "local"})

    # --- internals -------------------------------------------------------------------------

    def _save_noise(self, study: optuna.Study, result: analysis.StudyAnalysis) -> None:
        if result.noise is None:
            return
        noise = result.noise_dict()
        self.store.update_study(study.study_name, noise=noise)
        study.set_user_attr("noise_between_launches_rel_sd", noise.get("rel_sd"))

    def _track_gain(
        self, study: optuna.Study, result: analysis.StudyAnalysis, trial: FrozenTrial
    ) -> None:
        """Remember the trial at which the best last improved beyond the noise."""
        best = result.best
        if best is None:
            return
        incumbent = study.user_attrs.get(INCUMBENT_ATTR)
        if incumbent is None:
            study.set_user_attr(INCUMBENT_ATTR, best.config_hash)
            study.set_user_attr(LAST_GAIN_ATTR, trial.number)
            return
        if best.config_hash != incumbent and result.significantly_better(
            best.config_hash, incumbent
        ):
            study.set_user_attr(INCUMBENT_ATTR, best.config_hash)
            study.set_user_attr(LAST_GAIN_ATTR, trial.number)
            self.observer.message(f"new best: trial {best.trials[0]} ({result.describe(best)})")

    def _search_trials_since_gain(self, study: optuna.Study) -> int:
        last_gain = study.user_attrs.get(LAST_GAIN_ATTR)
        if last_gain is None:
            return 0
        return sum(
            1
            for t in study.get_trials(deepcopy=False)
            if t.number > last_gain
            and t.user_attrs.get(LAUNCHED_ATTR)
            and t.user_attrs.get(ROLE_ATTR) == "search"
            and t.state.is_finished()
        )

    def _confirmation_pending(self, study: optuna.Study) -> bool:
        return any(
            t.user_attrs.get(ROLE_ATTR) in ("confirm", "simplify")
            for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        )

    def _queue_final_checks(self, study: optuna.Study, result: analysis.StudyAnalysis) -> bool:
        """Before the answer: launch a simpler form of the best, then settle a close call.

        True when launches were queued (the sweep goes on until they are done).
        """
        return self._queue_simplification(study, result) or self._queue_tiebreak(study, result)

    def _queue_simplification(self, study: optuna.Study, result: analysis.StudyAnalysis) -> bool:
        """Queue the best with its idle settings dropped (search.simplify), as many times as
        a confirmed configuration is launched; once per best configuration."""
        best = result.best
        launches = 1 + self.spec.stop.confirmations
        done = list(study.user_attrs.get(SIMPLIFIED_ATTR, []))
        if (
            best is None
            or best.is_baseline
            or best.config_hash in done
            or self.launched(study) + launches > self.n_trials
        ):
            return False
        study.set_user_attr(SIMPLIFIED_ATTR, [*done, best.config_hash])
        simpler = search.simplify(
            self.spec,
            result.observations(),
            best.params,
            rng=self._rng(study),
            min_gain=self.spec.stop.min_gain,
        )
        if simpler is None:
            return False
        config_hash = settings_from_params(self.spec, simpler).config_hash
        measured = result.configs.get(config_hash)
        if measured is not None:
            # Launched already (a search trial may have tried it): top it up to a trusted
            # count, unless what it showed is already significantly worse than the best.
            if result.compare(best, measured).verdict == "better":
                return False
            launches -= len(measured.launches)
        elif any(
            t.user_attrs.get(HASH_ATTR) == config_hash for t in study.get_trials(deepcopy=False)
        ):
            return False  # proposed before and not measured: refused, failed or pruned
        if launches <= 0:
            return False
        for _ in range(launches):
            enqueue_launch(study, self.spec, simpler, "simplify", {HASH_ATTR: config_hash})
        dropped = sorted(k for k, v in best.changed.items() if simpler.get(k) != v)
        self.observer.message(
            f"trying trial {best.trials[0]} without {', '.join(dropped)}, which look idle"
        )
        return True

    def _queue_tiebreak(self, study: optuna.Study, result: analysis.StudyAnalysis) -> bool:
        """When the recommendation trails the best by more than min_gain, yet not
        significantly, launch the less measured of the two again (up to the confirmation
        cap): the simplicity rule should not give away a real gain for want of data."""
        rec = result.recommendation()
        if rec is None or rec.recommended == rec.best:
            return False
        best, chosen = result.configs[rec.best], result.configs[rec.recommended]
        gap = result.compare(best, chosen).gain
        if gap <= self.spec.stop.min_gain or self.launched(study) >= self.n_trials:
            return False
        stop = self.spec.stop
        for config in sorted((chosen, best), key=lambda c: len(c.launches)):
            first = stop.baseline_launches if config.is_baseline else 1
            if len(config.launches) - first < stop.confirmation_cap:
                enqueue_launch(
                    study, self.spec, config.params, "confirm", {HASH_ATTR: config.config_hash}
                )
                self.observer.message(
                    f"launching trial {config.trials[0]} again: {result.describe(chosen)} "
                    f"trails {result.describe(best)} by {gap:.1%}, not yet significantly"
                )
                return True
        return False

    def _rng(self, study: optuna.Study) -> np.random.Generator:
        # Seeded per proposal, so a seeded study proposes the same whether resumed or not.
        n = len(study.get_trials(deepcopy=False))
        return np.random.default_rng(None if self.seed is None else [self.seed, n])

    def _plateau(self, study: optuna.Study) -> bool:
        return self._search_trials_since_gain(study) >= self.spec.stop.patience

    def _plateau_sentence(self, study: optuna.Study, result: analysis.StudyAnalysis) -> str:
        incumbent = result.configs.get(study.user_attrs.get(INCUMBENT_ATTR, ""))
        n = self._search_trials_since_gain(study)
        noise = result.noise_rel_sd()
        noise_text = f" (±{noise:.1%})" if noise is not None else ""
        who = f"trial {incumbent.trials[0]}" if incumbent else "the best"
        return f"no configuration beat {who} by more than the noise{noise_text} in {n} trials"


def trial_line(trial: FrozenTrial, metric: str) -> str:
    """One line per finished trial: number, role, state, value, what changed, why it failed."""
    params = trial.user_attrs.get(PARAMS_ATTR) or {}
    changed = {k: v for k, v in params.items() if v != "default"}
    what = " ".join(f"{k}={v}" for k, v in changed.items()) or "(defaults)"
    role = trial.user_attrs.get(ROLE_ATTR, "search")
    if trial.state == TrialState.COMPLETE and trial.value is not None:
        outcome = f"{metric}={trial.value:.4g}"
    else:
        outcome = trial.state.name.lower()
        reason = trial.user_attrs.get(REASON_ATTR)
        if reason:
            outcome += f": {reason}"
    return f"trial {trial.number:>3} {role:<8} {outcome}  {what}"
