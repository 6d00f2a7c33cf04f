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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tuner import stats
from tuner.space.settings import is_default
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
    looks: int = 1,
) -> list[stats.FinalComparison]:
    """Each complete block's verdict (both sides launched), Bonferroni over every block
    and the ``looks`` each may take."""
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
            looks=looks,
        )
        for b in complete
    ]


def answer(
    candidate: stats.Recommendation | None,
    finals: Sequence[stats.FinalComparison],
    *,
    baseline_key: str | None,
    name: Callable[[str], str],
    n_changed: Callable[[str], int],
) -> stats.Recommendation | None:
    """The recommendation that the final comparisons allow (see the module)."""
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
        )
    if finals:
        last = finals[-1]
        reason = refuted_sentence(last, name(last.candidate))
    elif candidate.keep_defaults:
        return candidate
    else:
        cmp = candidate.recommended_vs_baseline
        looked = (
            f" looked {percent(cmp.gain)} {faster_or_slower(cmp.gain)} in the search, but"
            if cmp
            else ""
        )
        reason = (
            f"keep the defaults: {name(candidate.recommended)}{looked} was not compared with "
            "the defaults on fresh launches (the final comparison did not run: the study "
            "stopped or ran out of budget first); the search's own launches cannot confirm it"
        )
    return stats.Recommendation(
        best=candidate.best,
        recommended=baseline_key,
        reason=reason,
        keep_defaults=True,
        equivalent=candidate.equivalent,
        best_vs_baseline=candidate.best_vs_baseline,
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
    """', Bonferroni over its 2 looks' (and the study's final comparisons), or nothing."""
    over = []
    if f.looks > 1:
        over.append(f"its {f.looks} looks")
    if f.comparisons > 1:
        over.append(f"the study's {f.comparisons} final comparisons")
    return f", Bonferroni over {' and '.join(over)}" if over else ""


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
    text = (
        f"keep the defaults: {who}, the search's choice, is {interval(f)} against the "
        f"defaults on {launches_phrase(f)}{bonferroni_phrase(f)}, which does not clear the "
        f"{percent(f.bar)} "
        f"{'drift' if f.bar > f.gain.min_gain else 'minimum gain'}"
    )
    drift = drift_sentence(f)
    return f"{text}; {drift}" if drift else text
