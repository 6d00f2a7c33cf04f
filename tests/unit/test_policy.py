"""tuner/study/policy/next_launch.py: the order of decisions, from hand-made snapshots.

No optuna and no database: the study's launches are LaunchRow objects made in memory and
analysed as the store's would be, the trials are TrialView values, and each decision is
read as a value (launches, stop, state) before anything would be applied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tuner.space.settings import baseline_params, settings_from_params
from tuner.space.spec import Scalar, Space, parse_space
from tuner.storage import LaunchRow, LaunchStatus
from tuner.study import attrs
from tuner.study.facts.analysis import analyze
from tuner.study.policy import final_checks, final_comparison, next_launch
from tuner.study.policy.decisions import Launch
from tuner.study.policy.goal import goal_for
from tuner.study.policy.single_goal import PLATEAU_LOOKS
from tuner.study.policy.snapshot import Snapshot
from tuner.study.state import FinalMemory, ProbeMemory, StudyState, TrialView, Trigger

SPACE = {
    "study": "p",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
        "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
    },
    "stop": {"patience": 3, "min_gain": 0.01, "baseline_launches": 2, "confirmations": 1},
}


def _space(**changes: Any) -> Space:
    return parse_space({**SPACE, **changes}, Path("p.yaml"))


def _params(space: Space, **changed: Scalar) -> dict[str, Scalar]:
    return {**baseline_params(space.spec), **changed}


class Study:
    """Launches and trials built by hand, in the order they ran."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.rows: list[LaunchRow] = []
        self.trials: list[TrialView] = []

    def launch(
        self,
        role: str,
        rounds: Sequence[float] | None,
        *,
        proposer: str | None = None,
        status: str = LaunchStatus.COMPLETE,
        fidelity: str | None = None,
        **changed: Scalar,
    ) -> int:
        params = _params(self.space, **changed)
        config = settings_from_params(self.space.spec, params).config_hash
        number = len(self.trials)
        state = {"complete": "COMPLETE", "pruned": "PRUNED", "failed": "FAIL"}[status]
        self.trials.append(
            TrialView(
                number, state, role, proposer, config, launched=True, worker="w", fidelity=fidelity
            )
        )
        self.rows.append(
            LaunchRow(
                id=number + 1,
                trial_number=number,
                role=role,
                config_hash=config,
                params=params,
                status=status,
                objective_rounds=list(rounds) if rounds is not None else None,
                fidelity=fidelity,
            )
        )
        return number

    def wait(self, role: str, **changed: Scalar) -> None:
        config = settings_from_params(self.space.spec, _params(self.space, **changed)).config_hash
        self.trials.append(TrialView(len(self.trials), "WAITING", role, None, config))

    def snapshot(self, **more: Any) -> Snapshot:
        """The study now; ``more``: Snapshot fields (budget 30, seed 0, the last trial)."""
        facts = analyze(None, self.space, rows=self.rows)  # type: ignore[arg-type]
        fields: dict[str, Any] = {"budget": 30, "seed": 0, "finished": len(self.trials) - 1}
        fields.setdefault("state", StudyState())
        fields.update(more)
        facts = facts.with_looks(fields["state"].final.looks)  # as the run's reader does
        return Snapshot(spec=self.space.spec, facts=facts, trials=tuple(self.trials), **fields)


def _baselines(study: Study, value: float = 100.0) -> None:
    study.launch(attrs.BASELINE, [value, value * 1.001, value * 0.999])
    study.launch(attrs.BASELINE, [value * 1.002, value, value * 1.001])


def _confirmed_gain(study: Study) -> str | None:
    """A search trial 20% faster with NCCL_PROTO=LL and -O3, and its confirmation: the best."""
    study.launch(
        attrs.SEARCH, [120.0, 120.1, 119.9], proposer=attrs.LOCAL, NCCL_PROTO="LL", compilation=3
    )
    study.launch(attrs.CONFIRM, [120.1, 120.0, 119.8], NCCL_PROTO="LL", compilation=3)
    return study.trials[-1].config


def _changed(launch: Launch) -> Mapping[str, Scalar]:
    return {k: v for k, v in launch.params.items() if v != "default"}


def test_a_new_study_opens_with_the_baseline_launches_each_claimed_once() -> None:
    space = _space()
    study = Study(space)
    decision = next_launch.opening(study.snapshot(finished=None), goal_for(space.spec))
    assert [(launch.role, launch.claim) for launch in decision.launches] == [
        (attrs.BASELINE, ("baseline", "0")),
        (attrs.BASELINE, ("baseline", "1")),
    ]
    assert decision.stop is None


def test_a_resumed_study_queues_only_the_baseline_launches_it_lacks() -> None:
    space = _space()
    study = Study(space)
    study.launch(attrs.BASELINE, [100.0, 100.1, 99.9])
    study.launch(attrs.BASELINE, None, status=LaunchStatus.FAILED)  # slot 1 failed
    decision = next_launch.opening(study.snapshot(finished=None), goal_for(space.spec))
    assert [launch.claim for launch in decision.launches if launch.role == attrs.BASELINE] == [
        ("baseline", "2")
    ]


