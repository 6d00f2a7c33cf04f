"""The probe's decisions: Welch against the default, which NCCL params can help, the floor."""

from __future__ import annotations

import math

import pytest

from tuner.probe.screen import (
    ProbeComparison,
    comm_share,
    compare_probe,
    floor_tokens_per_s,
    nccl_finding,
    together_values,
)

DEFAULT = [100.0, 100.3, 99.8, 100.1, 99.9]


def _scaled(factor: float) -> list[float]:
    return [v * factor for v in DEFAULT]


def test_a_clearly_slower_probe_is_slower_and_a_faster_one_faster() -> None:
    slow = compare_probe(_scaled(1.03), DEFAULT, size=8, confidence=0.95)
    assert slow.verdict == "slower"
    assert slow.rel_diff == pytest.approx(0.03)
    assert 0 < slow.half_width < 0.01
    fast = compare_probe(_scaled(0.95), DEFAULT, size=8, confidence=0.95)
    assert fast.verdict == "faster" and fast.gain == pytest.approx(0.05)
    assert "faster" in fast.describe() and "5.0%" in fast.describe()


def test_a_difference_inside_the_noise_is_within_noise() -> None:
    noisy = [100.0, 104.0, 96.0, 102.0, 98.0]
    same = compare_probe([v * 1.005 for v in noisy], noisy, size=8, confidence=0.95)
    assert same.verdict == "within noise"
    assert same.optimistic_gain > 0  # it might still be a little faster


def test_the_half_width_follows_welch_with_satterthwaite_dof() -> None:
    a, b = [10.0, 12.0, 11.0], [10.0, 10.5, 9.5, 10.0]
    cmp = compare_probe(a, b, size=1, confidence=0.95)
    var_a = sum((x - 11.0) ** 2 for x in a) / 2 / 3
    var_b = sum((x - 10.0) ** 2 for x in b) / 3 / 4
    se = math.sqrt(var_a / 10.0**2 + (11.0 / 10.0) ** 2 * var_b / 10.0**2)
    assert cmp.rel_diff == pytest.approx(0.1)
    assert 2.0 * se < cmp.half_width < 5.0 * se  # t of a few dof, not 1.96


def test_one_sample_is_not_a_comparison() -> None:
    with pytest.raises(ValueError, match="at least two samples"):
        compare_probe([1.0], DEFAULT, size=8, confidence=0.95)


def _cmp(gain: float, half: float = 0.002) -> ProbeComparison:
    verdict = "faster" if gain > half else "slower" if -gain > half else "within noise"
    return ProbeComparison(8, 100 * (1 - gain), 100, -gain, half, verdict)  # type: ignore[arg-type]


def test_nccl_cannot_help_when_the_best_gain_times_the_share_is_below_min_gain() -> None:
    verdict = nccl_finding(
        {
            "NCCL_PROTO": {"LL": _cmp(0.005), "Simple": _cmp(-0.025)},
            "NCCL_MAX_NCHANNELS": {"16": _cmp(0.003), "4": _cmp(-0.004)},
            "NCCL_ALGO": {"Tree": "NCCL WARN no algorithm for AllGather"},
        },
        comm_share=0.67,
        min_gain=0.01,
    )
    assert not verdict.can_help
    assert verdict.frozen == {"NCCL_PROTO", "NCCL_MAX_NCHANNELS", "NCCL_ALGO"}
    assert verdict.failed == {"NCCL_ALGO=Tree": "NCCL WARN no algorithm for AllGather"}
    assert "NCCL settings cannot help at these sizes" in verdict.sentence()
    assert "NCCL_PROTO=LL" in verdict.sentence()
    assert verdict.to_json()["frozen"] == ["NCCL_ALGO", "NCCL_MAX_NCHANNELS", "NCCL_PROTO"]


def test_a_param_whose_best_value_can_move_the_objective_stays_searchable() -> None:
    verdict = nccl_finding(
        {"NCCL_PROTO": {"LL": _cmp(0.075)}, "NCCL_BUFFSIZE": {"16777216": _cmp(0.0)}},
        comm_share=0.67,
        min_gain=0.01,
    )
    assert verdict.can_help
    assert verdict.frozen == {"NCCL_BUFFSIZE"}
    assert "NCCL_PROTO=LL (+7.5%)" in verdict.sentence()
    assert "no longer searched: NCCL_BUFFSIZE" in verdict.sentence()


