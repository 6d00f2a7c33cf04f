"""Latency and error limits on benchmark metrics: ``"ttft_ms.p99@64 <= 2000"``, parsed.

One grammar for every limit a user writes, never eval'ed::

    METRIC[.STAT][@LEVEL] OP NUMBER

- METRIC a figure of a benchmark level (``output_throughput``, ``ttft_ms``, ``error_rate``,
  ``goodput``, ...), with ``.STAT`` for a latency (``mean``, ``p50``, ``p90``, ``p99``);
  ``ttft_ms.p99`` and ``ttft_ms_p99`` are the same metric;
- ``@LEVEL`` a concurrency level, or ``@*`` for every level; left out where the level is
  what is searched (the capacity search of tuner/bench/capacity.py), and on a launch's load
  (``time_to_healthy_s``, ``load_weights_s``, ...: one value per launch, whatever the level;
  a capacity search, on a running server, has none of them);
- OP ``<=`` or ``>=``; NUMBER in the metric's unit (milliseconds, tokens/s, a fraction).

A metric that is NaN (a level with no successful request) breaks every limit: a failed
level must never pass for a fast one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from tuner.vocabulary import (
    LATENCY_FAMILIES,
    LATENCY_STATS,
    LOAD_METRICS,
    THROUGHPUT_METRICS,
    is_load_metric,
)

LIMIT_SCALARS = (*THROUGHPUT_METRICS, "peak_output_throughput", "goodput", "error_rate")
"""Metrics without a statistic."""
LIMIT_METRICS = (
    *LIMIT_SCALARS,
    *(f"{family}_{stat}" for family in LATENCY_FAMILIES for stat in LATENCY_STATS),
    *LOAD_METRICS,
)
"""Every metric a limit can name, in the ``FAMILY_STAT`` spelling."""

_LIMIT = re.compile(
    r"""^\s*(?P<metric>[a-z_][a-z0-9_]*)(?:\.(?P<stat>[a-z0-9]+))?
        \s*(?:@\s*(?P<level>\d+|\*))?
        \s*(?P<op><=|>=|<|>|==|=)
        \s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$""",
    re.VERBOSE,
)
EXAMPLE = "ttft_ms.p99@64 <= 2000"


@dataclass(frozen=True)
class MetricLimit:
    """One limit: ``metric`` (``FAMILY_STAT`` spelling) ``op`` ``value`` at ``level``."""

    metric: str
    op: Literal["<=", ">="]
    value: float
    level: int | Literal["*"] | None = None

    @property
    def text(self) -> str:
        """The limit as a person writes it, e.g. ``ttft_ms.p99@64 <= 2000``."""
        family, _, stat = self.metric.rpartition("_")
        name = f"{family}.{stat}" if family in LATENCY_FAMILIES else self.metric
        at = "" if self.level is None else f"@{self.level}"
        return f"{name}{at} {self.op} {self.value:g}"

    def holds(self, observed: float) -> bool:
        """Whether ``observed`` meets the limit (NaN never does)."""
        if math.isnan(observed):
            return False
        return observed <= self.value if self.op == "<=" else observed >= self.value

    def excess(self, observed: float) -> float:
        """How far past the limit ``observed`` is, relative to it (0 when it holds)."""
        if self.holds(observed):
            return 0.0
        if math.isnan(observed) or self.value == 0:
            return math.inf
        over = observed - self.value if self.op == "<=" else self.value - observed
        return over / abs(self.value)


def check_limits(
    texts: list[str], *, level: Literal["required", "forbidden", "optional"]
) -> list[str]:
    """``texts`` unchanged when every one reads as a limit (``parse_limit``), else its ValueError:
    the space file's validators keep the text and parse it where it is used."""
    for text in texts:
        parse_limit(text, level=level)
    return texts


def parse_limit(
    text: str, *, level: Literal["required", "forbidden", "optional"] = "optional"
) -> MetricLimit:
    """``"ttft_ms.p99 <= 1000"`` to a MetricLimit; ValueError saying what to write instead.

    ``level``: whether ``@LEVEL`` must be given (a constraint of a study), must not be
    (a capacity search, where the level is what is searched) or may be.
    """
    match = _LIMIT.match(text)
    if match is None:
        raise ValueError(
            f"cannot read the limit {text!r}: write METRIC[.STAT][@LEVEL] <= NUMBER, "
            f"e.g. {EXAMPLE!r} or 'error_rate@* <= 0.01'"
        )
    metric = match["metric"]
    if match["stat"]:
        metric = f"{metric}_{match['stat']}"
    if metric not in LIMIT_METRICS:
        raise ValueError(
            f"limit {text!r}: unknown metric {metric!r}; use one of "
            f"{', '.join(LIMIT_SCALARS)}, a latency "
            f"({'/'.join(LATENCY_FAMILIES)}) with .{'/.'.join(LATENCY_STATS)}, or a launch's "
            f"load ({', '.join(LOAD_METRICS)})"
        )
    if match["op"] not in ("<=", ">="):
        raise ValueError(f"limit {text!r}: use <= or >= (not {match['op']}), e.g. {EXAMPLE!r}")
    op: Literal["<=", ">="] = "<=" if match["op"] == "<=" else ">="
    at: int | Literal["*"] | None = None
    if match["level"] == "*":
        at = "*"
    elif match["level"] is not None:
        at = int(match["level"])
        if at < 1:
            raise ValueError(f"limit {text!r}: a concurrency level is 1 or more")
    if is_load_metric(metric):
        return _load_limit(text, metric, op, float(match["value"]), at, level)
    if level == "required" and at is None:
        raise ValueError(f"limit {text!r}: name the level, e.g. {EXAMPLE!r} (or @* for all)")
    if level == "forbidden" and at is not None:
        raise ValueError(
            f"limit {text!r}: no @LEVEL here (the capacity search finds the level); "
            f"write e.g. 'ttft_ms.p99 <= 1000'"
        )
    return MetricLimit(metric=metric, op=op, value=float(match["value"]), level=at)


def _load_limit(
    text: str,
    metric: str,
    op: Literal["<=", ">="],
    value: float,
    at: int | Literal["*"] | None,
    level: Literal["required", "forbidden", "optional"],
) -> MetricLimit:
    """A limit on a launch's load: no @LEVEL (one value per launch), and none where a
    running server's levels are searched (the capacity search loads nothing)."""
    if level == "forbidden":
        raise ValueError(
            f"limit {text!r}: {metric} is a launch's load, and a capacity search measures a "
            "running server: put it in objective.subject_to instead"
        )
    if at is not None:
        raise ValueError(
            f"limit {text!r}: {metric} is one value per launch (its load), not per "
            f"concurrency level: write '{metric} {op} {value:g}'"
        )
    return MetricLimit(metric=metric, op=op, value=value, level=None)