def test_what_looks_better_is_confirmed_before_any_new_search_launch() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    study.launch(attrs.SEARCH, [110.0, 110.1, 109.9], proposer=attrs.LOCAL, NCCL_PROTO="LL")
    decision = next_launch.after_trial(study.snapshot(), goal_for(space.spec))
    assert [(launch.role, _changed(launch)) for launch in decision.launches] == [
        (attrs.CONFIRM, {"NCCL_PROTO": "LL"})
    ]
    claim = decision.launches[0].claim
    assert claim is not None and claim[0] == "confirm" and claim[1].endswith(":1")
    assert decision.stop is None


def test_with_nothing_to_confirm_the_local_search_proposes_and_says_it_is_not_done() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    decision = next_launch.after_trial(study.snapshot(), goal_for(space.spec))
    (launch,) = decision.launches
    assert launch.role == attrs.SEARCH and launch.extra_attrs[attrs.PROPOSER] == attrs.LOCAL
    assert _changed(launch)  # a change to the defaults
    assert decision.local_done is False
    assert decision.state is not None and decision.state.incumbent is not None


def test_a_waiting_trial_means_no_proposal() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    study.wait(attrs.SEARCH, compilation=3)
    decision = next_launch.after_trial(study.snapshot(), goal_for(space.spec))
    assert decision.launches == () and decision.stop is None and decision.local_done is None


def test_the_probes_nominee_goes_before_the_local_search_once() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    probe = ProbeMemory(finding={"frozen": [], "nominee": {"NCCL_PROTO": "LL"}})
    decision = next_launch.after_trial(
        study.snapshot(state=StudyState(probe=probe)), goal_for(space.spec)
    )
    (launch,) = decision.launches
    assert launch.extra_attrs[attrs.PROPOSER] == attrs.NOMINEE
    assert _changed(launch) == {"NCCL_PROTO": "LL"}
    assert decision.state is not None and decision.state.probe.nominated


def test_a_plateau_first_queues_the_simpler_form_of_the_best_then_stops() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    best = _confirmed_gain(study)
    for value in (0, 3):  # three search trials without a gain: patience 3 used up
        study.launch(
            attrs.SEARCH,
            [100.0, 100.1, 99.9],
            proposer=attrs.LOCAL,
            NCCL_PROTO="Simple",
            compilation=value,
        )
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, NCCL_PROTO="Simple")
    state = StudyState(incumbent=best, last_gain_trial=3)
    decision = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert decision.stop is None
    (launch,) = decision.launches
    assert launch.role == attrs.SIMPLIFY and launch.copies == 2
    assert launch.claim == ("simplify", best)
    assert decision.state is not None and best in decision.state.simplified
    # Once simplified (and nothing pending), the same plateau first queues the final
    # comparison of the candidate, a change: the stop waits for its launches.
    done = StudyState(incumbent=best, last_gain_trial=3, simplified=(best,))
    final = next_launch.after_trial(study.snapshot(state=done), goal_for(space.spec))
    assert final.stop is None
    assert [launch.role for launch in final.launches] == [attrs.FINAL] * 4
    assert final.state is not None and final.state.final.trigger is not None
    assert final.state.final.trigger.reason == attrs.PLATEAU
    assert "in 3 trials" in final.state.final.trigger.detail


def test_the_budget_stops_the_study_and_drops_what_it_would_have_confirmed() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    study.launch(attrs.SEARCH, [110.0, 110.1, 109.9], proposer=attrs.LOCAL, NCCL_PROTO="LL")
    decision = next_launch.after_trial(study.snapshot(budget=3), goal_for(space.spec))
    assert decision.stop is not None and decision.stop.reason == attrs.BUDGET
    assert decision.stop.whole_study and decision.launches == ()


def test_a_workers_own_budget_stops_it_alone_and_keeps_its_claimed_launches() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    study.launch(attrs.SEARCH, [110.0, 110.1, 109.9], proposer=attrs.LOCAL, NCCL_PROTO="LL")
    decision = next_launch.after_trial(
        study.snapshot(worker="w", worker_budget=3), goal_for(space.spec)
    )
    assert decision.stop is not None and decision.stop.reason == attrs.WORKER_BUDGET
    assert not decision.stop.whole_study
    assert [launch.role for launch in decision.launches] == [attrs.CONFIRM]  # the others run it


def test_another_workers_stop_stops_this_one_before_anything_else() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    state = StudyState(stopped_by="other:1:2#9", stop_reason="plateau", stop_detail="done")
    decision = next_launch.after_trial(
        study.snapshot(state=state, stop_seen=None), goal_for(space.spec)
    )
    assert decision.stop is not None and not decision.stop.whole_study
    assert (
        decision.stop.reason == "plateau" and "stopped by worker other:1:2" in decision.stop.detail
    )
    assert decision.launches == ()