def test_the_optimistic_end_of_a_noisy_probe_keeps_a_param_searchable() -> None:
    verdict = nccl_finding(
        {"NCCL_PROTO": {"LL": _cmp(0.004, half=0.02)}}, comm_share=0.67, min_gain=0.01
    )
    assert verdict.frozen == frozenset()


def test_several_small_significant_gains_together_keep_their_params() -> None:
    by_param = {f"P{i}": {"v": _cmp(0.01)} for i in range(3)} | {"Q": {"v": _cmp(0.0)}}
    verdict = nccl_finding(by_param, comm_share=0.5, min_gain=0.01)
    # alone each moves the objective by (1% + 0.2%) x 0.5 < 1%; together 1.5%
    assert verdict.combined_gain == pytest.approx(0.015)
    assert verdict.frozen == {"Q"}


def test_small_gains_are_kept_only_when_their_probe_at_once_reaches_min_gain() -> None:
    # Each param's best of three noisy values: the maxima add up past min_gain (winner's curse).
    by_param = {
        f"P{i}": {"a": _cmp(0.012), "b": _cmp(0.004), "c": _cmp(-0.01)} for i in range(3)
    } | {"Q": {"v": _cmp(0.0)}}
    summed = nccl_finding(by_param, comm_share=0.5, min_gain=0.01)
    assert summed.combined_gain == pytest.approx(0.018)
    assert together_values(by_param, summed) == {"P0": "a", "P1": "a", "P2": "a"}
    # Probed at once they are 1% faster at all-reduce: 0.5% of the objective, frozen.
    weak = nccl_finding(by_param, comm_share=0.5, min_gain=0.01, together=_cmp(0.01))
    assert weak.combined_gain == pytest.approx(0.005)
    assert weak.frozen == {"P0", "P1", "P2", "Q"} and not weak.can_help
    # 3% faster at once: 1.5% of the objective, so the three stay searchable.
    strong = nccl_finding(by_param, comm_share=0.5, min_gain=0.01, together=_cmp(0.03))
    assert strong.frozen == {"Q"}


def test_an_open_param_keeps_only_the_values_that_can_help_and_nominates_the_fastest() -> None:
    verdict = nccl_finding(
        {
            # LL and LL128 can each move the objective by min_gain; Simple is slower.
            "NCCL_PROTO": {"LL": _cmp(0.075), "LL128": _cmp(0.03), "Simple": _cmp(-0.02)},
            # One value might help at its interval's optimistic end, though not significantly.
            "NCCL_MAX_NCHANNELS": {"16": _cmp(0.004, half=0.02), "4": _cmp(0.0)},
            "NCCL_BUFFSIZE": {"16777216": _cmp(0.0)},
        },
        comm_share=0.67,
        min_gain=0.01,
    )
    assert verdict.frozen == {"NCCL_BUFFSIZE"}
    assert verdict.open_values == {"NCCL_PROTO": ("LL", "LL128"), "NCCL_MAX_NCHANNELS": ("16",)}
    # Nominated: the significantly fastest open value; a param with none is left to the search.
    assert verdict.nominee == {"NCCL_PROTO": "LL"}
    saved = verdict.to_json()
    assert saved["open_values"] == {"NCCL_PROTO": ["LL", "LL128"], "NCCL_MAX_NCHANNELS": ["16"]}
    assert saved["nominee"] == {"NCCL_PROTO": "LL"}


def test_params_kept_together_keep_their_significantly_faster_values() -> None:
    by_param = {f"P{i}": {"a": _cmp(0.012), "b": _cmp(0.001), "c": _cmp(-0.01)} for i in range(3)}
    verdict = nccl_finding(by_param, comm_share=0.5, min_gain=0.01, together=_cmp(0.03))
    assert verdict.frozen == frozenset()
    assert verdict.open_values == {f"P{i}": ("a",) for i in range(3)}
    assert verdict.nominee == {f"P{i}": "a" for i in range(3)}


def test_the_comm_share_and_the_floor() -> None:
    assert comm_share(0.008, 0.0123) == pytest.approx(0.65, abs=0.01)
    assert comm_share(0.02, 0.01) == 1.0  # a probe slower than the step is capped
    assert comm_share(0.001, 0.0) == 1.0
    # 122 all-reduces of 67.5 us: at most 121 tok/s for one stream
    assert floor_tokens_per_s(122, 67.5) == pytest.approx(121.4, abs=0.1)
