"""Statistics that tell a real gain from noise: pure functions over numbers, no I/O.

The model (docs/statistics.md): a launch runs ``rounds`` benchmark rounds whose values
scatter around the launch's mean (within-launch noise); launch means of one
configuration scatter around its true mean (between-launch noise: page cache, memory
placement, clocks). Both kinds are measured. Between-launch noise is pooled over every
configuration launched more than once, in relative terms, and shrunk towards a prior so
that two baseline launches (one degree of freedom) do not make the tuner useless. A
configuration beats another only when the Welch interval of the relative difference
excludes zero and the point estimate exceeds ``min_gain``. The Student t quantile is
computed here (regularised incomplete beta), so the package needs no scipy.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Direction = Literal["maximize", "minimize"]
Verdict = Literal["better", "worse", "within noise"]

DEFAULT_PRIOR_REL_SD = 0.01
"""Prior between-launch relative sd: 1%, about what a warm GPU box shows (81.9 vs 81.4)."""
DEFAULT_PRIOR_DOF = 2.0
"""Weight of the prior, in degrees of freedom: as much as three launches of one configuration."""


# --------------------------------------------------------------------------- summaries


def mean_se(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and standard error of the mean; the error is None for a single value."""
    if len(values) == 0:
        raise ValueError("mean_se needs at least one value")
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(_variance(values, mean) / len(values))


def _variance(values: Sequence[float], mean: float | None = None) -> float:
    """Sample variance, two-pass in floats: statistics.variance is exact but ~50x slower,
    and the sweep's simulations call this a great many times."""
    if mean is None:
        mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


# ------------------------------------------------------------------- Student t, no scipy


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


# ------------------------------------------------------------------------- estimates


@dataclass(frozen=True)
class LaunchEstimate:
    """One launch: the mean of its rounds and its standard error.

    ``se`` is None after a single round: one value says nothing about its own noise.
    Downstream code then uses the pooled within-launch variance (NoiseEstimate.within_var).
    """

    mean: float
    se: float | None
    n: int

    @property
    def rel_se(self) -> float | None:
        if self.se is None or self.mean == 0:
            return None
        return self.se / abs(self.mean)


def launch_estimate(round_values: Sequence[float]) -> LaunchEstimate:
    """Summarise one launch's round values (one objective value per round)."""
    values = [float(v) for v in round_values]
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"round values must be finite: {values}")
    mean, se = mean_se(values)
    return LaunchEstimate(mean=mean, se=se, n=len(values))


@dataclass(frozen=True)
class NoiseEstimate:
    """Between-launch noise, relative to a configuration's mean, pooled over configurations.

    ``var`` is the relative variance of a launch's true mean around the configuration's
    (a fraction squared: 0.0001 is a 1% sd), after shrinkage towards the prior; ``dof``
    counts the prior's weight plus one per extra launch of a configuration.
    ``observed_var`` is the data's method-of-moments estimate alone (None without
    repeats). ``within_var`` is the pooled relative variance of a single round, used
    where a launch ran one round only. ``explained_var`` is the part of the observed
    spread of launch means that round-to-round noise accounts for (relative variance of
    one launch mean); config_estimate needs it to count degrees of freedom honestly.
    """

    var: float
    dof: float
    n_configs: int
    n_launches: int
    observed_var: float | None = None
    observed_dof: float = 0.0
    explained_var: float = 0.0
    within_var: float | None = None
    within_dof: float = 0.0
    prior_rel_sd: float = DEFAULT_PRIOR_REL_SD
    prior_dof: float = DEFAULT_PRIOR_DOF

    @property
    def rel_sd(self) -> float:
        """Between-launch sd as a fraction of the mean (0.012 is ±1.2%)."""
        return math.sqrt(self.var)

    @property
    def within_rel_sd(self) -> float | None:
        return None if self.within_var is None else math.sqrt(self.within_var)

    @classmethod
    def prior(
        cls, rel_sd: float = DEFAULT_PRIOR_REL_SD, dof: float = DEFAULT_PRIOR_DOF
    ) -> NoiseEstimate:
        """What is assumed before any configuration has been launched twice."""
        return cls(
            var=rel_sd**2, dof=dof, n_configs=0, n_launches=0, prior_rel_sd=rel_sd, prior_dof=dof
        )

    def describe(self) -> str:
        """One line for the study: 'between-launch noise ±1.2% (sd; 3 configurations, ...)'."""
        if self.n_configs == 0:
            return (
                f"between-launch noise ±{_pct(self.rel_sd)} (sd; assumed: no configuration "
                "has been launched twice yet)"
            )
        seen = (
            "" if self.observed_var is None else f", measured ±{_pct(math.sqrt(self.observed_var))}"
        )
        return (
            f"between-launch noise ±{_pct(self.rel_sd)} (sd; {self.n_configs} "
            f"configuration{'s' if self.n_configs != 1 else ''} launched more than once, "
            f"{self.n_launches} launches{seen}, prior ±{_pct(self.prior_rel_sd)} "
            f"weighted as {self.prior_dof:g} dof)"
        )