def test_every_param_frozen_by_the_probe_stops_with_its_sentence() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    probe = ProbeMemory(
        finding={"frozen": ["NCCL_PROTO", "compilation"], "sentence": "cannot help"}
    )
    decision = next_launch.after_trial(
        study.snapshot(state=StudyState(probe=probe)), goal_for(space.spec)
    )
    assert decision.stop is not None and decision.stop.reason == attrs.PROBE_FROZE_ALL
    assert decision.stop.detail == "cannot help; keep the defaults"


def test_the_grid_left_open_all_tried_is_exhausted_once_no_trial_waits() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    for value in (0, 3):  # slower: nothing that could be a gain worth a final comparison
        study.launch(attrs.SEARCH, [97.0, 97.1, 96.9], proposer=attrs.LOCAL, compilation=value)
    probe = ProbeMemory(finding={"frozen": ["NCCL_PROTO"]})
    snap = study.snapshot(state=StudyState(probe=probe))
    decision = next_launch.after_trial(snap, goal_for(space.spec))
    assert decision.stop is not None and decision.stop.reason == attrs.EXHAUSTED
    assert "(3; no longer searched: NCCL_PROTO)" in decision.stop.detail
    study.wait(attrs.SEARCH, compilation=0)
    waiting = next_launch.after_trial(
        study.snapshot(state=StudyState(probe=probe)), goal_for(space.spec)
    )
    assert waiting.stop is None


def test_the_budgets_last_launches_go_to_the_checks_before_the_answer() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    best = _confirmed_gain(study)
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, compilation=3)
    snap = study.snapshot(  # room for the simplification (2) and the final comparison (4)
        budget=len(study.rows) + 6, state=StudyState(incumbent=best, last_gain_trial=3)
    )
    decision = next_launch.after_trial(snap, goal_for(space.spec))
    assert [(launch.role, _changed(launch)) for launch in decision.launches] == [
        (attrs.SIMPLIFY, {"NCCL_PROTO": "LL"})  # -O3 did nothing alone: dropped
    ]
    assert decision.stop is None


def test_the_budgets_very_last_launches_go_to_the_final_comparison() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    best = _confirmed_gain(study)
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, compilation=3)
    snap = study.snapshot(budget=len(study.rows) + 4, state=StudyState(incumbent=best))
    decision = next_launch.after_trial(snap, goal_for(space.spec))
    assert [(launch.role, launch.config == best) for launch in decision.launches] == [
        (attrs.FINAL, True),
        (attrs.FINAL, False),
        (attrs.FINAL, False),
        (attrs.FINAL, True),
    ]  # C B B C: a linear drift falls on both sides alike
    assert [launch.claim for launch in decision.launches] == [
        (attrs.FINAL, f"{best}:{slot}") for slot in range(4)
    ]
    assert decision.state is not None and decision.state.final.trigger == Trigger(
        attrs.BUDGET, f"used the budget of {snap.budget} launches"
    )


def test_the_final_comparison_is_never_squeezed_below_its_launches_a_side() -> None:
    # Three launches left of the budget: one a side and C then B would neither be the test
    # stop.final_launches promises nor cancel a drift; the study stops on the defaults.
    space = _space()
    study = Study(space)
    _baselines(study)
    best = _confirmed_gain(study)
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, compilation=3)
    snap = study.snapshot(budget=len(study.rows) + 3, state=StudyState(incumbent=best))
    decision = next_launch.after_trial(snap, goal_for(space.spec))
    assert decision.stop is not None and decision.stop.reason == attrs.BUDGET
    assert decision.launches == ()


def test_checks_and_confirmations_never_eat_the_final_comparisons_launches() -> None:
    # Five launches left: the simplification (2) and the final comparison (4) do not both
    # fit, so the check gives way and the whole remainder is the final comparison's.
    space = _space()
    study = Study(space)
    _baselines(study)
    best = _confirmed_gain(study)
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, compilation=3)
    snap = study.snapshot(budget=len(study.rows) + 5, state=StudyState(incumbent=best))
    assert not snap.has_room(snap.facts.configs[best].params, 2)
    assert snap.has_room(snap.facts.configs[best].params, 1)
    # A search trial that looks better with four launches left: its confirmation would
    # leave the final comparison three, so it is not made.
    study.launch(attrs.SEARCH, [110.0, 110.1, 109.9], proposer=attrs.LOCAL, NCCL_PROTO="LL")
    snap = study.snapshot(budget=len(study.rows) + 4, state=StudyState(incumbent=best))
    decision = next_launch.after_trial(snap, goal_for(space.spec))
    assert [launch.role for launch in decision.launches] == [attrs.FINAL] * 4


