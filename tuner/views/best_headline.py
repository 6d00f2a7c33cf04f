"""The verdict in words on each surface: `tuner best`'s line of the answer, the comment
of a deployment format, `tuner report`'s badge (the data: tuner/views/best_verdict.py).

Confirmed, no gain (keep the defaults, and what could still hide) and not settled (deploy
the defaults until more launches settle it, and the run that would) each read as
themselves: a not-settled answer never says "keep the defaults" as if for good.
"""

from __future__ import annotations

from tuner import stats
from tuner.views.best import BestReport
from tuner.views.best_verdict import LABELS


def _after(prefix: str, text: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text


def no_gain_text(report: BestReport) -> str:
    """'keep the defaults: <why>; no configuration tried beats them by more than X% (...)':
    the recommendation's reason and what could still hide, one sentence."""
    rec = report.recommended
    reason = _after("keep the defaults: ", (rec.reason if rec is not None else None) or "")
    missed = report.could_have_missed
    hide = missed.clause if missed is not None and missed.gain_upper is not None else None
    parts = [p for p in (reason, hide) if p]
    return "keep the defaults: " + ("; ".join(parts) or "nothing beats them")


def headline(report: BestReport) -> str:
    """`tuner best`'s line of the answer: 'Recommendation: <verdict> — <one sentence>'."""
    rec = report.recommended
    reason = (rec.reason if rec is not None else None) or ""
    if report.pareto is not None:
        reason = report.pareto.reason
    verdict = report.verdict
    if verdict == stats.NOT_SETTLED and report.not_settled is not None:
        text = report.not_settled.sentence
    elif verdict == stats.NO_GAIN and report.pareto is None:
        text = no_gain_text(report)
    else:
        text = reason
    label = LABELS.get(verdict or "")
    return f"Recommendation: {label} — {text}" if label else f"Recommendation: {text}"


def deploy_notice(report: BestReport, which: str) -> list[str]:
    """What a deployment format says besides the settings when the answer is not a
    confirmed change (comments in env, systemd and vllm-config; stderr for args and
    docker): keep the defaults, or not settled and how to settle it. Empty when confirmed."""
    verdict = report.verdict
    lines = []
    if verdict == stats.NOT_SETTLED:
        u = report.not_settled
        if u is None:
            lines.append("tuner: not settled: deploy the defaults until it is")
        else:
            lines.append(
                f"tuner: not settled: deploy the defaults until {u.label}, {u.shown}, is "
                f"settled; resume with `{u.resume}` (about {u.more_each} more "
                f"launch{'es' if u.more_each != 1 else ''} a side)"
            )
    elif verdict == stats.NO_GAIN:
        lines.append(
            "tuner: keep the defaults (no gain): "
            + _after("keep the defaults: ", no_gain_text(report))
        )
    if lines and which == "best":
        lines.append(
            "tuner: below are the best measured settings (--which best), not the answer: "
            "the answer is the defaults"
        )
    return lines


def badge(report: BestReport) -> str:
    """`tuner report`'s badge: 'Confirmed', 'No gain — keep the defaults', or
    'Not settled — about N more launches a side' (empty without an answer)."""
    if report.verdict == stats.CONFIRMED:
        return "Confirmed"
    if report.verdict == stats.NO_GAIN:
        return "No gain — keep the defaults"
    if report.verdict == stats.NOT_SETTLED:
        u = report.not_settled
        if u is None:
            return "Not settled — keep the defaults until it is"
        plural = "es" if u.more_each != 1 else ""
        return f"Not settled — about {u.more_each} more launch{plural} a side"
    return ""
