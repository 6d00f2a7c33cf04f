"""The final comparisons of a study: their launches, their verdicts, and the answer.

A final comparison (tuner/stats/final.py; queued by tuner/study/policy/
final_comparison.py) launches the search's candidate and the defaults again, fresh and
interleaved, with role ``final``. Those launches are kept out of the search's view of the
study (``StudyAnalysis.configs``): the search selects, they decide. A block is read back
from the launches alone, in trial order: a final launch of a configuration other than the
defaults opens a block unless it is the current block's candidate; a final launch of the
defaults joins the current block (the policy queues the candidate first: C B B C).

The answer, with one of three verdicts (docs/statistics.md, "Three answers"):

- **confirmed**: the candidate of a final comparison that passed (the fewest changed
  settings, then the highest lower bound, when several did);
- **no gain**: the last comparison was refuted (its interval below the bar), or nothing
  was worth one (no candidate, and no change whose interval reaches the minimum gain);
- **not settled**: the last comparison is open, or a change worth one never had it; the
  answer names it, what it showed, and about how many launches a side would settle it.

Until a change is confirmed the defaults are what to deploy; the sentence says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tuner import stats
from tuner.space.settings import is_default
from tuner.stats.looks import LookPlan
from tuner.storage import LaunchRow
from tuner.study.facts.final_words import (
    confirmed_sentence,
    not_settled_sentence,
    open_comparison,
    refuted_sentence,
)


@dataclass(frozen=True)
class FinalBlock:
    """The launches of one final comparison."""

    candidate: str
    """The config hash of the configuration compared with the defaults."""
    candidate_launches: tuple[stats.LaunchEstimate, ...]
    baseline_launches: tuple[stats.LaunchEstimate, ...]
    first_trial: int | None


def blocks(rows: Sequence[tuple[LaunchRow, stats.LaunchEstimate]]) -> tuple[FinalBlock, ...]:
    """The final comparisons among the study's completed final launches (see the module)."""
    found: list[FinalBlock] = []
    ordered = sorted(rows, key=lambda r: (r[0].trial_number is None, r[0].trial_number or 0))
    for row, estimate in ordered:
        baseline = all(is_default(v) for v in row.params.values())
        current = found[-1] if found else None
        if baseline:
            if current is None:
                continue  # a baseline before any candidate: not part of a comparison
            found[-1] = dataclasses.replace(
                current, baseline_launches=(*current.baseline_launches, estimate)
            )
        elif current is not None and current.candidate == row.config_hash:
            found[-1] = dataclasses.replace(
                current, candidate_launches=(*current.candidate_launches, estimate)
            )
        else:
            found.append(FinalBlock(row.config_hash, (estimate,), (), row.trial_number))
    return tuple(found)


def noise_over(
    launches: Mapping[str, Sequence[stats.LaunchEstimate]],
    final_rows: Sequence[tuple[LaunchRow, stats.LaunchEstimate]],
) -> stats.FinalNoise:
    """The noise over every configuration's launches, the final ones included."""
    groups: dict[str, list[stats.LaunchEstimate]] = {k: list(v) for k, v in launches.items()}
    for row, estimate in final_rows:
        groups.setdefault(row.config_hash, []).append(estimate)
    return stats.final_noise(list(groups.values()))


def verdicts(
    found: Sequence[FinalBlock],
    opening: Sequence[stats.LaunchEstimate],
    noise: stats.FinalNoise | None,
    *,
    direction: stats.Direction,
    min_gain: float,
    confidence: float,
    plan: LookPlan | None = None,
) -> list[stats.FinalComparison]:
    """Each complete block's verdict (both sides launched), each at the level of the look
    of ``plan`` its launches reach, Bonferroni over every block."""
    complete = [b for b in found if b.candidate_launches and b.baseline_launches]
    if noise is None:
        return []
    return [
        stats.final_comparison(
            b.candidate,
            b.candidate_launches,
            b.baseline_launches,
            opening,
            noise,
            direction=direction,
            min_gain=min_gain,
            confidence=confidence,
            comparisons=len(found),
            plan=plan,
        )
        for b in complete
    ]


