"""`tuner best`'s screening part: what the screening launches searched, what full ones decided.

With a ``screening:`` section the search's figures (the table, the best, the search's
noise) come from screening launches; the answer rests on full launches only (the final
comparison's, tuner/study/facts/final.py). This says which is which, the bias between the
fidelities and how well screening ranked what full launches measured
(tuner/study/facts/fidelity.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuner.space.screening import unscreenable
from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.facts.fidelity import FidelityFacts


@dataclass(frozen=True)
class ScreeningAnswer:
    """The two fidelities of a screening study (see the module)."""

    adds: str
    """What a screening launch adds, as a command-line and env text."""
    facts: FidelityFacts
    unscreened: dict[str, str]
    """Params launched at full fidelity only, with the reason."""

    def lines(self) -> list[str]:
        f = self.facts
        out = [
            f"Screening: {f.screen_launches} screening launch"
            f"{'es' if f.screen_launches != 1 else ''} ({self.adds}) searched; "
            f"{f.full_launches} full launch{'es' if f.full_launches != 1 else ''} "
            "decided. The table's figures are screening measurements; the answer rests on "
            "full launches only."
        ]
        bias = f.bias_sentence()
        if bias is not None:
            out.append(f"Screening bias: {bias}.")
        out.append(f"Screening ranks: {f.ranks.sentence()}.")
        if self.unscreened:
            named = ", ".join(f"{k} ({v})" for k, v in self.unscreened.items())
            out.append(f"Never screened (full launches only): {named}.")
        return out

    def to_json(self) -> dict[str, Any]:
        return {**self.facts.to_json(), "adds": self.adds, "never_screened": self.unscreened}


def screening_answer(facts: StudyAnalysis) -> ScreeningAnswer | None:
    """The screening part of the answer; None without a ``screening:`` section."""
    spec = facts.space.spec
    if spec.screening is None or facts.fidelity is None:
        return None
    return ScreeningAnswer(
        adds=f"{spec.screening.adds_text()} added",
        facts=facts.fidelity,
        unscreened=unscreenable(spec.params),
    )
