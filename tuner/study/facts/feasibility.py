"""Whether a configuration meets the study's limits (``objective.subject_to``), beyond noise.

A limit such as ``ttft_ms.p99@64 <= 2000`` (parsed by tuner/space/limits.py) is judged
like the objective (docs/statistics.md, "Limits"): each launch gives one value per limit,
the mean over its rounds of the metric at the limit's level (``@*``: the worst level of
each round); a configuration's launches are pooled by stats.config_estimate with the
between-launch noise of *that metric*, measured over every configuration launched more than
once (a configuration launched once borrows it, as the objective does). The status, at
the study's confidence ``c``, from one-sided bounds (a two-sided interval at ``2c - 1``):

- ``feasible``: the bound on the far side of the limit meets it (for ``<=``: the upper
  bound is at most the limit);
- ``infeasible``: even the near bound breaks it (for ``<=``: the lower bound is above it),
  or a launch had a level with no successful request (the metric is NaN);
- ``uncertain``: otherwise; such a configuration is launched again before it can be
  the best or the recommendation (tuner/study/facts/analysis.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tuner import stats
from tuner.space.limits import MetricLimit, parse_limit
from tuner.space.spec import Space
from tuner.stats.student_t import t_critical
from tuner.storage import LaunchRow, Store
from tuner.study.facts.metrics import MetricRead, launch_values

LimitStatus = Literal["feasible", "infeasible", "uncertain"]
NOT_MEASURED = 1e9
"""optuna's constraint value for a launch whose metric is NaN or missing (optuna refuses
NaN): far beyond any limit, so its samplers count the trial infeasible."""


def study_limits(space: Space) -> tuple[MetricLimit, ...]:
    """The space's ``objective.subject_to``, parsed (validated when the space was loaded)."""
    return tuple(parse_limit(t, level="required") for t in space.spec.objective.subject_to)


@dataclass(frozen=True)
class LimitCheck:
    """One limit judged on one configuration's launches."""

    limit: MetricLimit
    mean: float
    """The mean over launches; NaN when a launch had a level with no successful request."""
    bounds: tuple[float, float] | None
    """One-sided lower and upper bounds of the mean at the study's confidence; None while
    unbounded (or NaN)."""
    status: LimitStatus
    launches: int

    @property
    def excess(self) -> float:
        """How far past the limit the mean is, relative to it (0 when it holds)."""
        return self.limit.excess(self.mean)

    def describe(self) -> str:
        """``ttft_ms.p99@64 <= 2000: 2,530 (+26.5% over), infeasible``."""
        value = "no value (a level had no successful request)"
        if not math.isnan(self.mean):
            value = f"{self.mean:,.4g}"
            if self.excess > 0:
                value += f" ({self.excess:+.1%} over)"
        return f"{self.limit.text}: {value}, {self.status}"

    def to_json(self) -> dict[str, Any]:
        nan = math.isnan(self.mean)
        return {
            "limit": self.limit.text,
            "metric": self.limit.metric,
            "level": self.limit.level,
            "value": None if nan else self.mean,
            "interval": list(self.bounds) if self.bounds is not None else None,
            "verdict": self.status,  # the key of `tuner best --format json` since it began
            "excess": None if math.isinf(self.excess) else self.excess,
            "launches": self.launches,
        }


@dataclass(frozen=True)
class Feasibility:
    """Every limit judged on one configuration."""

    checks: tuple[LimitCheck, ...]

    @property
    def status(self) -> LimitStatus:
        found = {c.status for c in self.checks}
        if "infeasible" in found:
            return "infeasible"
        return "uncertain" if "uncertain" in found else "feasible"

    @property
    def broken(self) -> tuple[LimitCheck, ...]:
        """The limits broken beyond noise."""
        return tuple(c for c in self.checks if c.status == "infeasible")

    @property
    def unsure(self) -> tuple[LimitCheck, ...]:
        return tuple(c for c in self.checks if c.status == "uncertain")

    def describe(self) -> str:
        """The limits it breaks or may break, in one clause (empty when feasible)."""
        return "; ".join(c.describe() for c in (*self.broken, *self.unsure))


def judge(
    store: Store, space: Space, groups: Mapping[str, Sequence[LaunchRow]]
) -> dict[str, Feasibility]:
    """Each configuration's feasibility, from its completed launches (``groups``: launches
    by configuration hash); empty when the space has no limits."""
    limits = study_limits(space)
    if not limits or not groups:
        return {}
    ids = [row.id for rows in groups.values() for row in rows]
    values = limit_values(store, ids, limits)
    confidence = space.spec.stop.confidence
    out: dict[str, list[LimitCheck]] = defaultdict(list)
    for i, limit in enumerate(limits):
        per_config = {
            key: [values[row.id][i] for row in rows if row.id in values]
            for key, rows in groups.items()
        }
        finite = [[launch for launch in v if launch is not None] for v in per_config.values()]
        noise = stats.between_launch_variance(finite)
        for key, launches in per_config.items():
            out[key].append(_check(limit, launches, noise, confidence))
    return {key: Feasibility(tuple(checks)) for key, checks in out.items()}


def limit_values(
    store: Store, launch_ids: Sequence[int], limits: Sequence[MetricLimit]
) -> dict[int, list[stats.LaunchEstimate | None]]:
    """Per launch, per limit: the estimate over its rounds (None: a NaN or missing value)."""
    return launch_values(store, launch_ids, [limit_read(limit) for limit in limits])


def limit_read(limit: MetricLimit) -> MetricRead:
    """What a limit reads of a launch: its metric at its level, ``@*`` the worst level."""
    return MetricRead(limit.metric, limit.level, worst=max if limit.op == "<=" else min)


def optuna_values(store: Store, space: Space, launch_id: int) -> list[float]:
    """One launch's constraint values as optuna reads them (<= 0 feasible): the observed
    mean minus the limit for ``<=``, the limit minus it for ``>=``."""
    limits = study_limits(space)
    estimates = limit_values(store, [launch_id], limits).get(launch_id)
    if estimates is None:
        return [NOT_MEASURED] * len(limits)
    out = []
    for limit, estimate in zip(limits, estimates, strict=True):
        if estimate is None:
            out.append(NOT_MEASURED)
        else:
            over = estimate.mean - limit.value
            out.append(over if limit.op == "<=" else -over)
    return out


def _check(
    limit: MetricLimit,
    launches: Sequence[stats.LaunchEstimate | None],
    noise: stats.NoiseEstimate | None,
    confidence: float,
) -> LimitCheck:
    if not launches or any(launch is None for launch in launches):
        return LimitCheck(limit, math.nan, None, "infeasible", len(launches))
    measured = [launch for launch in launches if launch is not None]
    estimate = stats.config_estimate(measured, noise or stats.NoiseEstimate.prior())
    if math.isinf(estimate.se) or estimate.dof <= 0:
        return LimitCheck(limit, estimate.mean, None, "uncertain", len(measured))
    half = t_critical(2 * confidence - 1, estimate.dof) * estimate.se if estimate.se > 0 else 0.0
    low, high = estimate.mean - half, estimate.mean + half
    near, far = (low, high) if limit.op == "<=" else (high, low)
    if limit.holds(far):
        status: LimitStatus = "feasible"
    elif not limit.holds(near):
        status = "infeasible"
    else:
        status = "uncertain"
    return LimitCheck(limit, estimate.mean, (low, high), status, len(measured))
