"""tuner.stats.recommend: which configuration is recommended, and the sentence why."""

from __future__ import annotations

import math
import random

from tests.unit.stats.helpers import estimate, recommend_vs_base, simulate_launch
from tuner.stats.estimates import ConfigEstimate, between_launch_variance, config_estimate
from tuner.stats.recommend import Candidate


def _candidates(specs: list[tuple[str, float, int, int, bool]], seed: int = 1) -> list[Candidate]:
    """(key, true mean, launches, settings changed, confirmed) -> candidates at 1% noise."""
    rng = random.Random(seed)
    launches = {
        key: [simulate_launch(rng, mu, 0.01, 0.01) for _ in range(k)] for key, mu, k, _, _ in specs
    }
    noise = between_launch_variance(launches.values())
    return [
        Candidate(
            key, config_estimate(launches[key], noise), changed, confirmed, label=f"trial {i}"
        )
        for i, (key, _, _, changed, confirmed) in enumerate(specs)
    ]


def test_keep_the_defaults_when_nothing_beats_them() -> None:
    cands = _candidates(
        [
            ("base", 80, 2, 0, True),
            ("a", 80, 2, 2, True),
            ("b", 80, 1, 1, False),
            ("c", 80, 1, 3, False),
        ]
    )
    rec = recommend_vs_base(cands)
    assert rec.recommended == "base" and rec.keep_defaults
    # "a" has the best trusted mean by luck; single launches do not compete.
    assert rec.best == "a" and set(rec.equivalent) == {"base", "a"}
    assert rec.reason.startswith("keep the defaults: the best configuration, trial 1, is ")
    assert rec.reason.endswith("faster than the defaults, which is within the noise")
    assert rec.best_vs_baseline is not None and rec.best_vs_baseline.verdict == "within noise"


def test_keep_the_defaults_sentence_when_the_defaults_are_best() -> None:
    cands = _candidates([("base", 80, 2, 0, True), ("a", 76, 2, 2, True)])
    rec = recommend_vs_base(cands)
    assert rec.best == "base" and rec.recommended == "base"
    assert rec.reason.startswith(
        "keep the defaults: no configuration beat the defaults by more than the noise (±"
    )
    assert "and the 1% minimum gain" in rec.reason
    alone = recommend_vs_base(cands[:1])
    assert alone.reason == "keep the defaults: no other configuration was measured"


def test_a_real_gain_is_recommended() -> None:
    cands = _candidates([("base", 80, 2, 0, True), ("x", 86.4, 2, 3, True), ("y", 80, 1, 1, False)])
    rec = recommend_vs_base(cands)
    assert (rec.best, rec.recommended, rec.keep_defaults) == ("x", "x", False)
    assert rec.reason.startswith("trial 1 (3 settings changed) is ")
    assert "faster than the defaults" in rec.reason
    assert (
        rec.recommended_vs_baseline is not None and rec.recommended_vs_baseline.verdict == "better"
    )


def test_the_simplest_equivalent_configuration_wins() -> None:
    cands = [
        Candidate("base", estimate(80.0, 0.01, dof=20), 0),
        Candidate("x", estimate(86.4, 0.01, dof=20), 3, confirmed=True, label="trial 7"),
        Candidate("s", estimate(85.9, 0.01, dof=20), 2, confirmed=True, label="trial 3"),
        Candidate("t", estimate(83.0, 0.03, dof=20), 1, confirmed=True, label="trial 5"),
        Candidate("u", estimate(80.5, 0.01, dof=20), 1, confirmed=True, label="trial 9"),
    ]
    rec = recommend_vs_base(cands)
    assert rec.best == "x"
    # t and u are simpler and within noise of x, but neither beats the defaults
    # significantly; s does, with one change fewer than x.
    assert set(rec.equivalent) == {"x", "s", "t"}
    assert rec.recommended == "s"
    assert rec.reason.startswith("trial 3 (2 settings changed) is 7.4% ± ")
    assert "within noise of the best, trial 7 (3 settings changed;" in rec.reason
    assert rec.reason.endswith("fewer changes win")
    # Ties in changes go to the better mean.
    tie = [*cands[:2], Candidate("s2", estimate(86.2, 0.01, dof=20), 2, True), cands[2]]
    assert recommend_vs_base(tie).recommended == "s2"


