"""The stop rules: each a function of the snapshot, a ``Stop`` or None.

In the style of guidellm's scheduler constraints: one function per reason to stop, each
saying why in one sentence. ``study_rules`` (a step of tuner/study/policy/next_launch.py)
asks them in the order of ``STUDY_RULES``; the first that fires decides, except that a
plateau or the futility stop gives way to the checks before the answer while any is due,
and any stop of the study to the final comparison of a candidate. ``peer_stop`` and
``worker_budget`` stop this worker only: the study goes on with the others.
"""

from __future__ import annotations

from collections.abc import Callable

from tuner.study import attrs
from tuner.study.policy import exhaustion
from tuner.study.policy.decisions import Decision, Stop
from tuner.study.policy.goal import Goal
from tuner.study.policy.snapshot import Snapshot
from tuner.study.state import StudyState

Rule = Callable[[Snapshot, Goal], "Stop | None"]


def peer_stop(state: StudyState, seen: str | None) -> Stop | None:
    """Another worker stopped the study since this worker saw its mark ``seen``."""
    marker = state.stopped_by
    if marker is None or marker == seen:
        return None
    who = str(marker).rsplit("#", 1)[0]
    detail = f"{state.stop_detail or ''} (stopped by worker {who})"
    return Stop(str(state.stop_reason or "stopped"), detail, whole_study=False)


def budget(snap: Snapshot, goal: Goal) -> Stop | None:
    """--trials full launches (every launch is full without screening), or the screening
    launches ``screening.max_launches``."""
    screening = snap.spec.screening
    if snap.full_launched >= snap.budget:
        return budget_stop(snap)
    if screening is not None and snap.screen_launched >= screening.max_launches:
        return Stop(
            attrs.BUDGET,
            f"used the screening budget of {screening.max_launches} launches "
            "(screening.max_launches)",
        )
    return None


def budget_stop(snap: Snapshot) -> Stop:
    """The budget's stop: --trials (full launches, with screening) used."""
    full = " full" if snap.spec.screening is not None else ""
    return Stop(attrs.BUDGET, f"used the budget of {snap.budget}{full} launches")


def hours(snap: Snapshot, goal: Goal) -> Stop | None:
    """--hours: the next launch, with the final comparison's full launches after it, would
    pass the study's hours at the measured cost of a launch of each fidelity."""
    limit = snap.hours
    if limit is None:
        return None
    costs = snap.costs
    full = costs.full.per_launch_s or 0.0
    screening = snap.spec.screening is not None
    next_s = (costs.screen.per_launch_s if screening else costs.full.per_launch_s) or 0.0
    reserve = snap.final_reserve * full
    if snap.within_hours(next_s + reserve):
        return None
    return Stop(
        attrs.BUDGET,
        f"the next launch would pass the budget of {limit:g} hours (--hours): "
        f"{costs.spent_s / 3600:.2f} h spent, {reserve / 3600:.2f} h kept for the final "
        "comparison's full launches",
    )


def all_failed(snap: Snapshot, goal: Goal) -> Stop | None:
    if snap.facts.all_failed(min_launches=snap.spec.stop.baseline_launches):
        return Stop(attrs.ALL_FAILED, "every launch failed; see `tuner trials` for the reasons")
    return None


def probe_froze_all(snap: Snapshot, goal: Goal) -> Stop | None:
    """The probe froze every param: nothing is left to search (never while a trial waits:
    the baseline's launches are made in any case)."""
    frozen = snap.state.probe.frozen
    if not frozen or snap.waiting or not frozen | snap.state.ignored >= set(snap.spec.params):
        return None
    sentence = snap.state.probe.sentence or "the probe froze every param"
    return Stop(attrs.PROBE_FROZE_ALL, f"{sentence}; keep the defaults")


