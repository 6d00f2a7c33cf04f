"""The final comparison's answer in words, and what would settle an open one.

The sentences of tuner/study/facts/final.py's ``answer`` (confirmed, refuted, not
settled) and the phrases `tuner best` reuses (the launches, the interval, the drift);
``open_comparison`` estimates how many more launches a side would settle an open
comparison, on the plan's next looks (tuner/stats/looks.py). Pure.
"""

from __future__ import annotations

import math

from tuner import stats
from tuner.stats.student_t import t_critical
from tuner.stats.wording import faster_or_slower, percent

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