def test_only_a_version_of_the_best_is_simpler_not_another_configuration() -> None:
    """Issue 24's misses: the search launched the three 2.5% flags together (+8%) and,
    elsewhere, two of them with a passenger (+5%); the two were within noise at 1% and
    the second had fewer changes, so it became the candidate, and the final comparison
    refuted or confirmed a gain 3% short of the optimum. A configuration with other
    settings is an alternative, not a simplification: the best stays the candidate,
    and only the best with settings dropped may replace it."""
    best = frozenset({("seqs", "128"), ("tokens", "16384"), ("car", "off"), ("algo", "tree")})
    two_of_three = frozenset({("seqs", "128"), ("tokens", "16384"), ("nch", "16")})
    cands = [
        Candidate("base", estimate(80.0, 0.01, dof=6), 0, changes=frozenset()),
        Candidate("all", estimate(86.4, 0.012, dof=6), 4, True, "trial 9", changes=best),
        Candidate("two", estimate(84.0, 0.012, dof=6), 3, True, "trial 4", changes=two_of_three),
    ]
    rec = recommend_vs_base(cands)
    assert set(rec.equivalent) == {"all", "two"}  # 2.9% apart, within noise here
    assert rec.recommended == "all"
    # The best less its idle passenger (the simplification step's launch) wins; the same
    # configuration launched by the search, its dropped setting never judged idle, does not.
    less = best - {("algo", "tree")}
    simpler = [*cands, Candidate("less", estimate(86.2, 0.012, dof=6), 3, True, changes=less)]
    assert recommend_vs_base(simpler).recommended == "less"
    unchecked = Candidate("less", estimate(86.2, 0.012, dof=6), 3, True, changes=less,
                          drops_checked=False)  # fmt: skip
    assert recommend_vs_base([*cands, unchecked]).recommended == "all"
    # Where settings are unknown (changes=None) fewer changes win, as before, when they
    # lose less than min_gain (1% here); "two" loses 2.9%.
    unknown = [Candidate(c.key, c.estimate, c.n_changed, c.confirmed, c.label) for c in cands]
    assert recommend_vs_base(unknown).recommended == "all"
    close = Candidate("two", estimate(85.8, 0.012, dof=6), 3, True, "trial 4")
    assert recommend_vs_base([*unknown[:2], close]).recommended == "two"


def test_a_simplification_that_loses_more_than_min_gain_is_not_the_answer() -> None:
    """Issue 24, seed 21 of the screened hidden-vllm cell: the simplification step's model
    judged --disable-custom-all-reduce idle; its two launches without it measured 2.5%
    below the best, within noise at 1%, and it stood in for the best, a real 2.5% given
    away. Fewer changes win a loss within noise only when it is also below min_gain."""
    best = frozenset({("seqs", "128"), ("tokens", "16384"), ("car", "off")})
    less = best - {("car", "off")}
    cands = [
        Candidate("base", estimate(80.0, 0.01, dof=6), 0, changes=frozenset()),
        Candidate("all", estimate(86.4, 0.012, dof=6), 3, True, "trial 9", changes=best),
        Candidate("less", estimate(84.3, 0.012, dof=6), 2, True, "trial 31", changes=less),
    ]
    rec = recommend_vs_base(cands)
    assert set(rec.equivalent) == {"all", "less"}  # 2.5% apart, within noise here
    assert rec.recommended == "all"
    assert rec.trailing == "less"  # the tiebreak launches the less measured of the two
    assert rec.reason.endswith(
        "none a version of it with fewer changes, less than 1% slower and significantly "
        "faster than the defaults"
    )
    # The same simplification 0.5% below the best is the answer: fewer changes win.
    idle = Candidate("less", estimate(86.0, 0.012, dof=6), 2, True, "trial 31", changes=less)
    settled = recommend_vs_base([*cands[:2], idle])
    assert (settled.recommended, settled.trailing) == ("less", None)


def test_an_unconfirmed_lucky_launch_is_neither_best_nor_recommended() -> None:
    cands = _candidates([("base", 80, 2, 0, True), ("lucky", 96, 1, 1, False)])
    rec = recommend_vs_base(cands)
    assert rec.best == "base" and rec.recommended == "base"
    assert rec.reason.startswith("keep the defaults: no other configuration was confirmed")
    assert "trial 1 looked 2" in rec.reason and "not launched again" in rec.reason
    # Once confirmed, it competes.
    confirmed = [c if c.key == "base" else Candidate(c.key, c.estimate, 1, True) for c in cands]
    assert recommend_vs_base(confirmed).recommended == "lucky"


def test_a_gain_below_min_gain_keeps_the_defaults() -> None:
    tight = ConfigEstimate(100.5, 0.05, math.inf, 5, 15, var_between=0.0025, dof_between=math.inf)
    base = ConfigEstimate(100.0, 0.05, math.inf, 5, 15, var_between=0.0025, dof_between=math.inf)
    rec = recommend_vs_base([Candidate("base", base, 0), Candidate("a", tight, 2, True, "trial 4")])
    assert rec.keep_defaults and rec.best == "a"
    assert "less than the 1% minimum gain" in rec.reason


def test_recommend_for_a_latency() -> None:
    cands = _candidates(
        [("base", 100, 2, 0, True), ("fast", 90, 2, 2, True), ("slow", 120, 2, 1, True)]
    )
    rec = recommend_vs_base(cands, direction="minimize")
    assert rec.recommended == "fast"
    assert "faster than the defaults" in rec.reason
