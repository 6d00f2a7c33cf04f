"""One trial, the objective of ``study.optimize``: settings, the gate, one launch measured.

``run_trial`` takes the trial's settings (tuner/study/suggest.py), names its worker and
host, passes it through the refusals before a launch (tuner/study/gate.py: a refused
trial is PRUNED with its reason, never launched), then launches and measures it with the
trial runner (tuner/trial/runner.py) and records what optuna and optuna-dashboard show:
its rounds (for pruning), headline metrics, limits, and its verdict against the defaults.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import optuna

from tuner.errors import BenchmarkError, LaunchError, Terminated
from tuner.launcher.failure_cause import cause_of_error
from tuner.space.objectives import study_objectives
from tuner.space.settings import Settings
from tuner.space.spec import Space, SpaceSpec
from tuner.study import attrs, gate
from tuner.study.facts import feasibility
from tuner.study.facts.objective_values import launch_means
from tuner.study.policy import failed_before, screening, steering
from tuner.study.run import verdicts
from tuner.study.run.probe import SweepProbe
from tuner.study.run.reader import trial_views
from tuner.study.run.workers import worker_id
from tuner.study.state import full_launched
from tuner.study.suggest import suggest
from tuner.telemetry.topology import Topology
from tuner.trial.runner import Runner

if TYPE_CHECKING:
    from tuner.study.run.controller import SweepController


def previous_launch_of(study: optuna.Study, config_hash: str, number: int) -> int | None:
    """Another trial that launched the configuration ``config_hash``, if any."""
    for t in study.get_trials(deepcopy=False):
        if (
            t.number != number
            and t.user_attrs.get(attrs.CONFIG) == config_hash
            and t.user_attrs.get(attrs.LAUNCHED)
        ):
            return t.number
    return None


def run_trial(
    trial: optuna.Trial,
    space: Space,
    runner: Runner,
    controller: SweepController,
    *,
    launch_trial_id: int | None = None,
    model_config: Mapping[str, Any] | None = None,
    probe: SweepProbe | None = None,
    topology: Topology | None = None,
) -> float | list[float]:
    """The objective: settings from the trial, then launch and measure them.

    ``launch_trial_id`` is optuna's storage-wide id of the trial, kept on the launch row.
    With several objectives it returns one value per objective (the launch's mean over its
    rounds at that objective's level), and neither reports rounds nor prunes: optuna's
    multi-objective studies take neither.
    """
    spec = space.spec
    goal = controller.goal
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
            trial.set_user_attr(attrs.PROPOSER, attrs.TPE)
    proposer = trial.user_attrs.get(attrs.PROPOSER)
    candidate = gate.Candidate(
        settings=settings,
        role=role,
        proposer=proposer,
        retry=attrs.RETRY_OF in trial.user_attrs,
        previous=previous_launch_of(trial.study, settings.config_hash, trial.number),
    )
    refused = gate.refusal(
        space,
        candidate,
        model_config=model_config,
        # The probe: a slower all-reduce, or a param it froze, is not worth a model load.
        probe=(lambda: probe.refusal(trial, settings)) if probe is not None else None,
        limits=(lambda: _limit_refusal(controller, space, settings, trial.number))
        if spec.objective.subject_to
        else None,
        topology=topology,
        failed=(lambda: _failed_before(trial, spec, role, settings))
        if spec.search.learn_from_failures
        else None,
    )
    if refused:
        _not_launched(trial, refused)
    trial.set_user_attr(attrs.LAUNCHED, True)
    level = screening.fidelity(spec, role, settings.params, trial.user_attrs.get(attrs.FIDELITY))
    trial.set_user_attr(attrs.FIDELITY, level)
    if spec.screening is not None and level == attrs.FULL:
        launched = full_launched(trial_views(trial.study))
        reserved = screening.full_reserve_refusal(spec, role, launched, controller.request.trials)
        if reserved:
            _not_launched(trial, reserved)
    # With screening, a full search launch (a setting screening cannot judge) is not pruned
    # against screening rounds: the bias between the fidelities is not a loss.
    screened_study = spec.screening is not None
    searching = role == attrs.SEARCH and (level == attrs.SCREEN or not screened_study)
    prune_check = controller.prune_check() if searching else None
    try:
        outcome = runner.run(
            trial_id=launch_trial_id,
            trial_number=trial.number,
            role=role,
            settings=settings,
            prune_check=prune_check,
            fidelity=level,
        )
    except (LaunchError, BenchmarkError) as exc:
        reason = getattr(exc, "reason", None) or str(exc)
        trial.set_user_attr(attrs.REASON, reason)
        trial.set_user_attr(attrs.VERDICT, f"failed: {reason}")
        # what the search learns from (tuner/study/policy/failed_before.py)
        trial.set_user_attr(attrs.FAILURE_CAUSE, cause_of_error(exc))
        raise
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM/SIGHUP as Terminated
        trial.set_user_attr(
            attrs.REASON, str(stop) if isinstance(stop, Terminated) else "interrupted"
        )
        trial.set_user_attr(attrs.CUT_SHORT, True)  # not charged; runs again on resume
        trial.set_user_attr(attrs.FAILURE_CAUSE, cause_of_error(stop))
        raise
    for step, value in enumerate(goal.reported_rounds(outcome.round_values)):
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
    verdict = verdicts.measured_verdict(controller.facts(), settings.config_hash)
    if verdict is not None:
        trial.set_user_attr(attrs.VERDICT, verdict)
    mean = outcome.mean
    if screened_study and level == attrs.FULL:
        # optuna's sampler learns on the screening scale (tuner/study/facts/fidelity.py).
        facts = controller.facts()
        mean *= facts.fidelity.scale if facts.fidelity is not None else 1.0
    return goal.optuna_value(
        mean,
        lambda: launch_means(controller.store, outcome.launch_id, study_objectives(spec)),
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


def _limit_refusal(
    controller: SweepController, space: Space, settings: Settings, seed: int
) -> str | None:
    """A TPE proposal likely to break a limit (the local search's were steered already)."""
    data = controller.reader.limit_data()
    return steering.refusal(data, space.spec, settings.params, seed)


def _failed_before(
    trial: optuna.Trial, spec: SpaceSpec, role: attrs.Role, settings: Settings
) -> str | None:
    """What the study's failed launches refuse of this configuration, at its fidelity."""
    level = screening.fidelity(spec, role, settings.params, trial.user_attrs.get(attrs.FIDELITY))
    views = trial_views(trial.study)
    return failed_before.lessons(views, screening=level == attrs.SCREEN).refusal(settings.params)


def _not_launched(trial: optuna.Trial, reason: str) -> NoReturn:
    trial.set_user_attr(attrs.LAUNCHED, False)
    trial.set_user_attr(attrs.REASON, reason)
    trial.set_user_attr(attrs.VERDICT, reason)  # every such reason ends "not launched"
    raise optuna.TrialPruned(reason)
