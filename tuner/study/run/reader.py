"""Reading the study for a decision: its facts (kept while its launches are unchanged) and
the snapshot the policy decides on.

The analysis of the store's launches (tuner/study/facts/analysis.py) is what every
decision, pruning check and trial verdict reads; ``FactsReader`` recomputes it, and each
limit's measurements (tuner/study/facts/limit_data.py), only when a launch was added or
changed since the last read, so a trial costs one or two analyses, not one per question.
``snapshot`` joins the facts with optuna's trials and the study's state
(tuner/study/state.py) into the policy's ``Snapshot``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import optuna

from tuner.space.spec import Space
from tuner.stats.looks import LookPlan
from tuner.storage import LaunchRow, Store
from tuner.study.facts.analysis import StudyAnalysis, analyze
from tuner.study.facts.launch_times import LaunchCosts, LaunchTimes, launch_costs, launch_times
from tuner.study.facts.limit_data import LimitData, limit_data
from tuner.study.policy.snapshot import Snapshot
from tuner.study.run.request import RunRequest
from tuner.study.state import StudyState, TrialView


class FactsReader:
    """The study's analysis, recomputed when its launches changed (see the module)."""

    def __init__(self, store: Store, space: Space) -> None:
        self.store = store
        self.space = space
        self._key: tuple[object, ...] | None = None
        self._facts: StudyAnalysis | None = None
        self._limits: tuple[LimitData, ...] | None = None
        self.rows: Sequence[LaunchRow] = ()
        self.looks: LookPlan | None = None
        """The final comparison's looks as the study sized them (set from its state)."""

    def facts(self) -> StudyAnalysis:
        rows = self.store.launches(self.space.study_name)
        key = tuple((r.id, r.status, r.finished_at, tuple(r.objective_rounds or ())) for r in rows)
        if self._facts is None or key != self._key:
            self._facts = analyze(self.store, self.space, rows=rows)
            self._limits = None
            self._key = key
        self.rows = rows
        return self._facts.with_looks(self.looks)

    def limit_data(self) -> tuple[LimitData, ...]:
        """Each limit's measurements (none without ``objective.subject_to``), read again
        only when the launches changed."""
        self.facts()
        if self._limits is None:
            self._limits = limit_data(self.store, self.space)
        return self._limits


def trial_views(study: optuna.Study) -> tuple[TrialView, ...]:
    """Every trial of the study as the decisions see it."""
    return tuple(
        TrialView.of(t.number, t.state.name, t.user_attrs) for t in study.get_trials(deepcopy=False)
    )


@dataclass
class WorkerMemory:
    """What one worker remembers between its decisions (not the study's: its own)."""

    idle_proposals: int = 0
    local_done: bool = False
    stop_seen: str | None = None


def snapshot(
    study: optuna.Study,
    reader: FactsReader,
    memory: WorkerMemory,
    request: RunRequest,
    *,
    worker: str | None,
    finished: int | None,
) -> Snapshot:
    """The study as the policy sees it now, with the budgets and seed ``request`` gives."""
    hours = request.hours
    state = StudyState.from_attrs(study.user_attrs)
    reader.looks = state.final.looks  # the answer's looks, as sized
    facts = reader.facts()
    trials = trial_views(study)
    times = launch_times(reader.rows) if not state.plan_said else LaunchTimes(0, None, None)
    return Snapshot(
        spec=reader.space.spec,
        facts=facts,
        state=state,
        trials=trials,
        budget=request.trials,
        seed=request.seed,
        worker=worker,
        worker_budget=request.worker_trials,
        stop_seen=memory.stop_seen,
        finished=finished,
        idle_proposals=memory.idle_proposals,
        local_done=memory.local_done,
        launch_times=times,
        limit_data=reader.limit_data(),
        hours=hours,
        # Read only where a decision uses them: the cost plan (once) and --hours.
        costs=launch_costs(reader.rows)
        if hours is not None or not state.plan_said
        else LaunchCosts(),
    )
