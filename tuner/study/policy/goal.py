"""What a study optimises, as one type: one objective or several.

``Goal`` is what the policy asks of a study's objective, whatever its kind: how the
patience resets (``track``), what to confirm, the checks before the answer, the futility
stop, the search's proposals and the pruning of a running trial. ``SingleGoal``
(tuner/study/policy/single_goal.py) and ``ParetoGoal`` (pareto_goal.py) are its two
implementations; ``goal_for`` picks one from the space. Nothing else asks which kind a
study is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from tuner import stats
from tuner.space.objectives import is_multi_objective
from tuner.space.spec import SpaceSpec
from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.policy.decisions import Launch, Stop
from tuner.study.policy.pareto_goal import ParetoGoal
from tuner.study.policy.single_goal import PruneCheck, SingleGoal
from tuner.study.policy.snapshot import Snapshot


class Goal(Protocol):
    tpe_only: bool
    """optuna's TPE is the only proposer (no local search to wait for)."""

    def track(self, snap: Snapshot) -> tuple[Snapshot, list[str]]:
        """The state after the finished trial (a gain resets the patience), and what to say."""
        ...

    def confirmations(self, snap: Snapshot) -> list[Launch]:
        """The configurations to launch again before they can count."""
        ...

    def final_checks(self, snap: Snapshot) -> tuple[list[Launch], Snapshot]:
        """The launches worth making before the answer (none when none is due)."""
        ...

    def final_comparison(self, snap: Snapshot, trigger: Stop) -> tuple[list[Launch], Snapshot]:
        """The final comparison's launches before ``trigger`` is recorded (none: not due)."""
        ...

    def plateau_detail(self, snap: Snapshot) -> str: ...

    def futile_chance(self, snap: Snapshot) -> float | None:
        """The chance below which the search is futile now, or None (search on)."""
        ...

    def futile_detail(self, snap: Snapshot, chance: float) -> str: ...

    def proposal(self, snap: Snapshot) -> tuple[list[Launch], Snapshot, bool | None, list[str]]:
        """tuner's own next search launch (none: optuna's sampler proposes)."""
        ...

    def optuna_objectives(
        self, spec: SpaceSpec
    ) -> tuple[stats.Direction | list[stats.Direction], str | list[str]]:
        """The optuna study's direction(s) and objective name(s)."""
        ...

    def optuna_value(
        self, mean: float, per_objective: Callable[[], list[float]]
    ) -> float | list[float]:
        """What optuna is told of a launch (``per_objective``: its value of each objective)."""
        ...

    def reported_rounds(self, rounds: Sequence[float]) -> Sequence[float]: ...

    def prune_check(self, facts: StudyAnalysis) -> PruneCheck | None: ...


def goal_for(spec: SpaceSpec) -> Goal:
    """The goal of a space: several objectives with ``objectives:``, else one."""
    return ParetoGoal() if is_multi_objective(spec) else SingleGoal()
