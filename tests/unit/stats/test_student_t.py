"""tuner.stats.student_t against printed t tables, closed forms and its own cdf."""

from __future__ import annotations

import math

import pytest

from tuner.stats.student_t import satterthwaite, t_cdf, t_critical, t_quantile


@pytest.mark.parametrize(
    ("p", "dof", "expected"),
    [
        # Printed t tables (two-sided 90/95/99/99.9%).
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 3, 3.182),
        (0.975, 4, 2.776),
        (0.975, 5, 2.571),
        (0.975, 10, 2.228),
        (0.975, 30, 2.042),
        (0.975, 120, 1.980),
        (0.95, 1, 6.314),
        (0.95, 7, 1.895),
        (0.995, 3, 5.841),
        (0.995, 20, 2.845),
        (0.9995, 1, 636.619),
        (0.9995, 4, 8.610),
        (0.9995, 60, 3.460),
        (0.6, 7, 0.263),
    ],
)
def test_t_quantile_matches_tables(p: float, dof: float, expected: float) -> None:
    assert t_quantile(p, dof) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.999])
def test_t_quantile_closed_forms(p: float) -> None:
    # dof 1 is Cauchy; dof 4 has a closed form too (Hill 1970): checks the numeric path.
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-12)
    alpha = 4 * p * (1 - p)
    q4 = math.sqrt(4 * (math.cos(math.acos(math.sqrt(alpha)) / 3) / math.sqrt(alpha) - 1))
    assert t_quantile(p, 4) == pytest.approx(q4, rel=1e-9)


@pytest.mark.parametrize("dof", [0.7, 1.5, 2.5, 3.3, 7.9, 42.0, 99.0, 100.0, 5000.0])
@pytest.mark.parametrize("p", [0.55, 0.8, 0.975, 0.9995])
def test_t_quantile_inverts_cdf_for_fractional_dof(p: float, dof: float) -> None:
    assert t_cdf(t_quantile(p, dof), dof) == pytest.approx(p, abs=1e-10)
    assert t_quantile(1 - p, dof) == pytest.approx(-t_quantile(p, dof), rel=1e-12)


def test_t_quantile_limits() -> None:
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.5, 3) == 0.0
    # Monotone in dof between integers, joins the series at 100 without a step.
    assert t_quantile(0.975, 2) > t_quantile(0.975, 2.5) > t_quantile(0.975, 3)
    assert t_quantile(0.975, 99.999) == pytest.approx(t_quantile(0.975, 100), abs=1e-6)
    assert t_quantile(0.975, 100) == pytest.approx(1.98397, abs=1e-5)
    assert t_critical(0.95, 10) == pytest.approx(2.228, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)


def test_satterthwaite() -> None:
    # Two equal variances with 4 dof each pool to 8 dof; a known variance adds none.
    assert satterthwaite([(1.0, 4), (1.0, 4)]) == pytest.approx(8.0)
    assert satterthwaite([(1.0, 4), (0.0, 1)]) == pytest.approx(4.0)
    assert satterthwaite([(1.0, math.inf)]) == math.inf
    assert satterthwaite([]) == math.inf
    assert satterthwaite([(math.inf, 3)]) == 0.0
