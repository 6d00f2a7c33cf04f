"""tuner/study/facts/final.py: final comparisons read back from the stored launches."""

from __future__ import annotations

from tuner import stats
from tuner.storage import LaunchRow, LaunchStatus
from tuner.study.facts import final

DEFAULTS = {"NCCL_PROTO": "default"}
LL = {"NCCL_PROTO": "LL"}
SIMPLE = {"NCCL_PROTO": "Simple"}


def _row(
    number: int, params: dict[str, str], value: float
) -> tuple[LaunchRow, stats.LaunchEstimate]:
    row = LaunchRow(
        id=number + 1,
        trial_number=number,
        role="final",
        config_hash=params["NCCL_PROTO"],
        params=params,
        status=LaunchStatus.COMPLETE,
        objective_rounds=[value, value, value],
    )
    return row, stats.launch_estimate([value, value * 1.001, value * 0.999])


def test_blocks_follow_the_trial_order_a_candidate_opens_one_the_defaults_join_it() -> None:
    rows = [
        _row(12, DEFAULTS, 100.0),  # a stray baseline before any candidate: no block
        _row(14, LL, 105.0),
        _row(15, DEFAULTS, 100.0),
        _row(16, DEFAULTS, 100.2),
        _row(17, LL, 105.2),
        _row(30, SIMPLE, 103.0),  # a resumed study's second comparison
        _row(31, DEFAULTS, 100.1),
    ]
    found = final.blocks(list(reversed(rows)))  # the store's order does not matter
    assert [(b.candidate, len(b.candidate_launches), len(b.baseline_launches)) for b in found] == [
        ("LL", 2, 2),
        ("Simple", 1, 1),
    ]
    assert [b.first_trial for b in found] == [14, 30]


def test_every_final_comparison_is_judged_with_bonferroni_over_all_of_them() -> None:
    rows = [
        _row(4, LL, 108.0),
        _row(5, DEFAULTS, 100.0),
        _row(6, DEFAULTS, 100.1),
        _row(7, LL, 108.1),
        _row(8, SIMPLE, 101.0),  # queued, its defaults' launches not done: not judged yet
    ]
    found = final.blocks(rows)
    noise = final.noise_over({}, rows)
    opening = [stats.launch_estimate([100.0, 100.1, 99.9])] * 2
    verdicts = final.verdicts(
        found, opening, noise, direction="maximize", min_gain=0.01, confidence=0.95
    )
    assert [v.candidate for v in verdicts] == ["LL"]
    assert verdicts[0].comparisons == 2 and verdicts[0].gain.confidence == 0.975
    assert verdicts[0].passed
