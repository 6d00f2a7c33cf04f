"""tuner/views/best_failures.py: the failed launches by cause and what they taught, as `tuner
trials`, `tuner best` and the report print them; the trial's line with its cause."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState

from tests.unit.test_failed_before import GRAPHS, KV, PROTO, SEQS, TOKENS, UTIL, Trials
from tuner.space.spec import parse_space
from tuner.study import attrs
from tuner.views.best_failures import failures_answer
from tuner.views.trial_line import trial_line

SPEC = parse_space(
    {
        "server": {"command": ["srv", "--port", "{port}"]},
        "params": {"x": {"env": "X", "choices": ["default", 1]}},
    },
    Path("s.yaml"),
).spec


def test_the_failures_by_cause_then_what_they_taught() -> None:
    t = Trials()
    t.ok(**{PROTO: "LL"})
    t.fail(GRAPHS, **{SEQS: 512})
    t.fail(KV, **{TOKENS: 16384, UTIL: 0.8, PROTO: "LL"})
    t.fail("port_taken", **{SEQS: 64})
    t.fail("timeout", **{SEQS: 128})
    answer = failures_answer(t.trials, SPEC)
    assert answer is not None
    assert answer.lines() == [
        "Failed launches: 4 (1 CUDA out of memory during graph capture, 1 not enough GPU "
        "memory for the KV cache, 1 its port was taken (not counted against the settings), 1 "
        "not healthy within startup_timeout_s (counted once it failed again)).",
        "Learned: max_num_seqs=512 failed 1 of 1 launches: CUDA out of memory during graph "
        "capture; not launched again.",
        "Learned: NCCL_PROTO=LL with gpu_memory_utilization=0.8 with max_num_batched_tokens=16384 "
        "failed 1 of 1 launches: not enough GPU memory for the KV cache; not launched together "
        "again.",
    ]
    assert answer.to_json()["causes"] == {
        "oom_graph_capture": 1,
        "port_taken": 1,
        "oom_kv_cache": 1,
        "timeout": 1,
    }


def test_a_last_suspect_is_said_left_out_and_off_says_nothing_was_refused() -> None:
    t = Trials()
    t.fail(GRAPHS, **{SEQS: 1024, PROTO: "LL"})
    t.ok(**{PROTO: "LL"})
    answer = failures_answer(t.trials, SPEC)
    assert answer is not None and answer.left_out == (
        "max_num_seqs=1024 failed in trial 0 (CUDA out of memory during graph capture) beside "
        "settings that started since: the local search no longer proposes it; not refused, "
        "since two settings may fail only together",
    )
    off = SPEC.model_copy(
        update={"search": SPEC.search.model_copy(update={"learn_from_failures": False})}
    )
    lines = failures_answer(t.trials, off).lines()  # type: ignore[union-attr]
    assert lines[1] == "search.learn_from_failures is false: no setting was refused for them."
    assert not any(line.startswith(("Learned", "Left out")) for line in lines)
    assert failures_answer(Trials().trials, SPEC) is None


def test_a_failed_trials_line_names_its_cause_before_its_reason() -> None:
    # (a trial made outside a study is number -1)
    trial = optuna.trial.create_trial(
        state=TrialState.FAIL,
        user_attrs={
            attrs.PARAMS: {SEQS: 512},
            attrs.ROLE: attrs.SEARCH,
            attrs.FAILURE_CAUSE: GRAPHS,
            attrs.REASON: "server exited with code 1 before it was healthy: torch.OutOfMemoryError",
        },
    )
    assert trial_line(trial, "output_throughput") == (
        "trial  -1 search   fail (CUDA out of memory during graph capture): server exited with "
        "code 1 before it was healthy: torch.OutOfMemoryError  max_num_seqs=512"
    )
