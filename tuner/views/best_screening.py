"""`tuner best`'s screening part: what the screening launches searched, what full ones decided.

With a ``screening:`` section the search's figures (the table, the best, the search's
noise) come from screening launches; the answer rests on full launches only (the final
comparison's, tuner/study/facts/final.py). This says which is which, the bias between the
fidelities and how well screening ranked what full launches measured
(tuner/study/facts/fidelity.py), and whether the screening launches simulated a MoE's
routing (``VLLM_MOE_ROUTING_SIMULATION_STRATEGY`` in their stored env, as launched:
tuner/check/moe_routing.py), which the rank agreement is read beside.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tuner.space.screening import MOE_ROUTING_ENV, unscreenable
from tuner.storage import LaunchRow
from tuner.study.attrs import SCREEN
from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.facts.fidelity import FidelityFacts


@dataclass(frozen=True)
class ScreeningRouting:
    """How the screening launches routed a MoE's tokens, from their stored env."""

    launches: int
    """Screening launches started."""
    strategies: dict[str, int]
    """Each value of the variable those launches had, and how many had it."""

    def sentence(self) -> str:
        n = self.launches
        simulated = sum(self.strategies.values())
        if simulated == 0:
            return (
                f"no screening launch set {MOE_ROUTING_ENV}: a MoE model's random weights "
                "routed their tokens, unlike its trained router (screening.moe_routing)"
            )
        values = ", ".join(f"{MOE_ROUTING_ENV}={v}" for v in self.strategies)
        which = "all" if simulated == n else f"{simulated} of"
        return (
            f"{which} {n} screening launch{'es' if n != 1 else ''} ran with {values}: "
            "vLLM drew a MoE's experts as a trained router spreads them, on average"
        )

    def to_json(self) -> dict[str, Any]:
        return {"launches": self.launches, "strategies": dict(self.strategies)}


@dataclass(frozen=True)
class ScreeningAnswer:
    """The two fidelities of a screening study (see the module)."""

    adds: str
    """What a screening launch adds, as a command-line and env text."""
    facts: FidelityFacts
    unscreened: dict[str, str]
    """Params launched at full fidelity only, with the reason."""
    routing: ScreeningRouting = field(default_factory=lambda: ScreeningRouting(0, {}))
    """How the screening launches routed a MoE's tokens (none counted: no line)."""

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
        if self.routing.launches:
            out.append(f"Screening routing: {self.routing.sentence()}.")
        if self.unscreened:
            named = ", ".join(f"{k} ({v})" for k, v in self.unscreened.items())
            out.append(f"Never screened (full launches only): {named}.")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            **self.facts.to_json(),
            "adds": self.adds,
            "never_screened": self.unscreened,
            "moe_routing": self.routing.to_json(),
        }


def screening_routing(launches: Iterable[LaunchRow]) -> ScreeningRouting:
    """Count the screening launches and the routing strategy each was started with."""
    screen = [row for row in launches if row.fidelity == SCREEN]
    found = Counter(row.env[MOE_ROUTING_ENV] for row in screen if MOE_ROUTING_ENV in row.env)
    return ScreeningRouting(len(screen), dict(found))


def screening_answer(
    facts: StudyAnalysis, launches: Iterable[LaunchRow] = ()
) -> ScreeningAnswer | None:
    """The screening part of the answer (``launches``: the study's, for their routing);
    None without a ``screening:`` section."""
    spec = facts.space.spec
    if spec.screening is None or facts.fidelity is None:
        return None
    return ScreeningAnswer(
        adds=f"{spec.screening.adds_text()} added",
        facts=facts.fidelity,
        unscreened=unscreenable(spec.params),
        routing=screening_routing(launches),
    )
