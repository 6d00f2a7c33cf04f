"""Exact (Clopper-Pearson) one-sided confidence bounds of a binomial proportion, no scipy.

With ``k`` successes out of ``n``, the lower bound at ``confidence`` c is the p at which
seeing k or more successes has chance 1 - c: P(X >= k | n, p) = I_p(k, n - k + 1) = 1 - c;
the upper bound is the p at which seeing k or fewer has chance 1 - c:
P(X <= k | n, p) = 1 - I_p(k + 1, n - k) = 1 - c. Both bisect on the regularised
incomplete beta function of tuner.stats.student_t (monotone in p). A benchmark that
counts how often a rule is right ("kept the defaults in 40/40") reports the lower bound:
40/40 at 95% is at least 0.05 ** (1 / 40) = 0.928.
"""

from __future__ import annotations

from tuner.stats.student_t import _betainc


def _check(successes: int, n: int, confidence: float) -> None:
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n}, not {successes}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), not {confidence}")


def _solve_increasing(a: float, b: float, target: float) -> float:
    """The p in [0, 1] with I_p(a, b) = target, by bisection (I_p increases with p)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if _betainc(a, b, mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson_lower(successes: int, n: int, confidence: float = 0.95) -> float:
    """Exact one-sided lower confidence bound of a proportion seen as ``successes``/``n``.

    0.0 when there is no success; otherwise the p where P(X >= successes) = 1 - confidence.
    """
    _check(successes, n, confidence)
    if successes == 0:
        return 0.0
    return _solve_increasing(successes, n - successes + 1, 1.0 - confidence)


def clopper_pearson_upper(successes: int, n: int, confidence: float = 0.95) -> float:
    """Exact one-sided upper confidence bound of a proportion seen as ``successes``/``n``.

    1.0 when every trial succeeded; otherwise the p where P(X <= successes) = 1 - confidence.
    """
    _check(successes, n, confidence)
    if successes == n:
        return 1.0
    return _solve_increasing(successes + 1, n - successes, confidence)
