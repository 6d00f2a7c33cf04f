"""Several objectives: which configurations are dominated beyond noise, and which to recommend.

docs/statistics.md, "Several objectives". Each configuration has one estimate per
objective (a pooled mean with its interval). Among the trusted configurations:

- A *dominates* B when A is significantly better on at least one objective (the Welch
  verdict of ``compare``: outside the noise and past ``min_gain``) and not worse on any
  by its point estimate. A tie within the noise is not domination: two configurations
  that differ by noise on every objective both stay.
- The *statistically non-dominated* set is every candidate that no other dominates.
- The *recommendation*: among the non-dominated, those that beat the defaults
  significantly on at least one objective and are not significantly worse on any (the
  recommendable set); the fewest changed settings wins, ties broken by the largest sum
  over objectives of the relative gain over the defaults. None: keep the defaults.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tuner.stats.compare import Comparison, Direction, compare
from tuner.stats.estimates import ConfigEstimate
from tuner.stats.wording import percent


@dataclass(frozen=True)
class ParetoCandidate:
    """A configuration as the Pareto rules see it: one estimate per objective."""

    key: str
    estimates: tuple[ConfigEstimate, ...]
    n_changed: int
    label: str | None = None


@dataclass(frozen=True)
class ParetoEntry:
    """One candidate on the front: who dominates it, and how it compares with the defaults."""

    key: str
    dominated_by: tuple[str, ...]
    vs_baseline: tuple[Comparison, ...] | None
    """Per objective, this candidate against the defaults; None for the defaults."""

    @property
    def dominated(self) -> bool:
        return bool(self.dominated_by)

    @property
    def beats_defaults(self) -> bool:
        """Significantly better on one objective, significantly worse on none."""
        cmps = self.vs_baseline or ()
        return any(c.verdict == "better" for c in cmps) and all(c.verdict != "worse" for c in cmps)

    @property
    def total_gain(self) -> float:
        """The relative gains over the defaults, summed over objectives (the tie-break)."""
        return math.fsum(c.gain for c in self.vs_baseline or ())


@dataclass(frozen=True)
class ParetoAnswer:
    """Every candidate judged, the recommendable set and the recommendation with its reason."""

    entries: tuple[ParetoEntry, ...]
    recommendable: tuple[str, ...]
    recommended: str
    reason: str
    keep_defaults: bool

    @property
    def non_dominated(self) -> tuple[str, ...]:
        return tuple(e.key for e in self.entries if not e.dominated)

    def entry(self, key: str) -> ParetoEntry:
        return next(e for e in self.entries if e.key == key)


@dataclass(frozen=True)
class ParetoJudge:
    """The settings every comparison of one study shares: the objectives and the test."""

    names: tuple[str, ...]
    directions: tuple[Direction, ...]
    min_gain: float
    confidence: float

    def versus(self, a: ParetoCandidate, b: ParetoCandidate) -> tuple[Comparison, ...]:
        """``a`` against ``b`` on every objective."""
        return tuple(
            compare(
                ea,
                eb,
                direction=d,
                min_gain=self.min_gain,
                confidence=self.confidence,
            )
            for ea, eb, d in zip(a.estimates, b.estimates, self.directions, strict=True)
        )

    def dominates(self, a: ParetoCandidate, b: ParetoCandidate) -> bool:
        """A significantly better than B on one objective, and no worse on any (point)."""
        cmps = self.versus(a, b)
        return any(c.verdict == "better" for c in cmps) and all(c.gain >= 0 for c in cmps)

    def judge(
        self, candidates: Sequence[ParetoCandidate], baseline: ParetoCandidate | None
    ) -> ParetoAnswer:
        """The front of ``candidates`` and the recommendation against ``baseline`` (the
        defaults' estimates; it may be left out of ``candidates``, e.g. when it breaks a
        limit, and still be what gains are measured against)."""
        if not candidates:
            raise ValueError("the Pareto rules need at least one candidate")
        entries = []
        for c in candidates:
            by = tuple(o.key for o in candidates if o is not c and self.dominates(o, c))
            vs = (
                self.versus(c, baseline) if baseline is not None and c.key != baseline.key else None
            )
            entries.append(ParetoEntry(c.key, by, vs))
        by_key = {c.key: c for c in candidates}
        recommendable = [e for e in entries if not e.dominated and e.beats_defaults]
        if recommendable:
            chosen = min(recommendable, key=lambda e: (by_key[e.key].n_changed, -e.total_gain))
            reason = self._change(by_key[chosen.key], chosen, len(recommendable))
            return ParetoAnswer(
                tuple(entries),
                tuple(e.key for e in recommendable),
                chosen.key,
                reason,
                keep_defaults=False,
            )
        if baseline is None:  # nothing to keep: the simplest non-dominated
            front = [by_key[e.key] for e in entries if not e.dominated]
            simplest = min(front, key=lambda c: c.n_changed)
            reason = (
                f"{self.name(simplest, None)} is the simplest statistically non-dominated "
                "configuration (the defaults were not measured to compare with)"
            )
            return ParetoAnswer(tuple(entries), (), simplest.key, reason, keep_defaults=False)
        return ParetoAnswer(
            tuple(entries), (), baseline.key, self._keep(entries), keep_defaults=True
        )

    def name(self, c: ParetoCandidate, baseline: ParetoCandidate | None) -> str:
        if baseline is not None and c.key == baseline.key:
            return "the defaults"
        return c.label or c.key

    def _gains(self, cmps: Sequence[Comparison]) -> str:
        return ", ".join(
            f"{n} {c.gain * 100:+.1f}% ± {percent(c.noise_rel)}"
            for n, c in zip(self.names, cmps, strict=True)
        )

    def _change(self, chosen: ParetoCandidate, entry: ParetoEntry, n: int) -> str:
        changed = f"{chosen.n_changed} setting{'s' if chosen.n_changed != 1 else ''} changed"
        cmps = entry.vs_baseline or ()
        better = [nm for nm, c in zip(self.names, cmps, strict=True) if c.verdict == "better"]
        text = (
            f"{self.name(chosen, None)} ({changed}) is statistically non-dominated and beats "
            f"the defaults on {', '.join(better)} without being significantly worse on any "
            f"objective ({self._gains(cmps)} against the defaults)"
        )
        if n == 1:
            return text + "; it is the only such configuration"
        return text + (
            f"; the simplest of {n} such configurations (fewest changed settings, then the "
            "largest gain summed over objectives)"
        )

    def _keep(self, entries: Sequence[ParetoEntry]) -> str:
        others = [e for e in entries if e.vs_baseline is not None]
        if not others:
            return "keep the defaults: no other configuration was measured enough to compare"
        trade = [e for e in others if any(c.verdict == "better" for c in e.vs_baseline or ())]
        text = (
            f"keep the defaults: no statistically non-dominated configuration beats them on "
            f"one objective without being significantly worse on another ({len(others)} "
            f"configuration{'s' if len(others) != 1 else ''} compared"
        )
        if trade:
            text += (
                f"; {len(trade)} trade{'s' if len(trade) != 1 else ''} one objective for "
                "another: see the front"
            )
        return text + ")"
