"""The ceiling: bound, share reached, and the most a study's launch settings could add."""

from __future__ import annotations

import pytest

from tuner.probe.ceiling import CeilingInputs, ceiling


def inputs(**changes: object) -> CeilingInputs:
    base = dict(
        weight_bytes_per_gpu=6.0e9,
        memory_bandwidth_gbps=1500.0,  # memory floor 4 ms
        allreduces_per_token=100,
        best_us=60.0,  # communication floor 6 ms
        own_us=62.0,  # 6.2 ms with the configuration's own NCCL setting
        measured_tokens_per_s=80.0,  # a step of 12.5 ms
        other_settings=False,
    )
    base.update(changes)
    return CeilingInputs(**base)  # type: ignore[arg-type]


def test_bound_is_one_over_the_two_floors() -> None:
    c = ceiling(inputs())
    assert c.memory_s == pytest.approx(0.004)
    assert c.comm_s == pytest.approx(0.006)
    assert c.bound_tokens_per_s == pytest.approx(100.0)
    assert c.share == pytest.approx(0.8)


def test_nccl_only_study_can_cut_only_the_probed_difference() -> None:
    c = ceiling(inputs())
    assert c.nccl_cut_s == pytest.approx(0.0002)
    assert c.rest_s == pytest.approx(0.0125 - 0.004 - 0.0062)
    assert c.max_gain == pytest.approx(0.0125 / (0.0125 - 0.0002) - 1)
    assert "no launch setting of this study can give more than 1.6%" in c.sentence


def test_other_settings_may_take_the_rest_but_not_below_the_floors() -> None:
    c = ceiling(inputs(other_settings=True))
    assert c.max_gain == pytest.approx(100.0 / 80.0 - 1)  # up to the bound itself
    assert "25.0%" in c.sentence


def test_missing_figures_are_named() -> None:
    c = ceiling(inputs(memory_bandwidth_gbps=None, measured_tokens_per_s=None))
    assert c.bound_tokens_per_s is None and c.max_gain is None
    assert "memory bandwidth" in c.sentence and "measured decode rate" in c.sentence
    assert len(c.missing) == 2


def test_faster_than_the_floors_reads_no_gap() -> None:
    c = ceiling(inputs(measured_tokens_per_s=120.0))
    assert c.max_gain is None
    assert "overstated" in c.sentence


def test_speculative_decoding_is_outside_the_bound() -> None:
    c = ceiling(inputs(speculative=True, other_settings=True))
    assert c.max_gain is None and c.bound_tokens_per_s == pytest.approx(100.0)
    assert "speculative" in c.sentence