Lead = tuple[str, stats.Comparison]
"""The search's best-looking change, trusted or not, and its comparison with the defaults."""


def hides_gain(lead: Lead | None) -> bool:
    """The best-looking change could still be a gain worth deploying: its interval against
    the defaults reaches above the minimum gain (the search's launches cannot rule it out)."""
    if lead is None:
        return False
    cmp = lead[1]
    return cmp.gain + cmp.noise_rel > cmp.min_gain


def worth_comparing(candidate: stats.Recommendation | None, lead: Lead | None) -> str | None:
    """The key a final comparison judges (see ``StudyAnalysis.comparison_candidate``): the
    search's candidate when it is a change; else the best-looking change that could
    still hide a gain worth deploying; else None (nothing worth a comparison)."""
    if candidate is None:
        return None
    if not candidate.keep_defaults:
        return candidate.recommended
    return lead[0] if lead is not None and hides_gain(lead) else None


def answer(
    candidate: stats.Recommendation | None,
    finals: Sequence[stats.FinalComparison],
    *,
    baseline_key: str | None,
    name: Callable[[str], str],
    n_changed: Callable[[str], int],
    looks: LookPlan | None = None,
    lead: Lead | None = None,
) -> stats.Recommendation | None:
    """The recommendation that the final comparisons allow, with its verdict (see the
    module): confirmed, no gain (nothing worth a comparison, or refuted), or not settled
    (the last comparison open, or none ran for a candidate). ``looks``: the study's;
    ``lead``: the best-looking change (``StudyAnalysis.lead``)."""
    if candidate is None or baseline_key is None:
        return candidate
    passed = [f for f in finals if f.passed]
    if passed:
        chosen = min(passed, key=lambda f: (n_changed(f.candidate), -f.lower))
        return stats.Recommendation(
            best=candidate.best,
            recommended=chosen.candidate,
            reason=confirmed_sentence(chosen, name(chosen.candidate), n_changed(chosen.candidate)),
            keep_defaults=False,
            equivalent=candidate.equivalent,
            best_vs_baseline=candidate.best_vs_baseline,
            recommended_vs_baseline=chosen.gain,
            verdict=stats.CONFIRMED,
        )
    unsettled = None
    if finals:
        last = finals[-1]
        if last.refuted:
            reason, verdict = refuted_sentence(last, name(last.candidate)), stats.NO_GAIN
        else:
            unsettled = open_comparison(last, name(last.candidate))
            reason, verdict = not_settled_sentence(unsettled), stats.NOT_SETTLED
    elif candidate.keep_defaults and not hides_gain(lead):
        return dataclasses.replace(candidate, verdict=stats.NO_GAIN)
    else:
        key = worth_comparing(candidate, lead)
        assert key is not None
        cmp = candidate.recommended_vs_baseline if not candidate.keep_defaults else None
        if cmp is None and lead is not None:
            cmp = lead[1]
        # The comparison it never had: its sized look, which it takes while the first
        # leaves it open.
        first = looks.sized if looks is not None else 2
        unsettled = stats.Unsettled(
            candidate=key,
            label=name(key),
            gain=cmp.gain if cmp is not None else 0.0,
            lower=None,
            upper=None,
            confidence=None,
            launches_each=0,
            more_each=first,
            why=(
                "it was not compared with the defaults on fresh launches (the final "
                "comparison did not run: the study stopped or ran out of budget first), "
                "and the search's own launches cannot confirm it"
            ),
        )
        reason, verdict = not_settled_sentence(unsettled), stats.NOT_SETTLED
    return stats.Recommendation(
        best=candidate.best,
        recommended=baseline_key,
        reason=reason,
        keep_defaults=True,
        equivalent=candidate.equivalent,
        best_vs_baseline=candidate.best_vs_baseline,
        verdict=verdict,
        unsettled=unsettled,
    )
