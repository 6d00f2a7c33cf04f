"""The probe's decisions, as pure functions: slower than the default, can NCCL help, the floor.

- ``compare_probe``: Welch's test of a configuration's probe against the default's at one
  size, on the relative difference of the mean times (delta method, Satterthwaite dof).
  ``slower`` when the interval lies above zero: such a configuration is not launched.
- ``nccl_finding``: whether NCCL settings can move the objective by ``min_gain``. A
  setting's gain on the all-reduce time moves a decode step by that gain times the share
  of the step spent in all-reduce (``comm_share``). A param can help when the optimistic
  end of its best value's interval, times the share, reaches min_gain; the params that
  cannot are frozen (no longer searched), unless several of them together could reach
  it (their significant gains summed, then checked by one probe of them set at once), in
  which case those with a significant gain stay. The same rule holds value by value: a
  param left open is searched over its values that can help (``open_values``), and the
  significantly fastest of each is the probe's *nominee*, launched first.
- ``comm_share`` and ``floor_tokens_per_s``: the share of a decode step the default's
  all-reduces take, and the single-stream bound the fastest probe gives.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tuner.stats.student_t import satterthwaite, t_critical
from tuner.stats.wording import percent

ProbeVerdict = Literal["slower", "faster", "within noise"]


@dataclass(frozen=True)
class ProbeComparison:
    """A configuration's probe against the default's at one size (times in microseconds)."""

    size: int
    us: float
    default_us: float
    rel_diff: float
    """(us - default_us) / default_us: above zero the configuration's all-reduce is slower."""
    half_width: float
    """Half-width of the interval of ``rel_diff`` at the test's confidence."""
    verdict: ProbeVerdict

    @property
    def gain(self) -> float:
        """How much faster than the default (a fraction; negative: slower)."""
        return -self.rel_diff

    @property
    def optimistic_gain(self) -> float:
        """The fastest it may plausibly be: the gain plus the interval's half-width."""
        return self.gain + self.half_width

    def describe(self) -> str:
        word = "slower" if self.rel_diff > 0 else "faster"
        return (
            f"{self.us:.4g} us against the default's {self.default_us:.4g} us at "
            f"{self.size} bytes: {abs(self.rel_diff) * 100:.1f}% ± "
            f"{percent(self.half_width)} {word} ({self.verdict})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "us": self.us,
            "default_us": self.default_us,
            "rel_diff": self.rel_diff,
            "half_width": self.half_width,
            "verdict": self.verdict,
        }


def compare_probe(
    samples: Sequence[float], default: Sequence[float], *, size: int, confidence: float
) -> ProbeComparison:
    """Is this probe slower, faster, or within noise of the default's? (Welch, two-sided.)"""
    if len(samples) < 2 or len(default) < 2:
        raise ValueError("a probe comparison needs at least two samples on each side")
    mean_a, var_a = _mean_var(samples)
    mean_b, var_b = _mean_var(default)
    rel = (mean_a - mean_b) / mean_b
    ratio2 = (mean_a / mean_b) ** 2
    part_a = var_a / len(samples) / mean_b**2
    part_b = ratio2 * var_b / len(default) / mean_b**2
    var = part_a + part_b
    dof = satterthwaite([(part_a, len(samples) - 1), (part_b, len(default) - 1)])
    half = 0.0 if var == 0 else t_critical(confidence, dof) * math.sqrt(var)
    verdict: ProbeVerdict = "within noise"
    if abs(rel) > half:
        verdict = "slower" if rel > 0 else "faster"
    return ProbeComparison(
        size=size, us=mean_a, default_us=mean_b, rel_diff=rel, half_width=half, verdict=verdict
    )


def comm_share(allreduce_s_per_step: float, step_s: float) -> float:
    """The share of a decode step spent in all-reduce, within [0, 1]."""
    if step_s <= 0:
        return 1.0
    return min(1.0, max(0.0, allreduce_s_per_step / step_s))


def floor_tokens_per_s(allreduces_per_token: int, us_per_allreduce: float) -> float:
    """The most tokens per second one stream can reach when its all-reduces alone took
    the whole step: a bound from the fastest probe."""
    return 1e6 / (allreduces_per_token * us_per_allreduce)


@dataclass(frozen=True)
class ParamOutlook:
    """What the probe says about one NCCL param: its most promising value."""

    name: str
    best_value: str | None
    gain: float
    """The best value's gain on the all-reduce time (negative: every value is slower)."""
    optimistic_gain: float
    significant: bool
    """Whether some value is significantly faster than the default."""
    can_help: bool
    """optimistic_gain x comm share reaches min_gain."""