def _small_gain_at_plateau(study: Study) -> tuple[str | None, StudyState]:
    """Restarts move the defaults by about 3%; the search saw +5% and the plateau came."""
    study.launch(attrs.BASELINE, [100.0, 100.1, 99.9])
    study.launch(attrs.BASELINE, [103.0, 103.1, 102.9])
    study.launch(attrs.SEARCH, [106.5, 106.6, 106.4], proposer=attrs.LOCAL, NCCL_PROTO="LL")
    study.launch(attrs.CONFIRM, [107.0, 107.1, 106.9], NCCL_PROTO="LL")
    best = study.trials[-1].config
    for value in (0, 3, 0):  # patience 3 used up without a gain: the plateau
        study.launch(attrs.SEARCH, [101.0, 101.1, 100.9], proposer=attrs.LOCAL, compilation=value)
    return best, StudyState(incumbent=best, last_gain_trial=3, simplified=(best,))


def _final(study: Study, candidate: bool, value: float) -> None:
    changed: dict[str, Scalar] = {"NCCL_PROTO": "LL"} if candidate else {}
    study.launch(attrs.FINAL, [value, value * 1.001, value * 0.999], **changed)


def test_a_first_look_that_holds_the_bar_takes_the_sized_look_then_the_stop() -> None:
    space = _space()
    study = Study(space)
    best, state = _small_gain_at_plateau(study)
    first = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert [launch.config == best for launch in first.launches] == [True, False, False, True]
    assert first.state is not None and first.state.final.trigger is not None
    # The looks are sized from the noise before the comparison's first launch.
    looks = first.state.final.looks
    assert looks is not None and looks.first == 2 and 2 < looks.sized <= 6
    state = first.state
    for candidate, value in ((True, 105.0), (False, 101.0), (False, 103.5), (True, 106.5)):
        _final(study, candidate, value)
    snap = study.snapshot(state=state)
    (verdict,) = snap.facts.final_comparisons()
    # The first look at a quarter of 1%, the sized one at half (tuner/stats/looks.py).
    assert verdict.look == 1 and verdict.gain.confidence == pytest.approx(0.9975)
    assert verdict.straddles  # +3.4%, its interval holds the 1% bar
    second = next_launch.after_trial(snap, goal_for(space.spec))
    assert second.stop is None
    # Up to the sized look, the interleaving continued: C B B C C B ...
    sized = looks.sized
    assert [launch.claim for launch in second.launches] == [
        (attrs.FINAL, f"{best}:{slot}") for slot in range(4, 2 * sized)
    ]
    sides = final_comparison.order(sized)[4:]
    assert [launch.config == best for launch in second.launches] == sides
    assert second.launches[0].message is not None and "look 2" in second.launches[0].message
    for on_candidate in sides:  # a clear gain on all of them: the sized look passes
        _final(study, on_candidate, 108.0 if on_candidate else 101.0)
    snap = study.snapshot(state=state)
    (verdict,) = snap.facts.final_comparisons()
    assert (verdict.candidate_launches, verdict.baseline_launches) == (sized, sized)
    assert verdict.look == 2 and verdict.gain.confidence == pytest.approx(0.995)
    assert verdict.passed
    done = next_launch.after_trial(snap, goal_for(space.spec))  # settled: the stop
    assert done.launches == () and done.stop is not None and done.stop.reason == attrs.PLATEAU


def test_no_second_look_when_the_first_refutes_or_the_budget_cannot_hold_it() -> None:
    space = _space()
    study = Study(space)
    best, state = _small_gain_at_plateau(study)
    first = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert first.state is not None
    state = first.state
    for candidate, value in ((True, 105.0), (False, 101.0), (False, 103.5), (True, 106.5)):
        _final(study, candidate, value)
    # Three full launches left: the second look takes 4 or none (never a lopsided one).
    tight = study.snapshot(state=state, budget=len(study.rows) + 3)
    done = next_launch.after_trial(tight, goal_for(space.spec))
    assert done.launches == () and done.stop is not None
    # A first look whose interval lies below the bar is the answer: keep the defaults.
    refuted = Study(space)
    _small_gain_at_plateau(refuted)
    for _ in range(12):  # quiet repeats: the measured noise is well known and small
        refuted.launch(attrs.CONFIRM, [101.0, 101.1, 100.9], compilation=0)
    for candidate, value in ((True, 92.0), (False, 103.0), (False, 102.8), (True, 92.1)):
        _final(refuted, candidate, value)
    snap = refuted.snapshot(state=state)
    (verdict,) = snap.facts.final_comparisons()
    assert verdict.upper < verdict.bar
    done = next_launch.after_trial(snap, goal_for(space.spec))
    assert done.launches == () and done.stop is not None


