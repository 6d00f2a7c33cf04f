"""tuner/study/policy/next_launch.py's steps, each asked alone, and how ``decide`` joins them.

Each step of ``AFTER_TRIAL_STEPS`` is a function ``(snapshot, goal) -> Decision | None``;
these tests ask one at a time, on hand-made snapshots (tests/unit/test_policy.py's
``Study``), and check what it answers and whether the decision goes on after it. The
final comparison's phase (tuner/study/policy/final_comparison.py) and its stored memory
(tuner/study/state.py ``FinalMemory``) are checked here too, old attrs included.
"""

from __future__ import annotations

import dataclasses

from tests.unit.test_policy import (
    Study,
    _baselines,
    _changed,
    _confirmed_gain,
    _final,
    _small_gain_at_plateau,
    _space,
)
from tuner.study import attrs
from tuner.study.policy import final_comparison, final_reserve, next_launch, stops
from tuner.study.policy.decisions import Decision, Launch, Stop
from tuner.study.policy.final_comparison import Phase
from tuner.study.policy.goal import goal_for
from tuner.study.policy.snapshot import Snapshot
from tuner.study.state import FinalMemory, StudyState, Trigger, attr_changes

GOAL = goal_for(_space().spec)


def _plateau_with_a_best() -> tuple[Study, str]:
    """A confirmed 20% gain, then three search trials without one: patience 3 used up."""
    study = Study(_space())
    _baselines(study)
    best = _confirmed_gain(study)
    for value in (0, 3):
        study.launch(
            attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, NCCL_PROTO="Simple",
            compilation=value,
        )  # fmt: skip
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, NCCL_PROTO="Simple")
    assert best is not None
    return study, best


# --- the steps, one at a time ------------------------------------------------------------------


def test_the_steps_are_asked_in_the_documented_order() -> None:
    assert [step.__name__ for step in next_launch.AFTER_TRIAL_STEPS] == [
        "peer_stopped",
        "step",  # final_comparison.step
        "plan_said",
        "track",
        "failures",
        "confirmations",
        "study_rules",
        "worker_budget",
        "budget_end",
        "proposal",
    ]
    assert next_launch.AFTER_TRIAL_STEPS[1] is final_comparison.step
    assert next_launch.AFTER_TRIAL_STEPS[6] is stops.study_rules
    assert next_launch.AFTER_TRIAL_STEPS[8] is final_reserve.budget_end


def test_peer_stopped_stops_this_worker_only_on_a_mark_it_has_not_seen() -> None:
    study = Study(_space())
    _baselines(study)
    state = StudyState(stopped_by="other:1:2#9", stop_reason="plateau", stop_detail="done")
    part = next_launch.peer_stopped(study.snapshot(state=state, stop_seen=None), GOAL)
    assert part is not None and part.stop is not None and not part.stop.whole_study
    assert not part.goes_on
    assert (
        next_launch.peer_stopped(study.snapshot(state=state, stop_seen="other:1:2#9"), GOAL) is None
    )


def test_plan_said_once_after_the_baselines_with_the_looks_it_sized() -> None:
    study = Study(_space())
    _baselines(study)
    part = next_launch.plan_said(study.snapshot(), GOAL)
    assert part is not None and part.plan is not None and part.goes_on
    assert part.state is not None and part.state.plan_said
    sizing = part.plan.sizing
    assert part.state.final.looks == (sizing.looks if sizing is not None else None)
    assert next_launch.plan_said(study.snapshot(state=part.state), GOAL) is None


def test_track_sets_the_incumbent_and_goes_on() -> None:
    study = Study(_space())
    _baselines(study)
    part = next_launch.track(study.snapshot(), GOAL)
    assert part is not None and part.goes_on and part.launches == ()
    assert part.state is not None and part.state.incumbent == study.trials[0].config
    # Tracked already, nothing new: nothing to say.
    assert next_launch.track(study.snapshot(state=part.state), GOAL) is None


def test_confirmations_queue_what_looks_better_and_go_on() -> None:
    study = Study(_space())
    _baselines(study)
    study.launch(attrs.SEARCH, [110.0, 110.1, 109.9], proposer=attrs.LOCAL, NCCL_PROTO="LL")
    part = next_launch.confirmations(study.snapshot(), GOAL)
    assert part is not None and part.goes_on
    assert [(launch.role, _changed(launch)) for launch in part.launches] == [
        (attrs.CONFIRM, {"NCCL_PROTO": "LL"})
    ]
    # With no room left beside the final comparison's reserve, none is made.
    tight = study.snapshot(budget=len(study.rows) + 4)
    assert next_launch.confirmations(tight, GOAL) is None


