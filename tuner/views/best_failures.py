"""What the study's failed launches were and taught, as `tuner trials`, `tuner best` and the
report say it: the failures by cause, then each setting no longer launched and why.

The causes are the launcher's (tuner/launcher/failure_cause.py); what they refuse is the
search's rule (tuner/study/policy/failed_before.py, docs/search.md "Failed launches"), read
for full launches, the ones an answer rests on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuner.launcher.failure_cause import blame, words
from tuner.space.spec import SpaceSpec
from tuner.study.policy.failed_before import NO_LESSONS, label, lessons
from tuner.study.state import TrialView


@dataclass(frozen=True)
class FailuresAnswer:
    """The failed launches by cause, and the refusals they made."""

    causes: tuple[tuple[str, int], ...]
    """Each cause with its failed launches, the most frequent first."""
    refused: tuple[str, ...]
    """What is not launched again, one sentence each."""
    left_out: tuple[str, ...]
    """Values the local search no longer proposes though they are not refused."""
    learning: bool
    """``search.learn_from_failures``: off, nothing is refused."""

    def lines(self) -> list[str]:
        total = sum(n for _, n in self.causes)
        counted = ", ".join(
            f"{n} {words(c)}" + ("" if blame(c) == "settings" else f" ({_blame_words(c)})")
            for c, n in self.causes
        )
        out = [f"Failed launches: {total} ({counted})."]
        if not self.learning:
            out.append("search.learn_from_failures is false: no setting was refused for them.")
        out += [f"Learned: {sentence}." for sentence in self.refused]
        out += [f"Left out: {sentence}." for sentence in self.left_out]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "causes": dict(self.causes),
            "refused": list(self.refused),
            "left_out": list(self.left_out),
            "learn_from_failures": self.learning,
        }


def failures_answer(trials: Sequence[TrialView], spec: SpaceSpec) -> FailuresAnswer | None:
    """The study's failed launches and what they taught (None: none failed)."""
    failed = [t for t in trials if t.state == "FAIL" and t.launched and t.cause]
    if not failed:
        return None
    counts = Counter(str(t.cause) for t in failed)
    learning = spec.search.learn_from_failures
    found = lessons(trials) if learning else NO_LESSONS
    return FailuresAnswer(
        causes=tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        refused=tuple(r.sentence() for r in found.refused),
        left_out=tuple(
            f"{label([s.value])} failed in trial {s.trial} ({words(s.cause)}) beside settings "
            "that started since: the local search no longer proposes it; not refused, since "
            "two settings may fail only together"
            for s in found.suspects
            if s.last and found.refusal(dict([s.value])) is None
        ),
        learning=learning,
    )


def _blame_words(cause: str) -> str:
    if blame(cause) == "retry":
        return "counted once it failed again"
    return "not counted against the settings"
