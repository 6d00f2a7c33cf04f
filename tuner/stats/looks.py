"""The looks of a final comparison: how many launches a side each takes, and its level.

A final comparison (tuner/stats/final.py) is judged at *looks*: after ``first`` launches a
side (cheap: a clear gain is confirmed at once), then at ``sized`` launches a side (the
size the cost plan worked out from the measured noise, tuner/study/facts/final_size.py),
and, only when the budget has room after an open sized look (a user resumes a study whose
answer is "not settled" with a larger ``--trials``), at further looks of half as many
launches again as the look before. The sizes of every look are fixed before the
comparison's first launch; which of them are taken depends on the data (a look is taken
only while the comparison is neither passed nor refuted) and on the budget.

The level: a union bound over every look the rule could take. Look ``j`` is judged at an
error rate ``share(j) x (1 - confidence)``, with shares that sum to at most 1 over the
infinite sequence of looks: the planned looks share three quarters (a quarter at the first,
half at the sized one; three quarters when both are one look), the looks a resume may add
share the last quarter, halving each time (1/8, 1/16, ...). So whatever the data do and
however often a study is resumed, P(any look passes a gain below the bar) is at most
``1 - confidence``. Stopping for futility (the interval falls below the bar) never raises
that chance: it only removes chances to pass. docs/statistics.md ("The final
comparison") gives the argument.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass

FINAL_POWER = 0.8
"""The power the sized look is planned at, for the target gain at its own level."""


@dataclass(frozen=True)
class LookPlan:
    """The looks one final comparison may take (see the module)."""

    first: int
    """Launches a side at the first look (stop.final_launches)."""
    sized: int
    """Launches a side the answer needs (the cost plan's sizing; the space's most when
    no plan sized it)."""
    target_gain: float | None = None
    """The gain the sized look is powered for (None: not sized from the noise)."""
    single: bool = False
    """One look only, at the whole error rate (a comparison judged once, outside a study)."""

    @property
    def planned(self) -> tuple[int, ...]:
        """The planned looks' sizes: the first, and the sized one when it is larger."""
        return (self.first,) if self.sized <= self.first else (self.first, self.sized)

    def size(self, look: int) -> int:
        """Launches a side at look ``look`` (1-based): the planned ones, then half as many
        again as the look before each time (each later look spends half the error of the
        one before, so a look must narrow the interval by a fifth or so to be worth it;
        and a budget's last launches should still hold one)."""
        planned = self.planned
        if look <= len(planned):
            return planned[look - 1]
        size = planned[-1]
        for _ in range(look - len(planned)):
            size = -(-3 * size // 2)
        return size

    def look_of(self, launches: int) -> int:
        """The look a comparison with ``launches`` a side is judged as: the first whose
        size holds them (a failed launch leaves a look short; it is judged as that look)."""
        look = 1
        while self.size(look) < launches:
            look += 1
        return look

    def share(self, look: int) -> float:
        """Look ``look``'s share of the error rate ``1 - confidence`` (see the module)."""
        if self.single:
            return 1.0 if look == 1 else 0.0
        planned = len(self.planned)
        if look <= planned:
            return (0.25, 0.5)[look - 1] if planned == 2 else 0.75
        return 0.25 / 2.0 ** (look - planned)

    def level(self, confidence: float, look: int, comparisons: int = 1) -> float:
        """The confidence look ``look`` is judged at, Bonferroni over ``comparisons``."""
        share = self.share(look)
        return 1.0 - (1.0 - confidence) * share / max(1, comparisons) if share else 1.0

    def to_json(self) -> dict[str, float | int | None]:
        return {"first": self.first, "sized": self.sized, "target_gain": self.target_gain}