def between_launch_variance(
    groups: Iterable[Sequence[LaunchEstimate]],
    *,
    prior_rel_sd: float = DEFAULT_PRIOR_REL_SD,
    prior_dof: float = DEFAULT_PRIOR_DOF,
    prior_from_within: bool = True,
) -> NoiseEstimate | None:
    """Pool between-launch noise over every configuration launched more than once.

    ``groups`` holds one sequence of launches per configuration (single launches are
    welcome: they add to the within-launch pool). In each repeated configuration the
    launch means are divided by their average, so fast and slow configurations pool on
    one scale; the spread of those ratios, minus what the within-launch standard errors
    explain (method of moments), estimates the relative between-launch variance. The
    pooled estimate is floored at 0 and shrunk towards ``prior_rel_sd`` with the weight
    of ``prior_dof`` degrees of freedom. With ``prior_from_within`` the prior sd is at
    least the pooled sd of one round: a restart is assumed to move the mean at least as
    much as one round scatters (vLLM's CPU build: ±5% within, ±12% across restarts),
    which keeps a noisy machine from borrowing a quiet machine's 1%. Returns the prior
    alone when nothing was launched twice, and None only when there is neither data nor
    prior (prior_dof=0).
    """
    if prior_rel_sd < 0 or prior_dof < 0:
        raise ValueError("prior_rel_sd and prior_dof must not be negative")
    groups = [list(g) for g in groups]

    # Within-launch: pooled relative variance of one round, from launches with >= 2 rounds.
    w_ss = w_df = 0.0
    for group in groups:
        for launch in group:
            if launch.se is not None and launch.n >= 2 and launch.mean != 0:
                w_ss += (launch.n - 1) * launch.n * (launch.se / launch.mean) ** 2
                w_df += launch.n - 1
    within_var = w_ss / w_df if w_df > 0 else None

    # Between-launch: method of moments per repeated configuration, pooled by dof.
    excess = dof = explained_sum = 0.0
    n_configs = n_launches = 0
    for group in groups:
        k = len(group)
        if k < 2:
            continue
        center = statistics.fmean(launch.mean for launch in group)
        if center == 0:
            continue
        ratios = [launch.mean / center for launch in group]
        spread = _variance(ratios)
        # What the within-launch errors alone would produce: E[s^2] = mean(var_i).
        explained = statistics.fmean(launch_within_var(launch, within_var) for launch in group)
        excess += (k - 1) * (spread - explained / center**2)
        explained_sum += (k - 1) * explained / center**2
        dof += k - 1
        n_configs += 1
        n_launches += k

    observed = max(0.0, excess / dof) if dof > 0 else None
    total_dof = prior_dof + dof
    if total_dof == 0:
        return None
    prior_var = prior_rel_sd**2
    if prior_from_within and within_var is not None:
        prior_var = max(prior_var, within_var)
    var = (prior_dof * prior_var + dof * (observed or 0.0)) / total_dof
    return NoiseEstimate(
        var=var,
        dof=total_dof,
        n_configs=n_configs,
        n_launches=n_launches,
        observed_var=observed,
        observed_dof=dof,
        explained_var=explained_sum / dof if dof > 0 else 0.0,
        within_var=within_var,
        within_dof=w_df,
        prior_rel_sd=math.sqrt(prior_var),
        prior_dof=prior_dof,
    )


def _within_part(launch: LaunchEstimate, noise: NoiseEstimate | None) -> tuple[float, float]:
    """(variance, dof) of a launch mean from round-to-round noise: the larger of its own
    and the pooled figure. (0, inf) for a single round when nothing is pooled: the
    between-launch estimate, then from single-round launches too, carries that noise."""
    own = (launch.se**2, float(launch.n - 1)) if launch.se is not None else None
    pooled = None
    if noise is not None and noise.within_var is not None and noise.within_dof > 0:
        pooled = (noise.within_var * launch.mean**2 / launch.n, noise.within_dof)
    if own is None or (pooled is not None and pooled[0] > own[0]):
        return pooled or (0.0, math.inf)
    return own


