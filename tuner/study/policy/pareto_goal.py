"""Several objectives: the recommendable set, its confirmations, the plateau's sentence.

The goal of a study of ``objectives:``. There is no single incumbent to beat: the
patience resets when the *recommendable set* gains a member (a statistically
non-dominated configuration that beats the defaults on at least one objective and is
worse on none, tuner/stats/pareto.py), kept in the study's state so a resumed study or
another worker counts from the same point. Confirmations follow the front; there is no
local search, pruning, final check or futility stop, all of which model one objective:
optuna's multi-objective TPE proposes (docs/statistics.md, "Several objectives").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tuner import stats
from tuner.space.objectives import study_objectives
from tuner.space.spec import SpaceSpec
from tuner.study.facts.analysis import ConfigResult, StudyAnalysis
from tuner.study.facts.pareto import candidate, describe, front, judge_for, trusted
from tuner.study.policy.confirmations import SCREEN_CONFIDENCE
from tuner.study.policy.decisions import Launch, Stop
from tuner.study.policy.final_checks import confirm_launch
from tuner.study.policy.single_goal import PruneCheck
from tuner.study.policy.snapshot import Snapshot


class ParetoGoal:
    """The goal of a several-objective study (see the module)."""

    tpe_only = True
    """optuna's multi-objective TPE is the only proposer."""

    def track(self, snap: Snapshot) -> tuple[Snapshot, list[str]]:
        """Reset the patience when the recommendable set grows; the first measured baseline
        starts the count, as the incumbent does with one objective."""
        answer = front(snap.facts)
        if answer is None or snap.finished is None:
            return snap, []
        state = snap.state
        if state.last_gain_trial is None:
            state = state.replace(last_gain_trial=snap.finished)
        known = set(state.recommendable)
        new = [key for key in answer.recommendable if key not in known]
        if not new:
            return snap.with_state(state), []
        state = state.replace(
            recommendable=tuple(sorted(known | set(new))), last_gain_trial=snap.finished
        )
        messages = [
            "recommendable: "
            + describe(snap.facts, snap.facts.configs[key])
            + " (better than the defaults on an objective, worse on none)"
            for key in new
        ]
        return snap.with_state(state), messages

    def confirmations(self, snap: Snapshot) -> list[Launch]:
        waiting = snap.waiting_configs()
        message = (
            "looks better than the defaults on an objective and no trusted configuration "
            "dominates it; launching it again to confirm"
        )
        return [
            confirm_launch(snap, c.config_hash, c.params, f"trial {c.trials[-1]} {message}")
            for c in needs_confirmation(snap.facts)
            if c.config_hash not in waiting
        ]

    def final_checks(self, snap: Snapshot) -> tuple[list[Launch], Snapshot]:
        return [], snap  # both checks measure the gain on one objective

    def final_comparison(self, snap: Snapshot, trigger: Stop) -> tuple[list[Launch], Snapshot]:
        return [], snap  # not yet for a front: docs/statistics.md ("The final comparison")

    def plateau_detail(self, snap: Snapshot) -> str:
        n = len(snap.state.recommendable)
        return (
            f"the set of recommendable configurations ({n}: statistically non-dominated, better "
            f"than the defaults on an objective and worse on none) gained no member in "
            f"{snap.search_trials_since_gain()} trials"
        )

    def futile_chance(self, snap: Snapshot) -> float | None:
        return None  # the model of effects models one objective

    def futile_detail(self, snap: Snapshot, chance: float) -> str:
        raise AssertionError("no futility stop with several objectives")

    def proposal(self, snap: Snapshot) -> tuple[list[Launch], Snapshot, bool | None, list[str]]:
        return [], snap, None, []  # optuna's multi-objective TPE proposes

    def optuna_objectives(self, spec: SpaceSpec) -> tuple[list[stats.Direction], list[str]]:
        """optuna's multi-objective study: a direction and a name (metric@level) each."""
        objectives = study_objectives(spec)
        return [o.direction for o in objectives], [o.name for o in objectives]

    def optuna_value(
        self, mean: float, per_objective: Callable[[], list[float]]
    ) -> float | list[float]:
        """A launch's value of each objective: its mean over rounds at that level."""
        return per_objective()

    def reported_rounds(self, rounds: Sequence[float]) -> Sequence[float]:
        return ()  # optuna's multi-objective studies take no intermediate values

    def prune_check(self, facts: StudyAnalysis) -> PruneCheck | None:
        return None  # a launch slow on one objective may win another


def needs_confirmation(facts: StudyAnalysis) -> list[ConfigResult]:
    """Configurations to launch again: not yet trusted (or not yet decided) and possibly
    on the front.

    A configuration that looks better than the defaults on at least one objective (the
    screening test, SCREEN_CONFIDENCE) and that no trusted configuration dominates is
    launched again until it is trusted (1 + stop.confirmations launches), and then, up to
    stop.confirmation_cap, while no objective shows its gain at full confidence. A trade
    (better on one objective, worse on another) is confirmed too: it may be on the front.
    """
    stop = facts.space.spec.stop
    baseline = facts.baseline
    if stop.confirmations <= 0 or baseline is None:
        return []
    base = candidate(facts, baseline)
    if base is None:
        return []
    screen = judge_for(facts, confidence=min(SCREEN_CONFIDENCE, stop.confidence))
    full = judge_for(facts)
    front_now = trusted(facts)
    wanted = []
    for config in facts.configs.values():
        if config.is_baseline or facts.limit_status(config) == "infeasible":
            continue
        extra = len(config.launches) - 1
        if extra >= stop.confirmation_cap:
            continue
        this = candidate(facts, config)
        if this is None or not any(c.verdict == "better" for c in screen.versus(this, base)):
            continue
        if any(o.key != this.key and full.dominates(o, this) for o in front_now):
            continue
        decided = any(c.verdict == "better" for c in full.versus(this, base))
        if extra < stop.confirmations or not decided or not facts.eligible(config):
            wanted.append(config)
    return wanted
