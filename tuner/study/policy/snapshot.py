"""A snapshot of the study: everything the policy reads to decide what runs next.

Built once per decision by tuner/study/run/reader.py from optuna's trials, the
store's launches (tuner/study/facts/analysis.py) and the study's state; pure from here
on. ``with_queued`` and ``with_state`` give the snapshot as it will be once earlier parts
of the same decision are applied, so that each rule sees the launches decided before it
(a confirmation just decided is a pending check, as if it were already queued).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tuner.space.objectives import is_multi_objective
from tuner.space.spec import Scalar, SpaceSpec
from tuner.study import attrs
from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.facts.launch_times import LaunchCosts, LaunchTimes
from tuner.study.facts.limit_data import LimitData
from tuner.study.policy import probe_narrowing, screening
from tuner.study.policy.decisions import Launch
from tuner.study.policy.failed_before import FidelityLessons
from tuner.study.state import StudyState, TrialView, full_launched, launched


@dataclass(frozen=True)
class Snapshot:
    """The study as the policy sees it at one moment (see the module)."""

    spec: SpaceSpec
    facts: StudyAnalysis
    state: StudyState
    trials: tuple[TrialView, ...]
    budget: int
    """The study's launches in all workers (--trials)."""
    seed: int | None = None
    worker: str | None = None
    worker_budget: int | None = None
    """This worker's own launches (--worker-trials), when it has a budget."""
    stop_seen: str | None = None
    """The study's STOPPED_BY mark as this worker last knew it: a change is another's stop."""
    finished: int | None = None
    """The trial that just finished (None: the run is opening)."""
    idle_proposals: int = 0
    """Proposals in a row (this worker's) that launched nothing."""
    local_done: bool = False
    """The local search's last answer in this worker: nothing left to propose."""
    launch_times: LaunchTimes = field(default_factory=lambda: LaunchTimes(0, None, None))
    limit_data: tuple[LimitData, ...] = ()
    hours: float | None = None
    """The study's budget in hours (--hours): None, no limit on time."""
    costs: LaunchCosts = field(default_factory=LaunchCosts)
    """What the study's launches took: seconds spent, and a launch's cost per fidelity."""
    reserve_released: bool = False
    """The final comparison's reserve went to the search (no candidate for one when the
    budget was down to it): see ``releasing_reserve``."""

    # --- as the decision goes on ---------------------------------------------------------

    def with_queued(self, launches: Sequence[Launch]) -> Snapshot:
        """The snapshot once ``launches`` are queued: each a WAITING trial."""
        if not launches:
            return self
        new = list(self.trials)
        for launch in launches:
            for _ in range(launch.copies):
                new.append(
                    TrialView(
                        number=len(new),
                        state="WAITING",
                        role=launch.role,
                        proposer=launch.proposer,
                        config=launch.config,
                        fidelity=screening.fidelity(
                            self.spec, launch.role, launch.params, launch.fixed_fidelity
                        ),
                        params=dict(launch.params),
                        retry_of=launch.retry_of,
                    )
                )
        return dataclasses.replace(self, trials=tuple(new))

    def with_state(self, state: StudyState) -> Snapshot:
        return dataclasses.replace(self, state=state)

    # --- what the trials say ---------------------------------------------------------------

    @property
    def launched(self) -> int:
        """Launches run to the end in all workers (what --trials counts)."""
        return launched(self.trials)

    @property
    def committed(self) -> int:
        """Launches run, running or queued: what the budget has already given away."""
        return self.launched + sum(1 for t in self.trials if t.waiting or t.running)

    @property
    def full_launched(self) -> int:
        """Full launches run to the end: what --trials counts (every launch without screening)."""
        return full_launched(self.trials)

    @property
    def screen_launched(self) -> int:
        return launched(t for t in self.trials if t.screening)

    def committed_of(self, screening: bool) -> int:
        """Launches of one fidelity run, running or queued."""
        return sum(
            1
            for t in self.trials
            if t.screening == screening and (t.launched or t.waiting or t.running)
        )

    @property
    def full_left(self) -> int:
        """Full launches of --trials not yet run, running or queued."""
        return self.budget - self.committed_of(False)

    @property
    def final_reserve(self) -> int:
        """Full launches the budget keeps for the final comparison: both sides of its sized
        look (the cost plan's ``tuner_final_looks``; ``stop.final_launches`` a side before
        it), or of its first look where the budget cannot hold the sized one beside the
        opening and a search launch; none with several objectives, which have no final
        comparison, in a budget too small for even the first look (``--trials 2``: the
        launches asked for are made, and the answer says no final comparison ran), once
        released (``reserve_released``), or once the comparison was queued."""
        if is_multi_objective(self.spec) or self.reserve_released:
            return 0
        if any(t.role == attrs.FINAL for t in self.trials):
            return 0  # the comparison runs or ran: its next look asks for its own room
        stop, screening = self.spec.stop, self.spec.screening
        opening = stop.baseline_launches if screening is None else screening.baseline_launches
        looks = self.state.final.looks
        for side in (
            looks.sized if looks is not None else stop.final_launches,
            stop.final_launches,
        ):
            if self.budget >= opening + 1 + 2 * side:
                return 2 * side
        return 0

    def releasing_reserve(self) -> Snapshot:
        """The snapshot with the final comparison's reserve given to the search: the budget
        is down to it and the search has no candidate for a comparison."""
        return dataclasses.replace(self, reserve_released=True)

    def within_hours(self, more_s: float) -> bool:
        """Whether ``more_s`` more seconds of launches, at their measured cost, keep the
        study within --hours (always, without it)."""
        return self.hours is None or self.costs.spent_s + more_s <= self.hours * 3600

    def has_room(self, params: Mapping[str, Scalar], copies: int = 1) -> bool:
        """Whether ``copies`` more launches of ``params`` (a check: confirm, simplify) fit
        in the budget of their fidelity: screening.max_launches, or --trials full loads
        less the final comparison's (``2 x stop.final_launches``)."""
        screening_spec = self.spec.screening
        if screening.fidelity(self.spec, attrs.CONFIRM, params) == attrs.SCREEN:
            assert screening_spec is not None
            # Queued and running ones count: the cap is on what the study gives away.
            return self.committed_of(True) + copies <= screening_spec.max_launches
        # The final comparison's full launches are never a check's: the answer needs them.
        return self.full_launched + copies + self.final_reserve <= self.budget

    def search_left(self) -> int:
        """Launches the search has left before the budget's final comparison: of screening
        (screening.max_launches) with a screening section, else of the budget less the
        final comparison's launches."""
        screening = self.spec.screening
        if screening is not None:
            return screening.max_launches - self.screen_launched
        return self.budget - self.launched - self.final_reserve

    def budget_spent(self) -> bool:
        """What is left of the budget is the final comparison's (full launches), or no
        screening launch is left to give."""
        if self.full_left <= self.final_reserve:
            return True
        screening = self.spec.screening
        return screening is not None and self.committed_of(True) >= screening.max_launches

    def launched_by(self, worker: str | None) -> int:
        return launched(t for t in self.trials if t.worker == worker)

    def tried(self) -> set[str]:
        """The configurations proposed so far: launched, queued, refused or repeated."""
        return {t.config for t in self.trials if t.config is not None}

    def count_of(self, config_hash: str) -> int:
        """Trials of a configuration, in any state."""
        return sum(1 for t in self.trials if t.config == config_hash)

    @property
    def waiting(self) -> bool:
        return any(t.waiting for t in self.trials)

    def waiting_configs(self) -> set[str | None]:
        return {t.config for t in self.trials if t.waiting}

    @property
    def checks_pending(self) -> bool:
        """A confirmation, simplification or final launch waits or runs (RUNNING: another
        worker may be measuring one now; this worker's own trial has finished by its
        decision)."""
        return any(t.role in attrs.CHECKS for t in self.trials if t.waiting or t.running)

    def search_trials_since_gain(self) -> int:
        last_gain = self.state.last_gain_trial
        if last_gain is None:
            return 0
        return sum(1 for t in self.trials if t.number > last_gain and _searched(t))

    def patience_used_up(self) -> bool:
        """``SpaceSpec.search_patience`` search trials have run without a significant gain
        (the plateau stop's condition, and the last look's before it)."""
        return self.search_trials_since_gain() >= self.spec.search_patience

    def confirmations_past_patience(self) -> int:
        """Confirmation launches since the search trial that used up the patience
        (``SpaceSpec.search_patience``), queued ones included."""
        last_gain = self.state.last_gain_trial
        if last_gain is None:
            return 0
        searched = looks = 0
        for trial in sorted(self.trials, key=lambda t: t.number):
            if trial.number <= last_gain:
                continue
            if trial.role == attrs.CONFIRM and searched >= self.spec.search_patience:
                looks += 1
            elif _searched(trial):
                searched += 1
        return looks

    # --- the space as the search walks it ------------------------------------------------------

    @property
    def frozen(self) -> frozenset[str]:
        """The params the search leaves at default: the probe's frozen ones, and those vLLM
        ignores on the study's GPUs."""
        return self.state.probe.frozen | self.state.ignored

    def failures(self) -> FidelityLessons | None:
        """What the study's failed launches refuse, per fidelity (None: the learning is
        off, ``search.learn_from_failures: false``)."""
        if not self.spec.search.learn_from_failures:
            return None
        return FidelityLessons(self.trials)

    @property
    def search_spec(self) -> SpaceSpec:
        """The space the local search walks: the probe's narrowing of it, if any."""
        return probe_narrowing.search_spec(self.spec, self.state.probe)

    def rng(self, stream: int = 0) -> np.random.Generator:
        """Seeded per decision by the trials so far (queued ones included), so a seeded
        study proposes the same whether resumed or not; ``stream`` keeps the draws of the
        futility check and the limit models apart from the proposal's."""
        if self.seed is None:
            return np.random.default_rng()
        n = len(self.trials)
        return np.random.default_rng([self.seed, n, stream] if stream else [self.seed, n])


def _searched(trial: TrialView) -> bool:
    """A search trial launched and finished: what the patience counts."""
    return trial.launched and trial.role == attrs.SEARCH and trial.finished