def launch_within_var(launch: LaunchEstimate, within_var: float | None) -> float:
    """Variance of a launch mean from round-to-round noise; 0 when nothing says (1 round).

    ``within_var`` is the pooled relative variance of one round (NoiseEstimate.within_var).
    """
    if launch.se is not None:
        return launch.se**2
    if within_var is not None:
        return within_var * launch.mean**2 / launch.n
    # Unknown: the between-launch spread then absorbs the within-launch noise, which is
    # what a single-round launch's total variance is anyway.
    return 0.0


@dataclass(frozen=True)
class ConfigEstimate:
    """A configuration's pooled mean, and a standard error that includes launch-to-launch
    noise even when it was launched once.

    ``se**2 == var_between + var_within``; the parts are kept because two configurations
    share one between-launch estimate, so compare() must not count its dof twice.
    ``var_explained`` is the within-launch noise already inside the spread the
    between-launch estimate was measured from (see _dof). ``se`` is math.inf (and
    ``dof`` 0) when the between-launch noise is unknown.
    """

    mean: float
    se: float
    dof: float
    n_launches: int
    n_rounds: int
    var_between: float = 0.0
    var_within: float = 0.0
    dof_between: float = math.inf
    dof_within: float = math.inf
    var_explained: float = 0.0

    @property
    def rel_se(self) -> float:
        return math.inf if self.mean == 0 else self.se / abs(self.mean)

    def interval(self, confidence: float) -> tuple[float, float]:
        """Two-sided confidence interval of the true mean."""
        if math.isinf(self.se):
            return -math.inf, math.inf
        half = t_critical(confidence, self.dof) * self.se if self.se > 0 else 0.0
        return self.mean - half, self.mean + half


def config_estimate(
    launches: Sequence[LaunchEstimate], noise: NoiseEstimate | None
) -> ConfigEstimate:
    """Pool a configuration's launches: mean of launch means, with a Welch-style error.

    var(mean) = noise.var * mean**2 / k + sum(v_i) / k**2 for k launches. The
    between part uses the pooled ``noise`` even when k == 1: a single lucky launch must
    not look precise. v_i, a launch mean's within-launch variance, is the larger of its
    own se**2 (n - 1 dof, noisy with 3 rounds) and the pooled within-launch figure (many
    dof): pooling gains precision, the max keeps an erratic configuration from
    borrowing the others' steadiness. Without ``noise`` the configuration's own
    launches are used (k >= 2) or the error is infinite (k == 1); pass at least
    NoiseEstimate.prior().
    """
    if len(launches) == 0:
        raise ValueError("config_estimate needs at least one launch")
    k = len(launches)
    mean = statistics.fmean(launch.mean for launch in launches)
    n_rounds = sum(launch.n for launch in launches)
    parts = [_within_part(launch, noise) for launch in launches]
    var_within = sum(v for v, _ in parts) / k**2
    dof_within = satterthwaite((v / k**2, d) for v, d in parts)

    if noise is None and k >= 2:
        noise = between_launch_variance([launches], prior_dof=0)
    if noise is None:
        return ConfigEstimate(
            mean=mean,
            se=math.inf,
            dof=0.0,
            n_launches=k,
            n_rounds=n_rounds,
            var_between=math.inf,
            var_within=var_within,
            dof_between=0.0,
            dof_within=dof_within,
        )
    var_between = noise.var * mean**2 / k
    var_explained = noise.explained_var * mean**2 / k
    return ConfigEstimate(
        mean=mean,
        se=math.sqrt(var_between + var_within),
        dof=_dof(var_between, noise.dof, var_within, dof_within, var_explained),
        n_launches=k,
        n_rounds=n_rounds,
        var_between=var_between,
        var_within=var_within,
        dof_between=noise.dof,
        dof_within=dof_within,
        var_explained=var_explained,
    )