def test_one_planned_look_takes_three_quarters_of_the_error_rate() -> None:
    space = _space(stop={**SPACE["stop"], "final_launches_max": 2})
    assert space.spec.final_launches_most == 2
    study = Study(space)
    _, state = _small_gain_at_plateau(study)
    first = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert first.state is not None and first.state.final.looks is not None
    assert first.state.final.looks.planned == (2,)
    for candidate, value in ((True, 105.0), (False, 101.0), (False, 103.5), (True, 106.5)):
        _final(study, candidate, value)
    snap = study.snapshot(state=first.state, budget=len(study.rows))
    (verdict,) = snap.facts.final_comparisons()
    assert verdict.look == 1 and verdict.gain.confidence == pytest.approx(0.9925)
    done = next_launch.after_trial(snap, goal_for(space.spec))  # no room for another look
    assert done.launches == () and done.stop is not None


def _with_final_block(study: Study, candidate: float, defaults: float) -> str | None:
    """A confirmed 20% gain, then its final comparison: C B B C at these values."""
    _baselines(study)
    best = _confirmed_gain(study)
    for value in (candidate, defaults, defaults, candidate):
        changed: dict[str, Scalar] = (
            {"NCCL_PROTO": "LL", "compilation": 3} if value == candidate else {}
        )
        study.launch(attrs.FINAL, [value, value * 1.001, value * 0.999], **changed)
    return best


def test_while_the_final_comparison_runs_nothing_else_is_decided_then_its_stop() -> None:
    space = _space()
    study = Study(space)
    best = _with_final_block(study, 120.0, 100.0)
    study.wait(attrs.FINAL)
    trigger = Trigger(attrs.PLATEAU, "no configuration beat trial 2")
    state = StudyState(incumbent=best, last_gain_trial=3, final=FinalMemory(trigger))
    waiting = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert waiting.launches == () and waiting.stop is None
    study.trials.pop()  # the last final launch is done: the remembered stop is recorded
    done = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert done.stop is not None and done.stop.reason == attrs.PLATEAU
    assert done.stop.detail == trigger.detail and done.launches == ()
    assert done.state is not None and done.state.final.trigger is None


def test_a_candidate_compared_once_is_never_queued_for_another_final_comparison() -> None:
    space = _space()
    study = Study(space)
    best = _with_final_block(study, 100.5, 100.0)  # the fresh launches show no gain
    snap = study.snapshot(budget=len(study.rows) + 4, state=StudyState(incumbent=best))
    assert snap.facts.candidate() is not None
    assert not snap.facts.candidate().keep_defaults  # type: ignore[union-attr]
    decision = next_launch.after_trial(snap, goal_for(space.spec))
    assert all(launch.role != attrs.FINAL for launch in decision.launches)
    rec = snap.facts.recommendation()
    assert rec is not None and rec.keep_defaults
    assert "+0.5%" in rec.reason and "neither clears the 1.0% minimum gain" in rec.reason
    assert rec.outcome == "not_settled"  # the interval holds the bar: more launches would tell


def _ruled_out_but_one_family(ll: float) -> Snapshot:
    """The baseline the incumbent, every configuration launched once (the grid exhausted):
    five flat ones, and the three with NCCL_PROTO=LL at ``ll`` or a little below."""
    study = Study(_space())
    _baselines(study)
    flat: list[dict[str, Scalar]] = [
        {"NCCL_PROTO": "Simple"},
        {"compilation": 0},
        {"compilation": 3},
        {"NCCL_PROTO": "Simple", "compilation": 0},
        {"NCCL_PROTO": "Simple", "compilation": 3},
    ]
    for i, changed in enumerate(flat):
        v = 100.1 if i % 2 else 99.9
        study.launch(attrs.SEARCH, [v, v * 1.004, v * 0.996], proposer=attrs.LOCAL, **changed)
    for changed, v in (
        ({"NCCL_PROTO": "LL"}, ll),
        ({"NCCL_PROTO": "LL", "compilation": 0}, ll - 0.4),
        ({"NCCL_PROTO": "LL", "compilation": 3}, ll - 0.2),
    ):
        study.launch(attrs.SEARCH, [v * 1.01, v, v * 0.99], proposer=attrs.LOCAL, **changed)
    return study.snapshot(state=StudyState(incumbent=study.trials[0].config, last_gain_trial=1))


def test_before_the_search_stops_the_likeliest_unconfirmed_configuration_gets_one_more_launch() -> (
    None
):
    # Each LL launch is 1.1-1.5% up, none passes the screening test on its own one launch,
    # and the grid has nothing untried: without the last look the study stops here.
    goal = goal_for(_space().spec)
    snap = _ruled_out_but_one_family(101.5)
    look = goal.last_look(snap)
    assert look is not None and look[0].params["NCCL_PROTO"] == "LL" and look[1] >= 0.05
    assert look[2] == "the futility stop"
    decision = next_launch.after_trial(snap, goal)
    assert decision.stop is None
    assert [(launch.role, _changed(launch)) for launch in decision.launches] == [
        (attrs.CONFIRM, {k: v for k, v in look[0].params.items() if v != "default"})
    ]
    message = decision.launches[0].message or ""
    assert "before the futility stop" in message and f"{look[1]:.0%} chance" in message


