"""Student's t distribution without scipy: cdf, quantile, interval multiplier, Welch dof.

The cdf goes through the regularised incomplete beta function (a continued fraction,
modified Lentz); the quantile inverts it by safeguarded Newton, with closed forms for
1 and 2 degrees of freedom and a Cornish-Fisher series from 100 on. Degrees of freedom
may be fractional (Welch-Satterthwaite) or math.inf (the normal distribution).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from functools import lru_cache


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 2000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The continued fraction converges fast on this side; use the symmetry on the other.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(x: float, dof: float) -> float:
    """P(T <= x) for Student's t with ``dof`` degrees of freedom (any real dof > 0)."""
    if dof <= 0:
        raise ValueError(f"dof must be positive, not {dof}")
    if math.isinf(dof):
        return statistics.NormalDist().cdf(x)
    if x == 0:
        return 0.5
    tail = 0.5 * _betainc(dof / 2.0, 0.5, dof / (dof + x * x))
    return 1.0 - tail if x > 0 else tail


def _t_pdf(x: float, dof: float) -> float:
    log_c = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    return math.exp(log_c - (dof + 1) / 2 * math.log1p(x * x / dof))


def _t_quantile_series(z: float, dof: float) -> float:
    """Cornish-Fisher expansion of t around the normal quantile; exact to ~1e-9 for dof >= 100."""
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / dof + g2 / dof**2 + g3 / dof**3 + g4 / dof**4


@lru_cache(maxsize=4096)
def t_quantile(p: float, dof: float) -> float:
    """The p-quantile of Student's t; dof may be fractional (Welch) or math.inf (normal)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be within (0, 1), not {p}")
    if dof <= 0 or math.isnan(dof):
        raise ValueError(f"dof must be positive, not {dof}")
    if p < 0.5:
        return -t_quantile(1 - p, dof)
    if p == 0.5:
        return 0.0
    z = statistics.NormalDist().inv_cdf(p)
    if math.isinf(dof):
        return z
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    if dof >= 100:
        return _t_quantile_series(z, dof)
    # Safeguarded Newton on the cdf: a bracket [lo, hi] guarantees convergence in the
    # heavy tails of small dof, where plain Newton overshoots.
    lo, hi = 0.0, max(2.0 * z, 1.0)
    while t_cdf(hi, dof) < p:
        lo, hi = hi, hi * 2
    x = min(max(_t_quantile_series(z, dof), lo), hi)
    for _ in range(200):
        err = t_cdf(x, dof) - p
        if err > 0:
            hi = x
        else:
            lo = x
        step = err / _t_pdf(x, dof)
        if abs(step) <= 1e-12 * max(1.0, x):
            return x - step
        nxt = x - step
        x = nxt if lo < nxt < hi else (lo + hi) / 2
    return x


def t_critical(confidence: float, dof: float) -> float:
    """Half-width multiplier of a two-sided interval at ``confidence`` (0.95 -> 1.96 at inf)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), not {confidence}")
    return t_quantile(0.5 + confidence / 2, dof)


def satterthwaite(components: Iterable[tuple[float, float]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variance estimates.

    Each component is ``(variance, dof)``; a dof of math.inf marks a known variance.
    Returns math.inf when every variance is zero or known, 0.0 when one is infinite.
    """
    parts = [(v, d) for v, d in components if v > 0]
    total = sum(v for v, _ in parts)
    if math.isinf(total):
        return 0.0
    if total == 0:
        return math.inf
    denom = sum(v * v / d for v, d in parts if not math.isinf(d))
    if denom == 0:
        return math.inf
    return total * total / denom
