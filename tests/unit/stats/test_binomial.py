"""tuner.stats.binomial against closed forms and the exact binomial sums that define it."""

from __future__ import annotations

import math

import pytest

from tuner.stats import clopper_pearson_lower, clopper_pearson_upper


def _at_least(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed term by term."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


def _at_most(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))


@pytest.mark.parametrize(
    ("k", "n", "expected"),
    [(40, 40, 0.05 ** (1 / 40)), (32, 40, 0.668), (29, 30, 0.851), (1, 1, 0.05)],
)
def test_lower_bound_values(k: int, n: int, expected: float) -> None:
    assert clopper_pearson_lower(k, n) == pytest.approx(expected, abs=5e-4)


def test_all_successes_closed_form() -> None:
    # P(X >= n) = p ** n: the bound is (1 - confidence) ** (1 / n) exactly.
    assert clopper_pearson_lower(40, 40) == pytest.approx(0.9278424754944854, abs=1e-12)
    assert clopper_pearson_lower(30, 30, 0.99) == pytest.approx(0.01 ** (1 / 30), abs=1e-12)


def test_no_success_is_zero_and_all_is_one() -> None:
    assert clopper_pearson_lower(0, 40) == 0.0
    assert clopper_pearson_upper(40, 40) == 1.0
    # P(X <= 0) = (1 - p) ** n.
    assert clopper_pearson_upper(0, 10) == pytest.approx(1 - 0.05 ** (1 / 10), abs=1e-12)


@pytest.mark.parametrize(("k", "n"), [(1, 5), (3, 7), (29, 30), (32, 40), (20, 40), (39, 40)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_bounds_solve_the_exact_binomial_sums(k: int, n: int, confidence: float) -> None:
    alpha = 1 - confidence
    lower = clopper_pearson_lower(k, n, confidence)
    upper = clopper_pearson_upper(k, n, confidence)
    assert _at_least(k, n, lower) == pytest.approx(alpha, abs=1e-9)
    assert _at_most(k, n, upper) == pytest.approx(alpha, abs=1e-9)
    assert 0 < lower < k / n < upper < 1


@pytest.mark.parametrize("n", [1, 10, 40])
def test_monotone_in_successes(n: int) -> None:
    lowers = [clopper_pearson_lower(k, n) for k in range(n + 1)]
    uppers = [clopper_pearson_upper(k, n) for k in range(n + 1)]
    assert all(a < b for a, b in zip(lowers, lowers[1:], strict=False))
    assert all(a < b for a, b in zip(uppers, uppers[1:], strict=False))
    assert all(lo < up for lo, up in zip(lowers, uppers, strict=True))


def test_higher_confidence_lower_bound() -> None:
    assert clopper_pearson_lower(32, 40, 0.99) < clopper_pearson_lower(32, 40, 0.95)
    assert clopper_pearson_lower(32, 40, 0.95) < clopper_pearson_lower(32, 40, 0.8)


@pytest.mark.parametrize(
    ("k", "n", "confidence"), [(-1, 10, 0.95), (11, 10, 0.95), (0, 0, 0.95), (5, 10, 1.0)]
)
def test_rejects_bad_arguments(k: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        clopper_pearson_lower(k, n, confidence)
    with pytest.raises(ValueError):
        clopper_pearson_upper(k, n, confidence)