def test_with_every_configuration_ruled_out_the_search_stops_without_a_last_look() -> None:
    goal = goal_for(_space().spec)
    snap = _ruled_out_but_one_family(100.0)
    assert goal.last_look(snap) is None
    decision = next_launch.after_trial(snap, goal)
    # No last look: the futility stop, after a final comparison of the best-looking change
    # (its one launch cannot rule out a gain worth deploying; only fresh launches may).
    assert decision.launches and {launch.role for launch in decision.launches} == {attrs.FINAL}
    assert decision.state is not None and decision.state.final.trigger is not None
    assert decision.state.final.trigger.reason in (attrs.FUTILE, attrs.PLATEAU)


def _plateau_with_one_hope(space: Space, study: Study | None = None) -> Snapshot:
    """Five search launches since the baseline (patience 5): four flat, NCCL_PROTO=LL
    1.5% up on one launch, which the screening test cannot tell from the noise (the
    baselines lie 2% apart); LL with a compilation level is still untried, so the futility
    check does not stop the study."""
    study = study or Study(space)
    screened = attrs.SCREEN if space.spec.screening is not None else None
    study.launch(attrs.BASELINE, [101.0, 101.4, 100.6], fidelity=screened)
    study.launch(attrs.BASELINE, [99.0, 99.4, 98.6], fidelity=screened)
    if screened:
        study.launch(attrs.BASELINE, [100.0, 100.1, 99.9], fidelity=attrs.FULL)
    for changed, v in (
        ({"compilation": 0}, 100.3),
        ({"NCCL_PROTO": "LL"}, 101.5),
        ({"NCCL_PROTO": "Simple"}, 99.3),
        ({"compilation": 3}, 99.8),
        ({"NCCL_PROTO": "Simple", "compilation": 3}, 99.6),
    ):
        study.launch(
            attrs.SEARCH, [v * 1.01, v, v * 0.99], proposer=attrs.LOCAL, fidelity=screened,
            **changed,
        )  # fmt: skip
    return study.snapshot(state=StudyState(incumbent=study.trials[0].config, last_gain_trial=1))


def _screened_space() -> Space:
    """SPACE with screening, its patience 5 (the plateau of _plateau_with_one_hope)."""
    return _space(
        screening={"args": ["--load-format", "dummy"], "patience": 5},
        stop={**SPACE["stop"], "patience": 2},
    )


def test_before_a_screened_studys_plateau_the_likeliest_unconfirmed_gets_one_more_launch() -> None:
    space = _screened_space()
    goal = goal_for(space.spec)
    snap = _plateau_with_one_hope(space)
    look = goal.last_look(snap)
    assert look is not None, "a screening launch is worth the one hope before the plateau"
    config, chance, before = look
    assert config.changed == {"NCCL_PROTO": "LL"} and chance >= 0.05
    assert before == "the plateau stop"
    decision = next_launch.after_trial(snap, goal)
    assert decision.stop is None
    assert [(launch.role, _changed(launch)) for launch in decision.launches] == [
        (attrs.CONFIRM, {"NCCL_PROTO": "LL"})
    ]
    assert "before the plateau stop" in (decision.launches[0].message or "")


def test_a_screened_plateau_looks_four_times_at_most() -> None:
    # Four confirmations past the patience (PLATEAU_LOOKS): the study stops, one hope or not.
    space = _screened_space()
    goal = goal_for(space.spec)
    study = Study(space)
    snap = _plateau_with_one_hope(space, study)
    for changed in ({"compilation": 0}, {"NCCL_PROTO": "Simple"}, {"compilation": 3}):
        study.launch(attrs.CONFIRM, [100.0, 100.1, 99.9], fidelity=attrs.SCREEN, **changed)
        snap = study.snapshot(state=snap.state)
        assert goal.last_look(snap) is not None
    study.launch(attrs.CONFIRM, [99.7, 99.8, 99.6], fidelity=attrs.SCREEN, NCCL_PROTO="Simple",
                 compilation=3)  # fmt: skip
    snap = study.snapshot(state=snap.state)
    assert PLATEAU_LOOKS == 4 and goal.last_look(snap) is None
    decision = next_launch.after_trial(snap, goal)
    # No more looks: the plateau comes, after a final comparison of the search's best
    # (not told from the defaults, but its interval still holds the target gain).
    assert decision.launches and {launch.role for launch in decision.launches} == {attrs.FINAL}
    assert decision.state is not None and decision.state.final.trigger is not None
    assert decision.state.final.trigger.reason == attrs.PLATEAU


