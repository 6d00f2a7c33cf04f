"""The final comparisons of a study: their launches, their verdicts, and the answer.

A final comparison (tuner/stats/final.py; queued by tuner/study/policy/
final_comparison.py) launches the search's candidate and the defaults again, fresh and
interleaved, with role ``final``. Those launches are kept out of the search's view of the
study (``StudyAnalysis.configs``): the search selects, they decide. A block is read back
from the launches alone, in trial order: a final launch of a configuration other than the
defaults opens a block unless it is the current block's candidate; a final launch of the
defaults joins the current block (the policy queues the candidate first: C B B C).

The answer: the candidate of a final comparison that passed (the fewest changed
settings, then the highest lower bound, when several did); else the defaults, with a
sentence that says what the final launches showed, or that the candidate never had them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tuner import stats
from tuner.space.settings import is_default
from tuner.stats.looks import LookPlan
from tuner.stats.student_t import t_critical
from tuner.stats.wording import faster_or_slower, percent
from tuner.storage import LaunchRow


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
        first = looks.first if looks is not None else 2
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


SETTLE_LOOKS = 3
"""How many of the plan's next looks the estimate of what settles a comparison reaches."""


def open_comparison(f: stats.FinalComparison, who: str) -> stats.Unsettled:
    """A comparison that neither passed nor was refuted, and about how many more launches
    a side would settle it: the fewest of the plan's next looks at which an interval of
    the width the noise implies, around the gain measured, would lie wholly above or
    below the bar (at least the next look)."""
    k = max(f.candidate_launches, f.baseline_launches)
    half = f.gain.noise_rel
    t_now = t_critical(f.gain.confidence, max(1.0, f.gain.dof))
    settles = None
    for look in range(f.look + 1, f.look + 1 + SETTLE_LOOKS):
        size = f.plan.size(look)
        level = _look_level(f, look)
        width = half * math.sqrt(k / size) * t_critical(level, max(1.0, f.gain.dof)) / t_now
        if abs(f.gain.gain - f.bar) > width:
            settles = look
            break
    look = settles if settles is not None else f.look + 1
    what = f"the {percent(f.bar)} {'drift' if f.bar > f.gain.min_gain else 'minimum gain'}"
    ruled = " nor lies below it"
    return stats.Unsettled(
        candidate=f.candidate,
        label=who,
        gain=f.gain.gain,
        lower=f.lower,
        upper=f.upper,
        confidence=f.gain.confidence,
        launches_each=k,
        more_each=max(1, f.plan.size(look) - k),
        why=f"its interval on {launches_phrase(f)}, neither clears {what}{ruled}",
        sure=settles is not None,
    )


def _look_level(f: stats.FinalComparison, look: int) -> float:
    """The confidence of the comparison's look ``look`` (the study's Bonferroni included)."""
    return f.plan.level(_configured_confidence(f), look, f.comparisons)


def _configured_confidence(f: stats.FinalComparison) -> float:
    """stop.final_confidence, read back from the look's own level."""
    share = f.plan.share(f.look) / max(1, f.comparisons)
    return 1.0 - (1.0 - f.gain.confidence) / share


def not_settled_sentence(u: stats.Unsettled) -> str:
    """'not settled: trial 7, the search's choice, is +10.4% (99.5% interval ...) ...'."""
    if u.lower is not None and u.upper is not None and u.confidence is not None:
        shown = (
            f"{u.gain * 100:+.1f}% ({u.confidence * 100:g}% interval "
            f"{u.lower * 100:+.1f}% to {u.upper * 100:+.1f}%) against the defaults"
        )
    else:
        shown = f"{u.gain * 100:+.1f}% against the defaults in the search"
    more = f"{u.more_each} more launch{'es' if u.more_each != 1 else ''} a side"
    settle = (
        f"About {more} would settle it"
        if u.sure
        else f"The gain measured is too close to the bar to say how many launches would "
        f"settle it; the next look takes {more}"
    )
    return (
        f"not settled: {u.label}, the search's choice, is {shown}; {u.why}. {settle}; "
        "until then keep the defaults"
    )


def launches_phrase(f: stats.FinalComparison) -> str:
    """'2 fresh launches of it and 2 of the defaults, interleaved'."""
    n = f.candidate_launches
    m = f.baseline_launches
    return f"{n} fresh launch{'es' if n != 1 else ''} of it and {m} of the defaults, interleaved"


def interval(f: stats.FinalComparison) -> str:
    """'+8.1% (97.5% interval +5.2% to +11.0%)', the interval the guarantee implies."""
    return (
        f"{f.gain.gain * 100:+.1f}% ({f.gain.confidence * 100:g}% interval "
        f"{f.lower * 100:+.1f}% to {f.upper * 100:+.1f}%)"
    )


def drift_sentence(f: stats.FinalComparison) -> str | None:
    """What the defaults did between the study's first launches and its last."""
    if f.drift is None or not f.drift.significant:
        return None
    text = (
        f"the defaults moved {f.drift.rel_diff * 100:+.1f}% ± {percent(f.drift.noise_rel)} "
        "between the study's first launches and its last (drift)"
    )
    below = f.undecidable_below
    if below is not None:
        text += f": this study cannot decide gains below {percent(below)}"
    return text


def bonferroni_phrase(f: stats.FinalComparison) -> str:
    """', at look 2 of its plan' (and Bonferroni over the study's final comparisons)."""
    text = f", at look {f.look} (its share of the error rate)" if len(f.plan.planned) > 1 else ""
    if f.comparisons > 1:
        text += f", Bonferroni over the study's {f.comparisons} final comparisons"
    return text


def confirmed_sentence(f: stats.FinalComparison, who: str, changed: int) -> str:
    several = bonferroni_phrase(f)
    text = (
        f"{who} ({changed} setting{'s' if changed != 1 else ''} changed) is "
        f"{interval(f)} {faster_or_slower(f.gain.gain)} than the defaults on "
        f"{launches_phrase(f)}{several}: "
        f"the interval clears the {percent(f.bar)} "
        f"{'drift' if f.bar > f.gain.min_gain else 'minimum gain'}"
    )
    drift = drift_sentence(f)
    return f"{text}; {drift}" if drift else text


def refuted_sentence(f: stats.FinalComparison, who: str) -> str:
    """'keep the defaults: ... which rules out ...' (the refuted comparison)."""
    what = f"{percent(f.bar)} {'drift' if f.bar > f.gain.min_gain else 'minimum gain'}"
    ruled = f"which lies below the {what}: no gain worth deploying"
    text = (
        f"keep the defaults: {who}, the search's choice, is {interval(f)} against the "
        f"defaults on {launches_phrase(f)}{bonferroni_phrase(f)}, {ruled}"
    )
    drift = drift_sentence(f)
    return f"{text}; {drift}" if drift else text