@dataclass(frozen=True)
class NcclFinding:
    """Can NCCL settings move the objective by min_gain at these sizes?"""

    comm_share: float
    min_gain: float
    params: tuple[ParamOutlook, ...]
    frozen: frozenset[str]
    combined_gain: float
    """What the params that cannot help alone could move the objective by together, as the
    probe sees it: their probe at once (or, before it ran, their significant gains summed),
    times the comm share."""
    failed: Mapping[str, str] = field(default_factory=dict)
    open_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For each param not frozen, the values still searched: those that can help alone,
    or, where the params are kept together, those significantly faster."""
    nominee: Mapping[str, str] = field(default_factory=dict)
    """Each param not frozen at its significantly fastest open value: the probe's best
    guess at the NCCL setting, launched before the local search (tuner/study/run/probe.py)."""

    @property
    def can_help(self) -> bool:
        return len(self.frozen) < len(self.params)

    def sentence(self) -> str:
        share = f"all-reduce is {percent(self.comm_share)} of a decode step"
        if not self.can_help:
            best = max(self.params, key=lambda p: p.optimistic_gain, default=None)
            most = (
                ""
                if best is None
                else (
                    f"; the most promising, {best.name}={best.best_value}, is at most "
                    f"{percent(max(best.optimistic_gain, 0.0))} faster at all-reduce, "
                    f"{percent(max(best.optimistic_gain, 0.0) * self.comm_share)} of the objective"
                )
            )
            return (
                f"NCCL settings cannot help at these sizes: no setting's probe beats the "
                f"default's by enough to move the objective by {percent(self.min_gain)} "
                f"({share}{most})"
            )
        helping = [p for p in self.params if p.name not in self.frozen]
        named = ", ".join(f"{p.name}={p.best_value} ({p.gain * 100:+.1f}%)" for p in helping)
        frozen = f"; no longer searched: {', '.join(sorted(self.frozen))}" if self.frozen else ""
        return f"NCCL settings that may help ({share}): {named}{frozen}"

    def to_json(self) -> dict[str, Any]:
        return {
            "comm_share": self.comm_share,
            "min_gain": self.min_gain,
            "can_help": self.can_help,
            "frozen": sorted(self.frozen),
            "combined_gain": self.combined_gain,
            "params": [
                {
                    "name": p.name,
                    "best_value": p.best_value,
                    "gain": p.gain,
                    "optimistic_gain": p.optimistic_gain,
                    "significant": p.significant,
                    "can_help": p.can_help,
                }
                for p in self.params
            ],
            "failed": dict(self.failed),
            "open_values": {name: list(values) for name, values in self.open_values.items()},
            "nominee": dict(self.nominee),
            "sentence": self.sentence(),
        }


def nccl_finding(
    by_param: Mapping[str, Mapping[str, ProbeComparison | str]],
    *,
    comm_share: float,
    min_gain: float,
    together: ProbeComparison | None = None,
) -> NcclFinding:
    """Which NCCL params cannot help; ``by_param`` maps each param's values to their probe
    comparison, or to the error of a probe that failed (such a value cannot help).

    ``together`` is the probe of ``together_values`` (the params that cannot help alone,
    each at its significantly fastest value) set at once, when it was run: its gain
    replaces the sum of their gains. The sum overstates what they do together: each term
    is the best of several noisy values (the winner's curse), and small true gains whose
    noisy maxima add up past min_gain would keep settings that cannot help in the search.
    """
    outlooks = []
    failed: dict[str, str] = {}
    for name, values in by_param.items():
        measured = {v: c for v, c in values.items() if isinstance(c, ProbeComparison)}
        failed.update({f"{name}={v}": c for v, c in values.items() if isinstance(c, str)})
        if not measured:
            outlooks.append(ParamOutlook(name, None, -math.inf, -math.inf, False, False))
            continue
        value, best = max(measured.items(), key=lambda item: item[1].optimistic_gain)
        outlooks.append(
            ParamOutlook(
                name=name,
                best_value=value,
                gain=best.gain,
                optimistic_gain=best.optimistic_gain,
                significant=any(c.verdict == "faster" for c in measured.values()),
                can_help=best.optimistic_gain * comm_share >= min_gain,
            )
        )
    small = [p for p in outlooks if not p.can_help]
    if together is not None:
        combined = comm_share * together.gain
    else:
        fastest = [_fastest(by_param[p.name]) for p in small]
        combined = comm_share * math.fsum(f[1] for f in fastest if f is not None)
    if combined >= min_gain:
        # Together they could: keep every param with a significantly faster value.
        frozen = {p.name for p in outlooks if not p.can_help and not p.significant}
    else:
        frozen = {p.name for p in outlooks if not p.can_help}
    open_values: dict[str, tuple[str, ...]] = {}
    nominee: dict[str, str] = {}
    for outlook in outlooks:
        if outlook.name in frozen:
            continue
        measured = {
            v: c for v, c in by_param[outlook.name].items() if isinstance(c, ProbeComparison)
        }
        # Kept with the others (none can help alone): its significantly faster values.
        together_only = not outlook.can_help
        open_values[outlook.name] = tuple(
            v
            for v, c in measured.items()
            if (
                c.verdict == "faster"
                if together_only
                else c.optimistic_gain * comm_share >= min_gain
            )
        )
        fastest_open = _fastest({v: measured[v] for v in open_values[outlook.name]})
        if fastest_open is not None:
            nominee[outlook.name] = fastest_open[0]
    return NcclFinding(
        comm_share=comm_share,
        min_gain=min_gain,
        params=tuple(outlooks),
        frozen=frozenset(frozen),
        combined_gain=combined,
        failed=failed,
        open_values=open_values,
        nominee=nominee,
    )


def together_values(
    by_param: Mapping[str, Mapping[str, ProbeComparison | str]], finding: NcclFinding
) -> dict[str, str]:
    """The params that cannot help alone but are significantly faster at some value, each
    at its fastest such value: the setting to probe at once when their gains, summed,
    reach min_gain (see ``nccl_finding``'s ``together``)."""
    out = {}
    for outlook in finding.params:
        fastest = _fastest(by_param[outlook.name])
        if not outlook.can_help and fastest is not None:
            out[outlook.name] = fastest[0]
    return out


def _fastest(values: Mapping[str, ProbeComparison | str]) -> tuple[str, float] | None:
    """The significantly faster value with the largest gain, and that gain; None if none."""
    faster = [
        (value, c.gain)
        for value, c in values.items()
        if isinstance(c, ProbeComparison) and c.verdict == "faster"
    ]
    return max(faster, key=lambda item: item[1]) if faster else None


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    mean = math.fsum(values) / len(values)
    return mean, math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