def exhausted(snap: Snapshot, goal: Goal) -> Stop | None:
    """Every configuration of the params left open has been tried (a small grid).

    Looked at once the probe has narrowed the space and no trial waits, or once the local
    search has nothing left (at once where TPE alone proposes) and no check is pending.
    """
    frozen = snap.frozen
    local_over = snap.local_done or _tpe_only(snap, goal)
    if not ((frozen and not snap.waiting) or (local_over and not snap.checks_pending)):
        return None
    grid = exhaustion.open_grid(snap.search_spec, frozen)
    if grid is None or not grid <= snap.tried():
        return None
    if frozen:
        detail = (
            f"every configuration left open has been tried ({len(grid)}; "
            f"no longer searched: {', '.join(sorted(frozen))})"
        )
    else:
        detail = f"every configuration of the space has been tried ({len(grid)})"
    return Stop(attrs.EXHAUSTED, detail)


def plateau(snap: Snapshot, goal: Goal) -> Stop | None:
    """``stop.patience`` search trials without a significant gain (``screening.patience``
    with screening: ``SpaceSpec.search_patience``) (while no check is
    pending: a confirmation may still reset the patience)."""
    if snap.checks_pending or not snap.patience_used_up():
        return None
    return Stop(attrs.PLATEAU, goal.plateau_detail(snap))


def futile(snap: Snapshot, goal: Goal) -> Stop | None:
    """The model of effects rules out every untried neighbour of the incumbent."""
    if snap.checks_pending:
        return None
    chance = goal.futile_chance(snap)
    if chance is None:
        return None
    return Stop(attrs.FUTILE, goal.futile_detail(snap, chance))


def idle_proposals(snap: Snapshot, goal: Goal) -> Stop | None:
    """Proposals in a row that launched nothing (repeats, constraint breaks): fewer are
    allowed once the local search has nothing left, or where TPE alone proposes."""
    local_over = snap.local_done or _tpe_only(snap, goal)
    limit = exhaustion.IDLE_AFTER_LOCAL if local_over else exhaustion.MAX_IDLE_PROPOSALS
    if snap.idle_proposals < limit:
        return None
    after = " after the local search had nothing left" if snap.local_done else ""
    return Stop(
        attrs.EXHAUSTED,
        f"{limit} proposals in a row were duplicates or broke constraints{after}: "
        "the space looks exhausted",
    )


def worker_budget(snap: Snapshot) -> Stop | None:
    """This worker used its own budget (--worker-trials)."""
    mine = snap.worker_budget
    if mine is None or snap.launched_by(snap.worker) < mine:
        return None
    return Stop(
        attrs.WORKER_BUDGET,
        f"this worker used its {mine} launches (--worker-trials); "
        "the study goes on with the other workers",
        whole_study=False,
    )


STUDY_RULES: tuple[Rule, ...] = (
    budget,
    hours,
    all_failed,
    probe_froze_all,
    exhausted,
    plateau,
    futile,
    idle_proposals,
)
"""The study's stop rules in the order they are asked."""
AFTER_CHECKS: frozenset[Rule] = frozenset({plateau, futile})
"""Rules that let the checks before the answer run first (tuner/study/policy/final_checks.py)."""


def study_rules(snap: Snapshot, goal: Goal) -> Decision | None:
    """The first of ``STUDY_RULES`` that fires decides; None: none fires.

    Under a rule of ``AFTER_CHECKS``, the checks before the answer while any is due: they
    are queued and the decision ends there (no search launch beside them; this worker's
    budget may still stop it, the other workers run them). Else a candidate's final
    comparison before the stop is recorded (tuner/study/policy/final_comparison.py). Else
    the study stops, and nothing decided before is worth a launch any more.
    """
    for rule in STUDY_RULES:
        stop = rule(snap, goal)
        if stop is None:
            continue
        if rule in AFTER_CHECKS:
            checks, snap = goal.final_checks(snap)
            if checks:
                mine = worker_budget(snap)
                return Decision(launches=tuple(checks), stop=mine, state=snap.state)
        final, snap = goal.final_comparison(snap, stop)
        if final:  # the answer's launches first; the stop is recorded once they are done
            return Decision(launches=tuple(final), state=snap.state)
        return Decision(stop=stop, state=snap.state)
    return None


def _tpe_only(snap: Snapshot, goal: Goal) -> bool:
    return goal.tpe_only or snap.spec.search.method != "local"