def test_without_screening_the_plateau_stops_with_no_last_look() -> None:
    # The same launches at full fidelity: one more would be a model load of --trials.
    space = _space(stop={**SPACE["stop"], "patience": 5})
    goal = goal_for(space.spec)
    snap = _plateau_with_one_hope(space)
    assert goal.last_look(snap) is None
    decision = next_launch.after_trial(snap, goal)
    # No last look (a confirmation): the plateau, after a final comparison of the one
    # hope, which its single launch cannot rule out.
    assert {launch.role for launch in decision.launches} == {attrs.FINAL}
    assert decision.state is not None and decision.state.final.trigger is not None
    assert decision.state.final.trigger.reason == attrs.PLATEAU


def test_several_objectives_never_propose_simplify_nor_prune() -> None:
    several = _space(
        objectives=[
            {"metric": "output_throughput", "concurrency": 1},
            {"metric": "ttft_ms_p99", "concurrency": 1, "direction": "minimize"},
        ]
    )
    goal = goal_for(several.spec)
    assert goal.tpe_only
    study = Study(_space())  # the same launches a single objective would propose after
    _baselines(study)
    snap = study.snapshot()
    assert goal.proposal(snap)[0] == [] and goal.final_checks(snap)[0] == []
    assert goal.futile_chance(snap) is None and goal.prune_check(snap.facts) is None
    assert goal_for(snap.spec).proposal(snap)[0] != []


def _simplified_study(simpler_launches: tuple[float, float]) -> tuple[Study, StudyState, str]:
    """The best (NCCL_PROTO=LL and -O3, two noisy launches about 27% over the defaults),
    its simplification without -O3 launched twice, then a plateau."""
    space = _space()
    study = Study(space)
    _baselines(study)
    study.launch(attrs.SEARCH, [130.0, 130.1, 129.9], proposer=attrs.LOCAL, NCCL_PROTO="LL",
                 compilation=3)  # fmt: skip
    study.launch(attrs.CONFIRM, [124.0, 124.1, 123.9], NCCL_PROTO="LL", compilation=3)
    best = study.trials[-1].config
    for value in simpler_launches:
        study.launch(attrs.SIMPLIFY, [value, value + 0.1, value - 0.1], NCCL_PROTO="LL")
    for value in (0, 3):  # three search trials without a gain: patience 3 used up
        study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL,
                     NCCL_PROTO="Simple", compilation=value)  # fmt: skip
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, NCCL_PROTO="Simple")
    return study, StudyState(incumbent=best, last_gain_trial=3, simplified=(best,)), best


def test_a_simplification_trailing_by_more_than_min_gain_is_launched_again_not_answered() -> None:
    """Within noise of the best but 1.6% slower (min_gain 1%): the candidate stays the best,
    and the tiebreak launches the simpler version again before the final comparison."""
    study, state, best = _simplified_study((128.0, 122.0))
    simpler = study.trials[4].config
    rec = study.snapshot(state=state).facts.candidate()
    assert rec is not None and (rec.recommended, rec.trailing) == (best, simpler)
    decision = next_launch.after_trial(study.snapshot(state=state), goal_for(study.space.spec))
    assert decision.stop is None
    (launch,) = decision.launches
    assert launch.role == attrs.CONFIRM and launch.extra_attrs[attrs.CONFIG] == simpler
    assert launch.message is not None and "trails" in launch.message
    # The same simplification 0.4% slower is the candidate: no tiebreak, the final comparison.
    study, state, best = _simplified_study((128.5, 124.5))
    rec = study.snapshot(state=state).facts.candidate()
    assert rec is not None and rec.recommended == study.trials[4].config and rec.trailing is None
    final = next_launch.after_trial(study.snapshot(state=state), goal_for(study.space.spec))
    assert [launch.role for launch in final.launches] == [attrs.FINAL] * 4


def test_defaults_trailing_a_best_within_noise_get_a_launch_before_they_are_kept() -> None:
    """A best 4% ahead of the defaults but within noise (two launches far apart): before the
    plateau keeps the defaults, the close call gets a launch (the tiebreak), which
    hidden-gain + probe at 2% noise needs (seeds 13 and 22 kept the defaults without it)."""
    space = _space()
    study = Study(space)
    _baselines(study)
    study.launch(attrs.SEARCH, [110.0, 110.1, 109.9], proposer=attrs.LOCAL, NCCL_PROTO="LL")
    study.launch(attrs.CONFIRM, [98.0, 98.1, 97.9], NCCL_PROTO="LL")
    for value in (0, 3):  # three search trials without a gain: patience 3 used up
        study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL,
                     NCCL_PROTO="Simple", compilation=value)  # fmt: skip
    study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, NCCL_PROTO="Simple")
    state = StudyState(incumbent=study.trials[0].config, last_gain_trial=3)
    rec = study.snapshot(state=state).facts.candidate()
    assert rec is not None and rec.keep_defaults and rec.best == study.trials[2].config
    decision = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert decision.stop is None
    (launch,) = decision.launches
    assert launch.role == attrs.CONFIRM and launch.params == _params(space)  # the defaults
    assert launch.message is not None and "[defaults] trails" in launch.message


