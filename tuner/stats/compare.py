"""Does one configuration beat another, and can a launch still catch up with the best?

A configuration beats another only when the Welch interval of the relative difference
excludes zero and the point estimate exceeds ``min_gain``; ``should_prune`` stops a
launch whose optimistic bound is beyond the best's pessimistic one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tuner.stats.estimates import (
    ConfigEstimate,
    NoiseEstimate,
    combined_dof,
    config_estimate,
    launch_estimate,
)
from tuner.stats.student_t import t_critical
from tuner.stats.wording import percent

Direction = Literal["maximize", "minimize"]
"""Which way the objective is better: a throughput is maximized, a latency minimized."""
Verdict = Literal["better", "worse", "within noise"]


@dataclass(frozen=True)
class Comparison:
    """a versus b. Relative figures are fractions of |b.mean|.

    ``diff`` = a.mean - b.mean (metric units, interval ``diff_low``..``diff_high``);
    ``rel_diff`` = diff / |b.mean|, with its two-sided interval ``ci_low``..``ci_high``
    on the metric's own scale (positive: a is higher). ``gain`` is rel_diff signed by
    direction (positive: a is better, i.e. faster) and ``noise_rel`` the interval's
    half-width, so a sentence reads "gain ± noise_rel". ``verdict`` is "better" when
    gain > min_gain and the interval excludes zero, "worse" in the mirror case, else
    "within noise" (which includes real differences smaller than min_gain;
    ``significant`` tells those apart).
    """

    diff: float
    rel_diff: float
    ci_low: float
    ci_high: float
    verdict: Verdict
    noise_rel: float
    gain: float
    dof: float
    significant: bool
    diff_low: float = -math.inf
    diff_high: float = math.inf
    direction: Direction = "maximize"
    min_gain: float = 0.0
    confidence: float = 0.95

    def describe(self) -> str:
        """'+8.1% ± 1.2% (faster): better' — for `tuner compare` and the report."""
        word = "faster" if self.gain >= 0 else "slower"
        return (
            f"{self.gain * 100:+.1f}% ± {percent(self.noise_rel)} ({word}; "
            f"{self.confidence:.0%} interval, min gain {self.min_gain * 100:g}%): {self.verdict}"
        )


def compare(
    a: ConfigEstimate,
    b: ConfigEstimate,
    *,
    direction: Direction,
    min_gain: float,
    confidence: float,
) -> Comparison:
    """Does ``a`` beat ``b``? Welch interval of (a - b) / |b|, Satterthwaite dof.

    Variance by the delta method: (var_a + (a/b)**2 var_b) / b**2. The between-launch
    parts of a and b come from one pooled estimate, so they form one component with
    its dof (counting them as independent would double their dof); so do the
    within-launch parts, which mostly come from the pooled within-launch figure. Taking
    the smaller dof where the parts are in fact independent errs on the wide side.
    """
    if direction not in ("maximize", "minimize"):
        raise ValueError(f"direction must be 'maximize' or 'minimize', not {direction!r}")
    if b.mean == 0:
        raise ValueError("cannot compare relative to a configuration whose mean is 0")
    scale = abs(b.mean)
    diff = a.mean - b.mean
    rel_diff = diff / scale
    ratio2 = (a.mean / b.mean) ** 2
    between = (a.var_between + ratio2 * b.var_between) / scale**2
    within = (a.var_within + ratio2 * b.var_within) / scale**2
    explained = (a.var_explained + ratio2 * b.var_explained) / scale**2
    var = between + within
    dof = combined_dof(
        between,
        min(a.dof_between, b.dof_between),
        within,
        min(a.dof_within, b.dof_within),
        explained,
    )
    if math.isinf(var) or dof <= 0:
        half = math.inf
    elif var == 0:
        half = 0.0
    else:
        half = t_critical(confidence, dof) * math.sqrt(var)
    sign = 1.0 if direction == "maximize" else -1.0
    gain = sign * rel_diff
    significant = abs(gain) > half
    verdict: Verdict
    if significant and gain > min_gain:
        verdict = "better"
    elif significant and -gain > min_gain:
        verdict = "worse"
    else:
        verdict = "within noise"
    return Comparison(
        diff=diff,
        rel_diff=rel_diff,
        ci_low=rel_diff - half,
        ci_high=rel_diff + half,
        verdict=verdict,
        noise_rel=half,
        gain=gain,
        dof=dof,
        significant=significant,
        diff_low=(rel_diff - half) * scale,
        diff_high=(rel_diff + half) * scale,
        direction=direction,
        min_gain=min_gain,
        confidence=confidence,
    )


def is_significant_gain(
    candidate: ConfigEstimate,
    incumbent: ConfigEstimate,
    *,
    direction: Direction,
    min_gain: float,
    confidence: float,
) -> bool:
    """True when ``candidate`` beats ``incumbent`` by more than min_gain and the noise."""
    verdict = compare(
        candidate, incumbent, direction=direction, min_gain=min_gain, confidence=confidence
    ).verdict
    return verdict == "better"


# ------------------------------------------------------------------------- pruning


def should_prune(
    rounds_so_far: Sequence[float],
    best: ConfigEstimate,
    *,
    direction: Direction,
    confidence: float,
    noise: NoiseEstimate | None,
) -> bool:
    """Stop benchmarking a launch that cannot catch up with the best.

    True when the launch's optimistic bound is beyond the best's pessimistic one
    (maximize: upper bound < best's lower bound). The launch's bound includes
    between-launch noise, since this launch could itself be an unlucky one. Never
    prunes without ``noise`` (nothing says how unlucky a launch can be), nor after one
    round unless ``noise`` carries a pooled within-launch variance.
    """
    if noise is None or len(rounds_so_far) == 0 or math.isinf(best.se):
        return False
    launch = launch_estimate(rounds_so_far)
    if launch.se is None and noise.within_var is None:
        return False  # one round and no pooled within-launch figure: no idea of its noise
    # The launch as if it were a configuration launched once: the same error model.
    low, high = config_estimate([launch], noise).interval(confidence)
    best_low, best_high = best.interval(confidence)
    if direction == "maximize":
        return high < best_low
    return low > best_high