def test_study_rules_queue_the_checks_and_end_the_decision_there() -> None:
    study, best = _plateau_with_a_best()
    state = StudyState(incumbent=best, last_gain_trial=3)
    part = stops.study_rules(study.snapshot(state=state), GOAL)
    assert part is not None and not part.goes_on and part.stop is None
    assert [launch.role for launch in part.launches] == [attrs.SIMPLIFY]
    assert part.state is not None and best in part.state.simplified
    # This worker's budget used: the checks stay queued for the others, and it stops.
    mine = study.snapshot(state=state, worker="w", worker_budget=len(study.rows))
    part = stops.study_rules(mine, GOAL)
    assert part is not None and [launch.role for launch in part.launches] == [attrs.SIMPLIFY]
    assert part.stop is not None and part.stop.reason == attrs.WORKER_BUDGET


def test_study_rules_queue_the_final_comparison_before_the_stop_then_stop() -> None:
    study, best = _plateau_with_a_best()
    done = StudyState(incumbent=best, last_gain_trial=3, simplified=(best,))
    part = stops.study_rules(study.snapshot(state=done), GOAL)
    assert part is not None and not part.goes_on and part.stop is None
    assert [launch.role for launch in part.launches] == [attrs.FINAL] * 4
    assert part.state is not None and part.state.final.trigger is not None
    assert part.state.final.trigger.reason == attrs.PLATEAU
    # The budget used: the study stops (no candidate's comparison fits any more).
    spent = stops.study_rules(study.snapshot(budget=len(study.rows)), GOAL)
    assert spent is not None and spent.stop is not None and spent.stop.reason == attrs.BUDGET
    assert spent.stop.whole_study and spent.launches == ()
    # Nothing fires: the decision goes on to the next step.
    study = Study(_space())
    _baselines(study)
    assert stops.study_rules(study.snapshot(), GOAL) is None


def test_worker_budget_stops_this_worker_alone() -> None:
    study = Study(_space())
    _baselines(study)
    part = next_launch.worker_budget(study.snapshot(worker="w", worker_budget=2), GOAL)
    assert part is not None and part.stop is not None and not part.stop.whole_study
    assert part.stop.reason == attrs.WORKER_BUDGET
    assert next_launch.worker_budget(study.snapshot(worker="w", worker_budget=3), GOAL) is None


def test_budget_end_gives_the_last_launches_to_the_final_comparison_and_ends() -> None:
    study = Study(_space())
    _baselines(study)
    best = _confirmed_gain(study)
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, compilation=3)
    state = StudyState(incumbent=best)
    part = final_reserve.budget_end(study.snapshot(budget=len(study.rows) + 4, state=state), GOAL)
    assert part is not None and not part.goes_on and part.stop is None
    assert [launch.config == best for launch in part.launches] == [True, False, False, True]
    # Room for the simplification first (2) and the comparison after it (4).
    checks = final_reserve.budget_end(
        study.snapshot(
            budget=len(study.rows) + 6, state=StudyState(incumbent=best, last_gain_trial=3)
        ),
        GOAL,
    )
    assert checks is not None and [launch.role for launch in checks.launches] == [attrs.SIMPLIFY]
    assert not checks.goes_on
    # Far from the budget's end: nothing to say.
    assert final_reserve.budget_end(study.snapshot(budget=30, state=state), GOAL) is None


def test_budget_end_with_no_room_for_the_candidates_comparison_stops_not_settled() -> None:
    study = Study(_space())
    _baselines(study)
    best = _confirmed_gain(study)
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, compilation=3)
    snap = study.snapshot(budget=len(study.rows) + 3, state=StudyState(incumbent=best))
    part = final_reserve.budget_end(snap, GOAL)
    assert part is not None and part.stop is not None and part.stop.reason == attrs.BUDGET
    assert "not settled" in part.stop.detail and part.launches == ()


def test_proposal_waits_for_a_waiting_trial_else_proposes() -> None:
    study = Study(_space())
    _baselines(study)
    part = next_launch.proposal(study.snapshot(), GOAL)
    assert part is not None and part.local_done is False
    (launch,) = part.launches
    assert launch.role == attrs.SEARCH and _changed(launch)
    study.wait(attrs.SEARCH, compilation=3)
    assert next_launch.proposal(study.snapshot(), GOAL) is None


# --- how the steps are joined ------------------------------------------------------------------


def _launch(role: attrs.Role) -> Launch:
    return Launch({}, role)


def test_decide_shows_each_step_the_launches_before_it_and_stops_at_an_end() -> None:
    study = Study(_space())
    _baselines(study)
    seen: list[int] = []

    def first(snap: Snapshot, goal: object) -> Decision | None:
        return Decision(launches=(_launch(attrs.CONFIRM),), messages=("a",), goes_on=True)

    def second(snap: Snapshot, goal: object) -> Decision | None:
        seen.append(sum(1 for t in snap.trials if t.waiting))
        return Decision(launches=(_launch(attrs.SEARCH),), messages=("b",))

    def never(snap: Snapshot, goal: object) -> Decision | None:
        raise AssertionError("the decision ended before this step")

    made = next_launch.decide(study.snapshot(), GOAL, (first, lambda s, g: None, second, never))
    assert seen == [1]  # the confirmation, as queued
    assert [launch.role for launch in made.launches] == [attrs.CONFIRM, attrs.SEARCH]
    assert made.messages == ("a", "b") and not made.goes_on and made.state is None