DRAFTS = {
    "args": ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": {value}}'],
    "choices": ["default", 3],
}


def test_the_tiebreak_never_queues_a_launch_its_fidelity_has_no_room_for() -> None:
    # The screened defaults (3 launches, 4% apart) trail a full-only best (speculative
    # decoding, 2 launches) by 2.2%, within the noise, and the full loads left are the
    # final comparison's: the best, the less measured, would get a launch that never runs
    # (each decision queued it again, trial after trial); the defaults' screening launch can.
    space = _space(
        params={**SPACE["params"], "drafts": DRAFTS},
        screening={"args": ["--load-format", "dummy"]},
    )
    study = Study(space)
    study.launch(attrs.BASELINE, [98.0, 98.1, 97.9], fidelity=attrs.SCREEN)
    study.launch(attrs.BASELINE, [102.0, 102.1, 101.9], fidelity=attrs.SCREEN)
    study.launch(attrs.BASELINE, [100.0, 100.1, 99.9], fidelity=attrs.FULL)
    study.launch(attrs.CONFIRM, [100.0, 100.1, 99.9], fidelity=attrs.SCREEN)
    study.launch(attrs.SEARCH, [102.0, 102.1, 101.9], proposer=attrs.LOCAL, drafts=3,
                 fidelity=attrs.FULL)  # fmt: skip
    study.launch(attrs.CONFIRM, [102.4, 102.5, 102.3], drafts=3, fidelity=attrs.FULL)
    snap = study.snapshot(budget=3 + 2 * space.spec.stop.final_launches)
    rec = snap.facts.candidate()
    assert rec is not None and rec.keep_defaults and rec.best != rec.recommended
    assert not snap.has_room(_params(space, drafts=3))
    launches = final_checks.tiebreak(snap)
    assert [(launch.role, _changed(launch)) for launch in launches] == [(attrs.CONFIRM, {})]


def test_a_resumed_run_takes_the_open_comparisons_next_look_before_any_search() -> None:
    space = _space()
    study = Study(space)
    best, state = _small_gain_at_plateau(study)
    first = next_launch.after_trial(study.snapshot(state=state), goal_for(space.spec))
    assert first.state is not None and first.state.final.looks is not None
    for candidate, value in ((True, 105.0), (False, 101.0), (False, 103.5), (True, 106.5)):
        _final(study, candidate, value)
    # The run ended there (its budget): the answer is not settled.
    ended = first.state.replace(
        final=dataclasses.replace(first.state.final, trigger=None), stop_reason=attrs.BUDGET
    )
    snap = study.snapshot(state=ended, finished=None)
    rec = snap.facts.recommendation()
    assert rec is not None and rec.outcome == "not_settled" and rec.unsettled is not None
    # The same study with a larger --trials: the comparison's next look, nothing else.
    resumed = next_launch.opening(snap, goal_for(space.spec))
    sized = first.state.final.looks.sized
    assert [launch.claim for launch in resumed.launches] == [
        (attrs.FINAL, f"{best}:{slot}") for slot in range(4, 2 * sized)
    ]
    assert resumed.state is not None and resumed.state.final.trigger is not None
    # A budget too small for that look: the study goes on as it would (no lopsided look).
    tight = study.snapshot(state=ended, finished=None, budget=len(study.rows) + 1)
    assert all(launch.role != attrs.FINAL for launch in next_launch.opening(tight, goal_for(
        space.spec)).launches)  # fmt: skip


def test_a_resumed_run_compares_the_candidate_the_budget_had_no_room_for() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    best = _confirmed_gain(study)
    ended = StudyState(incumbent=best, stop_reason=attrs.BUDGET)
    snap = study.snapshot(state=ended, finished=None)
    rec = snap.facts.recommendation()
    assert rec is not None and rec.outcome == "not_settled"
    assert rec.unsettled is not None and rec.unsettled.launches_each == 0
    resumed = next_launch.opening(snap, goal_for(space.spec))
    assert [launch.role for launch in resumed.launches] == [attrs.FINAL] * 4
    assert [launch.config == best for launch in resumed.launches] == [True, False, False, True]


def test_the_reserve_goes_to_the_search_when_nothing_is_worth_a_comparison() -> None:
    space = _space()
    study = Study(space)
    _baselines(study)
    for value in (0, 3):  # slower: nothing the search could confirm, nothing hides a gain
        study.launch(attrs.SEARCH, [97.0, 97.1, 96.9], proposer=attrs.LOCAL, compilation=value)
    budget = len(study.rows) + 4  # only the first look's launches are left
    snap = study.snapshot(budget=budget)
    assert snap.facts.comparison_candidate() is None
    decision = next_launch.after_trial(snap, goal_for(space.spec))
    assert decision.stop is None
    assert [launch.role for launch in decision.launches] == [attrs.SEARCH]
