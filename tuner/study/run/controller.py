"""The optuna callback: after every trial, read the study, ask the policy, carry it out.

``SweepController`` is the only callback of ``study.optimize``. After every trial it
says the trial's line, recovers what dead workers left (their trials failed, to be
launched again), reads the study (tuner/study/run/reader.py), lets the probe update its
finding (tuner/study/run/probe.py), asks the policy what runs next
(tuner/study/policy/next_launch.py) and applies the answer (tuner/study/run/apply.py);
on a stop of the whole study it records the end (``finish``) and marks it for the other
workers (tuner/study/run/peers.py). It also hands a running trial its pruning check.
"""

from __future__ import annotations

from collections.abc import Callable

import optuna
from optuna.trial import FrozenTrial

from tuner.events import SweepObserver
from tuner.space.spec import Space
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.facts.launch_times import launch_costs, launch_times
from tuner.study.facts.plan_due import study_plan
from tuner.study.policy import next_launch
from tuner.study.policy.decisions import Decision, Stop
from tuner.study.policy.goal import goal_for
from tuner.study.policy.snapshot import Snapshot
from tuner.study.run import queue, recovery
from tuner.study.run.apply import apply
from tuner.study.run.probe import SweepProbe
from tuner.study.run.reader import FactsReader, WorkerMemory, snapshot
from tuner.study.run.request import RunRequest
from tuner.study.state import StudyState
from tuner.trial.runner import PruneCheck


class SweepController:
    """The optuna callback that carries out the policy's decisions (see the module)."""

    def __init__(
        self,
        space: Space,
        store: Store,
        request: RunRequest,
        observer: SweepObserver,
        *,
        probe: SweepProbe | None = None,
        claims: queue.Claims | None = None,
        recover: Callable[[], object] | None = None,
    ) -> None:
        self.space = space
        self.spec = space.spec
        self.store = store
        self.request = request  # the budgets (--trials, --worker-trials, --hours), the seed
        self.observer = observer
        self.probe = probe  # the all-reduce probe (docs/probe.md), when the space has one
        self.goal = goal_for(self.spec)
        self.reader = FactsReader(store, space)
        self.memory = WorkerMemory()
        # Several workers (docs/distributed.md): once-only launches are claimed; a worker may
        # have a budget of its own; dead workers' trials are recovered after every trial.
        self.claims = claims
        self.worker = claims.worker if claims is not None else None
        self.recover = recover
        self.worker_stop: tuple[str, str] | None = None
        """Why this worker alone stopped (its own budget, another worker's stop)."""

    def facts(self) -> StudyAnalysis:
        return self.reader.facts()

    def prune_check(self) -> PruneCheck | None:
        """A function of a running search trial's rounds: a reason to stop it early, or None."""
        return self.goal.prune_check(self.facts())

    # --- decisions -------------------------------------------------------------------------

    def open(self, study: optuna.Study) -> None:
        """Before the first trial of this run: the baseline, what a resumed study left."""
        self.memory.stop_seen = study.user_attrs.get(attrs.STOPPED_BY)
        for number in recovery.requeue_interrupted(study, self.claims):
            self.observer.message(f"trial {number} was cut short; queued again (not charged)")
        snap = self._snapshot(study, finished=None)
        if snap.launched:  # a resumed study: the live view's count and pace go on
            rows = self.reader.rows
            plan = None
            if snap.state.plan_said:
                plan = study_plan(
                    snap.facts,
                    launch_times(rows),
                    budget=self.request.trials,
                    costs=launch_costs(rows),
                )
            self.observer.resumed(snap.full_launched, plan)
        self._apply(study, snap.state, next_launch.opening(snap, self.goal))

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.observer.trial_finished(trial, self.spec.objective.label)
        if self.recover is not None:
            self.recover()  # a dead worker's trial: failed, queued again before all else
        launched_now = trial.user_attrs.get(attrs.LAUNCHED, False)
        memory = self.memory
        memory.idle_proposals = 0 if launched_now else memory.idle_proposals + 1
        facts = self.facts()
        self._save_noise(study, facts)
        if self.probe is not None:
            self.probe.update(study, facts)  # the NCCL params it finds cannot help: frozen
        snap = self._snapshot(study, finished=trial.number)
        decision = next_launch.after_trial(snap, self.goal)
        self._apply(study, snap.state, decision)
        stop = decision.stop
        if stop is None:
            return
        if not stop.whole_study:
            self.worker_stop = (stop.reason, stop.detail)
        study.stop()  # optuna's own way out of optimize(), after this callback

    def finish(self, study: optuna.Study, reason: str, detail: str) -> None:
        """Record the study's end (Ctrl-C, a signal, a budget used before this run)."""
        self._apply(
            study, StudyState.from_attrs(study.user_attrs), Decision(stop=Stop(reason, detail))
        )

    # --- internals -------------------------------------------------------------------------

    def _snapshot(self, study: optuna.Study, *, finished: int | None) -> Snapshot:
        return snapshot(
            study, self.reader, self.memory, self.request, worker=self.worker, finished=finished
        )

    def _apply(self, study: optuna.Study, state: StudyState, decision: Decision) -> None:
        marker = apply(
            decision,
            study=study,
            spec=self.spec,
            state=state,
            claims=self.claims,
            observer=self.observer,
            store=self.store,
            facts=self.facts,
        )
        self.memory.stop_seen = marker or self.memory.stop_seen
        if decision.local_done is not None:
            self.memory.local_done = decision.local_done

    def _save_noise(self, study: optuna.Study, facts: StudyAnalysis) -> None:
        if facts.noise is None:
            return
        noise = facts.noise_dict()
        self.store.update_study(study.study_name, noise=noise)
        study.set_user_attr(attrs.NOISE_REL_SD, noise.get("rel_sd"))