def test_a_stop_of_the_study_drops_what_was_decided_a_workers_stop_keeps_it() -> None:
    study = Study(_space())
    _baselines(study)

    def confirm(snap: Snapshot, goal: object) -> Decision | None:
        return Decision(launches=(_launch(attrs.CONFIRM),), goes_on=True)

    def stopping(whole: bool) -> next_launch.Step:
        return lambda snap, goal: Decision(stop=Stop(attrs.PLATEAU, "x", whole_study=whole))

    ended = next_launch.decide(study.snapshot(), GOAL, (confirm, stopping(True)))
    assert ended.stop is not None and ended.launches == ()
    mine = next_launch.decide(study.snapshot(), GOAL, (confirm, stopping(False)))
    assert mine.stop is not None and [launch.role for launch in mine.launches] == [attrs.CONFIRM]


# --- the final comparison's phase and memory -----------------------------------------------------


def test_the_final_comparisons_phase_through_its_life() -> None:
    study = Study(_space())
    best, state = _small_gain_at_plateau(study)
    assert final_comparison.phase(study.snapshot(state=state)).phase is Phase.NONE
    first = next_launch.after_trial(study.snapshot(state=state), GOAL)
    assert first.state is not None
    state = first.state
    for launch in first.launches:  # queued: the look runs
        study.wait(attrs.FINAL, **_changed(launch))
    running = study.snapshot(state=state)
    assert final_comparison.phase(running).phase is Phase.RUNNING
    assert final_comparison.step(running, GOAL) == Decision()  # nothing else is decided
    del study.trials[-4:]
    for candidate, value in ((True, 105.0), (False, 101.0), (False, 103.5), (True, 106.5)):
        _final(study, candidate, value)
    judged = final_comparison.phase(study.snapshot(state=state))
    assert judged.phase is Phase.NEXT_LOOK and judged.launches  # +3.4% holds the 1% bar
    assert judged.verdict is not None and judged.verdict.look == 1 and judged.stop is None
    # No room for the next look: not settled, and the stop it waited on is due.
    tight = study.snapshot(state=state, budget=len(study.rows) + 3)
    due = final_comparison.phase(tight)
    assert due.phase is Phase.NOT_SETTLED and due.launches == ()
    assert due.stop is not None and due.stop.reason == attrs.PLATEAU
    assert "cannot hold its next look" in due.stop.detail
    part = final_comparison.step(tight, GOAL)
    assert part is not None and part.stop == due.stop and not part.goes_on
    assert part.state is not None and part.state.final.trigger is None
    assert part.state.final.looks == state.final.looks  # the looks stay: the answer's
    # Recorded: the phase stays, with nothing waiting; the search decides (resumed).
    recorded = study.snapshot(state=part.state, budget=len(study.rows) + 3)
    assert final_comparison.phase(recorded).stop is None
    assert final_comparison.step(recorded, GOAL) is None
    assert judged.launches[0].config == best


def test_a_passed_look_is_settled() -> None:
    study = Study(_space())
    _baselines(study)
    best = _confirmed_gain(study)
    for value in (120.0, 100.0, 100.0, 120.0):
        _final(study, value == 120.0, value)
    trigger = Trigger(attrs.PLATEAU, "no gain in 3 trials")
    snap = study.snapshot(state=StudyState(incumbent=best, final=FinalMemory(trigger)))
    now = final_comparison.phase(snap)
    assert now.phase is Phase.SETTLED and now.verdict is not None and now.verdict.passed
    assert now.stop == Stop(attrs.PLATEAU, "no gain in 3 trials")


def test_the_memory_reads_and_writes_the_attrs_older_studies_have() -> None:
    looks = {"first": 2, "sized": 5, "target_gain": 0.02}
    stored = {attrs.FINAL_TRIGGER: {"reason": "plateau", "detail": "d"}, attrs.FINAL_LOOKS: looks}
    state = StudyState.from_attrs(stored)
    assert state.final.trigger == Trigger("plateau", "d")
    assert state.final.looks is not None and state.final.looks.sized == 5
    assert StudyState.from_attrs({attrs.FINAL_TRIGGER: {}}).final.trigger is None  # recorded
    assert StudyState.from_attrs({attrs.FINAL_TRIGGER: {"detail": "d"}}).final.trigger == Trigger(
        attrs.BUDGET, "d"
    )  # a reason missing reads as the budget's, as it always did
    cleared = state.replace(final=dataclasses.replace(state.final, trigger=None))
    assert attr_changes(state, cleared) == {attrs.FINAL_TRIGGER: {}}
    again = StudyState().replace(final=FinalMemory(Trigger("budget", "used")))
    assert attr_changes(StudyState(), again) == {
        attrs.FINAL_TRIGGER: {"reason": "budget", "detail": "used"}
    }
