"""What screening launches are worth next to full ones: the bias between them, how well they rank.

A study with a ``screening:`` section (tuner/space/screening.py) searches on screening
launches and decides on full ones. The defaults are launched at both fidelities (the
opening's full baselines, and the final comparisons' launches of the defaults), so the
study can say, from its own launches:

- the **bias**: the defaults at full fidelity against the defaults at screening fidelity
  (their means' ratio, with its interval at the study's confidence, on the pooled noise);
- the **scale**: what a full launch's value is multiplied by to sit beside the screening
  ones in the search (a configuration screening cannot judge is launched full and
  searched on that scale); 1 until both fidelities of the defaults were measured;
- the **rank agreement**: over every configuration launched both ways, the pairs that
  screening orders as the full launches do (Kendall's concordance). A setting whose effect
  differs between random and real weights shows here as a discordant pair, when both
  were launched; docs/statistics.md ("Screening launches") says what it cannot see.

Pure: launch estimates in, facts out.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuner import stats


@dataclass(frozen=True)
class RankAgreement:
    """Screening's order of the configurations launched both ways, against the full one."""

    configs: int
    pairs: int
    concordant: int

    @property
    def share(self) -> float | None:
        return self.concordant / self.pairs if self.pairs else None

    def sentence(self) -> str:
        if self.pairs == 0:
            return (
                f"{self.configs} configuration{'s' if self.configs != 1 else ''} launched both "
                "ways: no pair to rank yet"
            )
        return (
            f"screening ordered {self.concordant} of {self.pairs} pair"
            f"{'s' if self.pairs != 1 else ''} of the {self.configs} configurations launched "
            "both ways as full launches did"
        )


@dataclass(frozen=True)
class FidelityFacts:
    """The screening study's two fidelities side by side (see the module)."""

    screen_launches: int
    full_launches: int
    bias: stats.Comparison | None
    """The defaults, full against screening (None: not yet launched both ways)."""
    scale: float
    """Screening mean of the defaults over their full mean (1.0 while unknown)."""
    ranks: RankAgreement
    both: tuple[tuple[str, float, float], ...]
    """(config hash, screening mean, full mean) of each configuration launched both ways."""

    def bias_sentence(self) -> str | None:
        if self.bias is None:
            return None
        b = self.bias
        return (
            f"full launches of the defaults measure {b.rel_diff * 100:+.1f}% "
            f"({b.confidence * 100:g}% interval {b.ci_low * 100:+.1f}% to "
            f"{b.ci_high * 100:+.1f}%) against their screening launches"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "screen_launches": self.screen_launches,
            "full_launches": self.full_launches,
            "bias": None
            if self.bias is None
            else {
                "rel_diff": self.bias.rel_diff,
                "ci_low": self.bias.ci_low,
                "ci_high": self.bias.ci_high,
                "confidence": self.bias.confidence,
            },
            "scale": self.scale,
            "rank_agreement": {
                "configs": self.ranks.configs,
                "pairs": self.ranks.pairs,
                "concordant": self.ranks.concordant,
            },
        }


def rank_agreement(both: Sequence[tuple[str, float, float]]) -> RankAgreement:
    """Pairs of configurations that screening orders as full launches do (ties: discordant,
    except a tie on both sides)."""
    pairs = concordant = 0
    for (_, s1, f1), (_, s2, f2) in itertools.combinations(both, 2):
        pairs += 1
        ds, df = s1 - s2, f1 - f2
        if ds * df > 0 or (ds == 0 and df == 0):
            concordant += 1
    return RankAgreement(configs=len(both), pairs=pairs, concordant=concordant)


def fidelity_facts(
    screen: Mapping[str, Sequence[stats.LaunchEstimate]],
    full: Mapping[str, Sequence[stats.LaunchEstimate]],
    *,
    baseline_key: str | None,
    noise: stats.NoiseEstimate | None,
    confidence: float,
) -> FidelityFacts:
    """The facts from each configuration's screening and full launches (see the module)."""
    both = tuple(
        (key, _mean(screen[key]), _mean(full[key]))
        for key in screen
        if key in full and screen[key] and full[key]
    )
    bias = None
    scale = 1.0
    if baseline_key is not None and screen.get(baseline_key) and full.get(baseline_key):
        a = stats.config_estimate(full[baseline_key], noise)
        b = stats.config_estimate(screen[baseline_key], noise)
        bias = stats.compare(a, b, direction="maximize", min_gain=0.0, confidence=confidence)
        if a.mean:
            scale = b.mean / a.mean
    return FidelityFacts(
        screen_launches=sum(len(v) for v in screen.values()),
        full_launches=sum(len(v) for v in full.values()),
        bias=bias,
        scale=scale,
        ranks=rank_agreement(both),
        both=both,
    )


def _mean(launches: Sequence[stats.LaunchEstimate]) -> float:
    return sum(e.mean for e in launches) / len(launches)
