"""tuner/study/policy/failed_before.py: what failed launches refuse, rule by rule.

Trials are TrialView values made by hand (their params, state and failure cause), as the
study's trials read; then the policy's step and the local search on tests/unit/
test_policy.py's hand-made study: the message said once when a value is learned, the
second chance of a timeout, one untried value at a time once a failure counted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.unit.test_policy import Study, _baselines, _space
from tuner.space.settings import baseline_params, settings_from_params
from tuner.storage import LaunchStatus
from tuner.study import attrs
from tuner.study.policy import next_launch, proposals
from tuner.study.policy.failed_before import lessons, retries, values_of
from tuner.study.policy.goal import goal_for
from tuner.study.state import TrialView

SEQS, TOKENS, UTIL, PROTO = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    ("NCCL_PROTO"),
)
GRAPHS = "oom_graph_capture"
KV = "oom_kv_cache"


class Trials:
    """Finished launches in the order they ran: ``ok`` started, ``fail`` failed."""

    def __init__(self) -> None:
        self.trials: list[TrialView] = []

    def _add(self, state: str, cause: str | None, screen: bool, changed: dict[str, Any]) -> int:
        number = len(self.trials)
        config = ",".join(f"{k}={v}" for k, v in sorted(changed.items())) or "defaults"
        self.trials.append(
            TrialView(
                number,
                state,
                attrs.SEARCH,
                attrs.LOCAL,
                config,
                launched=True,
                fidelity=attrs.SCREEN if screen else attrs.FULL,
                params={SEQS: "default", PROTO: "default", **changed},
                cause=cause,
            )
        )
        return number

    def ok(self, **changed: Any) -> int:
        return self._add("COMPLETE", None, False, changed)

    def fail(self, cause: str, *, screen: bool = False, **changed: Any) -> int:
        return self._add("FAIL", cause, screen, changed)

    def retry_of(self, number: int, cause: str) -> int:
        first = self.trials[number]
        self.trials.append(
            dataclasses.replace(first, number=len(self.trials), retry_of=number, cause=cause)
        )
        return len(self.trials) - 1


def refusal(trials: Trials, *, screening: bool = False, **params: Any) -> str | None:
    return lessons(trials.trials, screening=screening).refusal(params)


def test_a_value_two_failures_share_is_refused_alone_never_its_companions() -> None:
    t = Trials()
    t.ok()  # the defaults
    t.fail(GRAPHS, **{SEQS: 512, PROTO: "LL"})
    assert refusal(t, **{SEQS: 512}) is None  # one failure: the combination only
    assert refusal(t, **{SEQS: 512, PROTO: "LL", TOKENS: 4096}) == (
        "NCCL_PROTO=LL with max_num_seqs=512 failed 1 of 1 launches: CUDA out of memory "
        "during graph capture; not launched together again"
    )
    t.ok(**{PROTO: "LL"})  # LL started: cleared
    t.fail(KV, **{SEQS: 512, UTIL: 0.8})  # another moment, the same kind: memory
    assert refusal(t, **{SEQS: 512}) == (
        "max_num_seqs=512 failed 2 of 2 launches: CUDA out of memory during graph capture, "
        "not enough GPU memory for the KV cache; not launched again"
    )
    assert refusal(t, **{PROTO: "LL"}) is None
    assert refusal(t, **{UTIL: 0.8}) is None  # the failure is explained by 512
    assert lessons(t.trials).learned(3) == [refusal(t, **{SEQS: 512})]
    assert lessons(t.trials).learned(1) == []  # its combination is now explained by 512


def test_two_settings_that_fail_only_together_are_refused_as_a_pair() -> None:
    t = Trials()
    t.ok(**{TOKENS: 16384})
    t.ok(**{UTIL: 0.8})
    t.fail(KV, **{TOKENS: 16384, UTIL: 0.8})
    assert refusal(t, **{TOKENS: 16384, UTIL: 0.8, PROTO: "LL"}) == (
        "gpu_memory_utilization=0.8 with max_num_batched_tokens=16384 failed 1 of 1 launches: "
        "not enough GPU memory for the KV cache; not launched together again"
    )
    assert refusal(t, **{TOKENS: 16384}) is None
    assert refusal(t, **{UTIL: 0.8, PROTO: "LL"}) is None
    # both values started elsewhere: no suspect, nothing for the local search to avoid
    assert not lessons(t.trials).avoids({TOKENS: 16384, PROTO: "LL"})


def test_a_suspect_is_launched_beside_values_that_started_only() -> None:
    t = Trials()
    t.ok(**{TOKENS: 4096})
    t.fail(GRAPHS, **{SEQS: 1024, PROTO: "LL", UTIL: 0.92})
    found = lessons(t.trials)
    # LL failed once beside two untried values: with another untried value it is refused,
    # so that a second failure could not blame it for what 1024 did
    assert refusal(t, **{PROTO: "LL", SEQS: 64}) == (
        "NCCL_PROTO=LL failed in trial 1 (CUDA out of memory during graph capture) and has "
        "not started since: launched beside settings that started only, so that a second "
        "failure says which value fails; not launched"
    )
    assert refusal(t, **{PROTO: "LL", TOKENS: 4096}) is None
    assert found.counted
    # once LL and 0.92 started, 1024 is the failure's last suspect: the local search leaves
    # it out, but it is not refused (two settings may fail only together)
    t.ok(**{PROTO: "LL"})
    t.ok(**{UTIL: 0.92})
    found = lessons(t.trials)
    assert found.refusal({SEQS: 1024}) is None
    assert found.avoids({SEQS: 1024}) and not found.avoids({SEQS: 64})


def test_a_timeout_or_crash_counts_only_when_it_fails_again() -> None:
    t = Trials()
    first = t.fail("timeout", **{SEQS: 64})
    assert refusal(t, **{SEQS: 64}) is None
    assert [r.number for r in retries(t.trials)] == [first]
    again = t.retry_of(first, "timeout")
    assert retries(t.trials) == []  # one second chance
    assert refusal(t, **{SEQS: 64}) == (
        "max_num_seqs=64 failed 2 of 2 launches: not healthy within startup_timeout_s; "
        "not launched again"
    )
    assert again in lessons(t.trials).refused[0].failed
    crashed = t.fail("crash", **{SEQS: 128})
    assert [r.number for r in retries(t.trials)] == [crashed]


def test_causes_from_outside_never_count() -> None:
    t = Trials()
    t.fail("port_taken", **{SEQS: 64})
    t.fail("interrupted", **{SEQS: 64, PROTO: "LL"})
    t.fail("port_taken", **{SEQS: 64, PROTO: "Simple"})
    assert refusal(t, **{SEQS: 64}) is None and not lessons(t.trials).counted
    assert retries(t.trials) == []


def test_a_screening_launch_out_of_memory_counts_for_full_launches() -> None:
    t = Trials()
    t.fail(GRAPHS, screen=True, **{SEQS: 1024})
    t.fail("flag_refused", screen=True, **{PROTO: "Simple"})
    # random weights take the memory real ones do
    assert refusal(t, **{SEQS: 1024}) is not None
    assert refusal(t, screening=True, **{SEQS: 1024}) is not None
    # a refusal of the screening launch's own args says nothing of a full launch
    assert refusal(t, **{PROTO: "Simple"}) is None
    assert refusal(t, screening=True, **{PROTO: "Simple"}) is not None


def test_the_defaults_failing_refuse_nothing() -> None:
    t = Trials()
    t.fail(GRAPHS)
    assert not lessons(t.trials).counted and refusal(t, **{SEQS: 64}) is None


def test_values_are_compared_as_the_server_sees_them() -> None:
    assert values_of({SEQS: 512, UTIL: 0.8, PROTO: "default"}) == values_of(
        {SEQS: "512", UTIL: "0.8"}
    )


# --- in the policy --------------------------------------------------------------------------

SPACE = {
    "params": {
        "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple", "LL128"]},
        "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
        "max_num_seqs": {
            "args": ["--max-num-seqs", "{value}"],
            "choices": ["default", 64, 512, 1024],
        },
    },
    # patience 3: seven untried values in three search launches, groups of three
    "stop": {"patience": 3, "min_gain": 0.01, "baseline_launches": 2, "confirmations": 1},
}


def _failed(study: Study, cause: str, **changed: Any) -> int:
    """A search launch that failed with ``cause``, as run_trial records it."""
    number = study.launch(
        attrs.SEARCH, None, proposer=attrs.LOCAL, status=LaunchStatus.FAILED, **changed
    )
    params = {**baseline_params(study.space.spec), **changed}
    study.trials[number] = dataclasses.replace(study.trials[number], params=params, cause=cause)
    return number


def _started(study: Study, **changed: Any) -> None:
    number = study.launch(attrs.SEARCH, [100.0, 100.1, 99.9], proposer=attrs.LOCAL, **changed)
    params = {**baseline_params(study.space.spec), **changed}
    study.trials[number] = dataclasses.replace(study.trials[number], params=params)


def test_the_step_says_what_was_learned_once_and_gives_a_timeout_a_second_chance() -> None:
    space = _space(**SPACE)
    goal = goal_for(space.spec)
    study = Study(space)
    _baselines(study)
    _failed(study, GRAPHS, max_num_seqs=512, NCCL_PROTO="LL")
    part = next_launch.failures(study.snapshot(), goal)
    assert part is not None and part.goes_on and not part.launches
    assert part.messages == (
        "learned: NCCL_PROTO=LL with max_num_seqs=512 failed 1 of 1 launches: CUDA out of memory "
        "during graph capture; not launched together again",
    )
    _started(study, NCCL_PROTO="LL")
    assert next_launch.failures(study.snapshot(), goal) is None  # said once
    timed_out = _failed(study, "timeout", compilation=0)
    part = next_launch.failures(study.snapshot(), goal)
    assert part is not None and not part.messages
    (again,) = part.launches
    assert again.claim == (attrs.FAILURE_RETRY, str(timed_out))
    assert again.retry_of == timed_out and dict(again.params) == study.trials[timed_out].params
    # queued (a WAITING trial repeating it): not asked twice
    queued = study.snapshot().with_queued(part.launches)
    assert next_launch.failures(dataclasses.replace(queued, finished=None), goal) is None
    # off: nothing said, nothing launched again, nothing avoided
    off = _space(**SPACE, search={"learn_from_failures": False})
    assert dataclasses.replace(study.snapshot(), spec=off.spec).failures() is None


def test_while_a_failure_is_ambiguous_the_local_search_changes_one_value_at_a_time() -> None:
    space = _space(**SPACE)
    study = Study(space)
    _baselines(study)
    before, _ = proposals.local_proposal(study.snapshot())
    assert before is not None and len(_changes(before)) > 1  # a group of untried values
    _failed(study, GRAPHS, max_num_seqs=1024)  # alone: refused at once
    _failed(study, GRAPHS, max_num_seqs=512, compilation=3)  # which of the two?
    snap = study.snapshot()
    found = snap.failures().of(screening=False)  # type: ignore[union-attr]
    assert found.ambiguous
    # 512's setting failed alone at 1024: the likelier culprit, its companion goes first
    assert found.avoids({"max_num_seqs": 512}) and found.refusal({"max_num_seqs": 512}) is None
    seen = _proposals(study, 6)
    assert all(c.get("max_num_seqs") not in (512, 1024) for c in seen)
    assert all(len(c) == 1 for c in seen)  # one untried value, nothing carried yet
    assert {"compilation": 3} in seen
    # -O3 started: 512 is the failure's last suspect, left out; groups again
    study.trials = study.trials[: snap.finished + 1 if snap.finished is not None else None]
    _started(study, compilation=3)
    found = study.snapshot().failures().of(screening=False)  # type: ignore[union-attr]
    assert not found.ambiguous and found.avoids({"max_num_seqs": 512})
    assert all(c.get("max_num_seqs") not in (512, 1024) for c in _proposals(study, 4))


def _proposals(study: Study, n: int) -> list[dict[str, Any]]:
    """The local search's next ``n`` proposals, each queued before the next is asked."""
    seen = []
    for _ in range(n):
        found, _ = proposals.local_proposal(study.snapshot())
        if found is None:
            break
        seen.append(_changes(found))
        config = settings_from_params(study.space.spec, found).config_hash
        study.trials.append(TrialView(len(study.trials), "WAITING", attrs.SEARCH, None, config))
    return seen


def _changes(params: Any) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v != "default"}