def _dof(
    var_between: float, dof_between: float, var_within: float, dof_within: float, explained: float
) -> float:
    """Degrees of freedom of var_between + var_within, counted two ways; the fewer wins.

    As components: the between part with the noise's dof, the within part with its own.
    But the between part is a difference, spread - explained, floored at 0; when the
    spread of few launch means happens to be small, the floor would leave a precise-
    looking within part with many dof, and intervals too narrow (1 dof of data looks
    like 40). Counted the other way, the total is the measured spread of launch means
    (dof_between) plus a correction for this configuration's own rounds (any sign).
    """
    by_parts = satterthwaite([(var_between, dof_between), (var_within, dof_within)])
    if explained <= 0 or by_parts == 0:
        return by_parts
    spread, correction = var_between + explained, var_within - explained
    denom = spread**2 / dof_between + (
        correction**2 / dof_within if math.isfinite(dof_within) else 0.0
    )
    by_spread = (spread + correction) ** 2 / denom if denom > 0 else math.inf
    return min(by_parts, by_spread)


# ------------------------------------------------------------------------ comparison


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
            f"{self.gain * 100:+.1f}% ± {_pct(self.noise_rel)} ({word}; "
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
    dof = _dof(
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


# ------------------------------------------------------------------ recommendation


@dataclass(frozen=True)
class Candidate:
    """A configuration as recommend() sees it.

    ``n_changed`` counts params not at their default. ``confirmed`` marks a
    configuration whose lead survived a confirmation launch; ``label`` is how
    sentences name it ("trial 7"), the key otherwise.
    """

    key: str
    estimate: ConfigEstimate
    n_changed: int
    confirmed: bool = False
    label: str | None = None


@dataclass(frozen=True)
class Recommendation:
    """best: highest trusted mean; recommended: the simplest configuration that is not
    significantly worse than the best (and, unless it is the baseline, significantly
    better than the baseline). ``equivalent`` lists the keys within noise of the best."""

    best: str
    recommended: str
    reason: str
    keep_defaults: bool
    equivalent: tuple[str, ...] = ()
    best_vs_baseline: Comparison | None = None
    recommended_vs_baseline: Comparison | None = None


def recommend(
    candidates: Sequence[Candidate],
    *,
    direction: Direction,
    min_gain: float,
    confidence: float,
    baseline_key: str,
) -> Recommendation:
    """Pick the best and the configuration to recommend, with a sentence saying why.

    Only trusted estimates compete: the baseline, confirmed configurations and any
    launched at least twice. An unconfirmed single launch is where the winner's curse
    lives (the luckiest of many draws), so it can be neither best nor recommended;
    if nothing is trusted, everything is.
    """
    if not candidates:
        raise ValueError("recommend needs at least one candidate")
    return _Judge(direction, min_gain, confidence, baseline_key).recommend(candidates)


@dataclass(frozen=True)
class _Judge:
    """The settings every comparison of one recommendation shares."""

    direction: Direction
    min_gain: float
    confidence: float
    baseline_key: str

    def versus(self, a: Candidate, b: Candidate) -> Comparison:
        return compare(
            a.estimate,
            b.estimate,
            direction=self.direction,
            min_gain=self.min_gain,
            confidence=self.confidence,
        )

    def name(self, c: Candidate) -> str:
        return "the defaults" if c.key == self.baseline_key else (c.label or c.key)

    def recommend(self, candidates: Sequence[Candidate]) -> Recommendation:
        sign = 1.0 if self.direction == "maximize" else -1.0
        trusted = [
            c
            for c in candidates
            if c.key == self.baseline_key or c.confirmed or c.estimate.n_launches >= 2
        ] or list(candidates)
        baseline = next((c for c in candidates if c.key == self.baseline_key), None)
        best = max(trusted, key=lambda c: (sign * c.estimate.mean, -c.n_changed))
        # Not significantly worse than the best: the best does not beat it.
        equivalent = [c for c in trusted if c is best or self.versus(best, c).verdict != "better"]
        best_vs_base = (
            self.versus(best, baseline) if baseline is not None and best is not baseline else None
        )
        if baseline is not None and baseline in equivalent:
            untrusted = [c for c in candidates if c not in trusted]
            return Recommendation(
                best=best.key,
                recommended=baseline.key,
                reason=self._keep_defaults(best, baseline, trusted, untrusted),
                keep_defaults=True,
                equivalent=tuple(c.key for c in equivalent),
                best_vs_baseline=best_vs_base,
            )
        # A change from the defaults must itself be a significant gain over them, not
        # only within noise of the best; the best is one (the baseline is not equivalent).
        eligible = [
            c
            for c in equivalent
            if baseline is None or c is best or self.versus(c, baseline).verdict == "better"
        ]
        chosen = min(eligible, key=lambda c: (c.n_changed, -sign * c.estimate.mean))
        chosen_vs_base = self.versus(chosen, baseline) if baseline is not None else None
        return Recommendation(
            best=best.key,
            recommended=chosen.key,
            reason=self._change(chosen, best, equivalent, chosen_vs_base),
            keep_defaults=False,
            equivalent=tuple(c.key for c in equivalent),
            best_vs_baseline=best_vs_base,
            recommended_vs_baseline=chosen_vs_base,
        )

    def _keep_defaults(
        self,
        best: Candidate,
        baseline: Candidate,
        trusted: list[Candidate],
        untrusted: list[Candidate],
    ) -> str:
        floor = f"the {self.min_gain * 100:g}% minimum gain"
        if best is not baseline:
            cmp = self.versus(best, baseline)
            why = "within the noise" if not cmp.significant else f"less than {floor}"
            text = (
                f"keep the defaults: the best configuration, {self.name(best)}, is "
                f"{_pct(cmp.gain)} ± {_pct(cmp.noise_rel)} {_word(cmp.gain)} than the "
                f"defaults, which is {why}"
            )
        else:
            others = [c for c in trusted if c is not baseline]
            if others:
                closest = max(others, key=lambda c: self.versus(c, baseline).gain)
                cmp = self.versus(closest, baseline)
                n = len(others)
                text = (
                    f"keep the defaults: no configuration beat the defaults by more than the "
                    f"noise (±{_pct(cmp.noise_rel)}) and {floor} ({n} "
                    f"configuration{'s' if n != 1 else ''} compared; the closest, "
                    f"{self.name(closest)}, is {_pct(cmp.gain)} {_word(cmp.gain)})"
                )
            elif untrusted:
                n = len(untrusted)
                text = (
                    f"keep the defaults: no other configuration was confirmed ({n} launched once)"
                )
            else:
                return "keep the defaults: no other configuration was measured"
        lucky = [c for c in untrusted if self.versus(c, baseline).verdict == "better"]
        if len(lucky) == 1:
            cmp = self.versus(lucky[0], baseline)
            text += (
                f"; {self.name(lucky[0])} looked {_pct(cmp.gain)} ± {_pct(cmp.noise_rel)} "
                f"{_word(cmp.gain)} in a single launch but was not launched again to confirm it"
            )
        elif lucky:
            text += (
                f"; {len(lucky)} configurations looked better in a single launch but were not "
                "launched again to confirm them"
            )
        return text

    def _change(
        self,
        chosen: Candidate,
        best: Candidate,
        equivalent: list[Candidate],
        chosen_vs_base: Comparison | None,
    ) -> str:
        def settings(c: Candidate) -> str:
            return f"{c.n_changed} setting{'s' if c.n_changed != 1 else ''} changed"

        if chosen_vs_base is not None:
            head = (
                f"{self.name(chosen)} ({settings(chosen)}) is {_pct(chosen_vs_base.gain)} ± "
                f"{_pct(chosen_vs_base.noise_rel)} {_word(chosen_vs_base.gain)} than the defaults"
            )
        else:
            head = f"{self.name(chosen)} ({settings(chosen)}) has the best estimate"
        if chosen is not best:
            cmp = self.versus(best, chosen)
            return (
                f"{head}, and within noise of the best, {self.name(best)} ({settings(best)}; "
                f"{_pct(cmp.gain)} ± {_pct(cmp.noise_rel)} {_word(cmp.gain)} than it): "
                "fewer changes win"
            )
        rivals = [c for c in equivalent if c is not best]
        if not rivals:
            return f"{head}; no other configuration is within noise of it"
        n = len(rivals)
        return (
            f"{head}; {n} other configuration{'s are' if n != 1 else ' is'} within noise of "
            "it, none with fewer changes and a significant gain over the defaults"
        )


# -------------------------------------------------------------------------- helpers


def _pct(fraction: float) -> str:
    """0.008 -> '0.8%'; small figures keep two significant digits."""
    if math.isinf(fraction) or math.isnan(fraction):
        return "∞%"
    value = abs(fraction) * 100
    if value != 0 and value < 0.1:
        return f"{value:.2g}%"
    return f"{value:.1f}%"


def _word(gain: float) -> str:
    return "faster" if gain >= 0 else "slower"
