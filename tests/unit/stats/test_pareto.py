"""The Pareto rules on constructed estimates: dominance beyond noise, the front, the pick."""

from __future__ import annotations

import pytest

from tests.unit.stats.helpers import CONF, MIN_GAIN, estimate
from tuner.stats.pareto import ParetoAnswer, ParetoCandidate, ParetoJudge

# Objective 1: throughput (maximize); objective 2: a latency (minimize).
JUDGE = ParetoJudge(
    names=("tput", "ttft"),
    directions=("maximize", "minimize"),
    min_gain=MIN_GAIN,
    confidence=CONF,
)
SE = 0.005  # 0.5% of the mean: a 5% difference is far beyond the noise, 0.3% within it


def cand(key: str, tput: float, ttft: float, n_changed: int = 1, se: float = SE) -> ParetoCandidate:
    return ParetoCandidate(key, (estimate(tput, se), estimate(ttft, se)), n_changed, key)


BASE = cand("base", 100.0, 30.0, n_changed=0)


def judge(*cands: ParetoCandidate, baseline: ParetoCandidate | None = BASE) -> ParetoAnswer:
    return JUDGE.judge([c for c in (baseline, *cands) if c is not None], baseline)


def test_better_on_one_and_equal_on_the_other_dominates() -> None:
    seqs = cand("seqs", 105.0, 30.0)
    assert JUDGE.dominates(seqs, BASE)
    answer = judge(seqs)
    assert answer.entry("base").dominated_by == ("seqs",)
    assert answer.non_dominated == ("seqs",)


def test_a_trade_dominates_nothing_and_stays_on_the_front() -> None:
    fast_but_late = cand("batched", 114.0, 120.0)
    answer = judge(fast_but_late)
    assert set(answer.non_dominated) == {"base", "batched"}
    # Better than the defaults on one objective, worse on the other: not recommendable.
    assert answer.recommendable == ()
    assert answer.keep_defaults and answer.recommended == "base"
    assert "trade" in answer.reason


def test_noise_level_ties_are_not_dominated() -> None:
    # 0.3% apart on throughput and 0.2% on TTFT, each with a 0.5% error: within noise.
    a = cand("a", 105.0, 30.0)
    b = cand("b", 105.3, 29.94, n_changed=2)
    assert not JUDGE.dominates(a, b) and not JUDGE.dominates(b, a)
    answer = judge(a, b)
    assert {"a", "b"} <= set(answer.non_dominated)


def test_significant_on_one_but_slightly_worse_point_on_another_does_not_dominate() -> None:
    # b is far better on throughput, but its TTFT point estimate is a hair worse.
    a = cand("a", 100.0, 30.0)
    b = cand("b", 110.0, 30.05)
    assert not JUDGE.dominates(b, a)


def test_wide_intervals_dominate_nothing() -> None:
    # 5% apart, but with 10% errors: no verdict, so nothing is dominated.
    a = cand("a", 105.0, 30.0, se=0.1)
    base = cand("base", 100.0, 30.0, n_changed=0, se=0.1)
    answer = judge(a, baseline=base)
    assert set(answer.non_dominated) == {"a", "base"}
    assert answer.keep_defaults


def test_recommends_the_simplest_recommendable_then_the_largest_gain() -> None:
    seqs = cand("seqs", 105.0, 30.0, n_changed=1)
    seqs_proto = cand("seqs+proto", 105.1, 30.0, n_changed=2)  # a tie: also recommendable
    both = cand("both", 120.0, 120.0, n_changed=2)  # a trade: on the front, not recommendable
    answer = judge(seqs, seqs_proto, both)
    assert set(answer.non_dominated) == {"seqs", "seqs+proto", "both"}
    assert set(answer.recommendable) == {"seqs", "seqs+proto"}
    assert answer.recommended == "seqs" and not answer.keep_defaults
    assert "simplest of 2" in answer.reason and "tput" in answer.reason
    # Equally simple: the larger gain summed over objectives wins.
    lower_ttft = cand("ttft", 105.0, 27.0, n_changed=1)
    assert judge(seqs, lower_ttft).recommended == "ttft"


def test_a_dominated_configuration_is_never_recommended() -> None:
    seqs = cand("seqs", 105.0, 30.0, n_changed=2)
    better = cand("better", 110.0, 30.0, n_changed=3)
    answer = judge(seqs, better)
    assert answer.entry("seqs").dominated_by == ("better",)
    assert answer.recommended == "better"


def test_significantly_worse_on_one_objective_is_not_recommendable() -> None:
    slower_ttft = cand("x", 110.0, 33.0)  # +10% throughput, TTFT 10% worse
    answer = judge(slower_ttft)
    assert answer.recommendable == () and answer.keep_defaults


def test_without_the_defaults_the_simplest_non_dominated_is_named() -> None:
    a = cand("a", 105.0, 30.0, n_changed=2)
    b = cand("b", 110.0, 40.0, n_changed=1)
    answer = judge(a, b, baseline=None)
    assert answer.recommended == "b" and not answer.keep_defaults


def test_no_candidates_is_an_error() -> None:
    with pytest.raises(ValueError):
        JUDGE.judge([], BASE)
