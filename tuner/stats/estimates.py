"""What a launch and a configuration measured, and how noisy launches are.

The model (docs/statistics.md): a launch runs ``rounds`` benchmark rounds whose values
scatter around the launch's mean (within-launch noise); launch means of one
configuration scatter around its true mean (between-launch noise: page cache, memory
placement, clocks). Both kinds are measured. Between-launch noise is pooled over every
configuration launched more than once, in relative terms, and shrunk towards a prior so
that two baseline launches (one degree of freedom) do not make the tuner useless. A
configuration's estimate carries that noise even when it was launched once.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tuner.stats.student_t import satterthwaite, t_critical
from tuner.stats.wording import percent

DEFAULT_PRIOR_REL_SD = 0.01
"""Prior between-launch relative sd: 1%, about what a warm GPU box shows (81.9 vs 81.4)."""
DEFAULT_PRIOR_DOF = 2.0
"""Weight of the prior, in degrees of freedom: as much as three launches of one configuration."""


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

    def to_json(self) -> dict[str, float | str | None]:
        """Its fields, ``rel_sd`` and the sentence ``text``: what the study stores and shows."""
        return {**dataclasses.asdict(self), "rel_sd": self.rel_sd, "text": self.describe()}

    def describe(self) -> str:
        """One line for the study: 'between-launch noise ±1.2% (sd; 3 configurations, ...)'."""
        if self.n_configs == 0:
            return (
                f"between-launch noise ±{percent(self.rel_sd)} (sd; assumed: no configuration "
                "has been launched twice yet)"
            )
        seen = ""
        if self.observed_var is not None:
            seen = f", measured ±{percent(math.sqrt(self.observed_var))}"
        return (
            f"between-launch noise ±{percent(self.rel_sd)} (sd; {self.n_configs} "
            f"configuration{'s' if self.n_configs != 1 else ''} launched more than once, "
            f"{self.n_launches} launches{seen}, prior ±{percent(self.prior_rel_sd)} "
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
    between-launch estimate was measured from (see combined_dof). ``se`` is math.inf (and
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
        dof=combined_dof(var_between, noise.dof, var_within, dof_within, var_explained),
        n_launches=k,
        n_rounds=n_rounds,
        var_between=var_between,
        var_within=var_within,
        dof_between=noise.dof,
        dof_within=dof_within,
        var_explained=var_explained,
    )


def combined_dof(
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
