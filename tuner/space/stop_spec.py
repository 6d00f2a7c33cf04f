"""The space file's ``stop:`` and ``search:`` sections: when the search ends and what
counts as a gain, and how it proposes the next launch."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tuner.space.spec_base import StrictModel


class StopSpec(StrictModel):
    """When to stop searching, and what counts as a gain."""

    patience: int = Field(default=8, ge=1)
    min_gain: float = Field(default=0.01, ge=0)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    baseline_launches: int = Field(default=2, ge=1)
    confirmations: int = Field(default=1, ge=0)
    # While the confirmations leave the verdict open (it still looks better, but not yet
    # significantly), launch it again, up to this many confirmations in all.
    max_confirmations: int | None = Field(default=None, ge=0)
    # The futility stop (tuner/study/policy/futility.py): stop searching before the patience is
    # used up when the model gives every step from the best less than this chance of
    # beating it by min_gain. 0 turns it off.
    futility: float = Field(default=0.05, ge=0, lt=1)
    # The final comparison (tuner/study/policy/final_comparison.py): before a change is the
    # answer, it and the defaults are launched this many times each, fresh and interleaved,
    # and the answer rests on those launches alone (docs/statistics.md).
    final_launches: int = Field(default=2, ge=1, le=8)
    # ... and at most this many each at the look the cost plan sizes from the noise (the
    # launches a side that confirm the target gain four times in five), taken when the
    # first look neither passes nor refutes (tuner/stats/looks.py, docs/statistics.md).
    # The budget keeps the sized look's launches from the plan on. Default 6, 3 with
    # screening.
    final_launches_max: int | None = Field(default=None, ge=1, le=8)
    # The final comparison's confidence (two-sided; the answer needs the lower end above
    # min_gain, so a false gain is at most half of 1 - final_confidence a study). Stricter
    # than the search's own comparisons: a false gain is the one answer this tool must not
    # give, and the search's confidence only decides what to launch next.
    final_confidence: float = Field(default=0.99, gt=0.5, lt=1)

    @model_validator(mode="after")
    def _confirmation_bounds(self) -> StopSpec:
        if self.final_launches_max is not None and self.final_launches_max < self.final_launches:
            raise ValueError(
                f"final_launches_max ({self.final_launches_max}) is below final_launches "
                f"({self.final_launches}): raise it, or leave it out (6, or 3 with screening)"
            )
        if self.max_confirmations is not None and self.max_confirmations < self.confirmations:
            raise ValueError(
                f"max_confirmations ({self.max_confirmations}) is below confirmations "
                f"({self.confirmations}): raise it, or leave it out (confirmations + 2)"
            )
        return self

    @property
    def confirmation_cap(self) -> int:
        """Confirmation launches one configuration may get at most."""
        if self.max_confirmations is not None:
            return self.max_confirmations
        return self.confirmations + 2 if self.confirmations > 0 else 0


class SearchSpec(StrictModel):
    """How proposals are made (see tuner/study/policy/local_search.py)."""

    method: Literal["local", "tpe"] = "local"
    # local: change at most max_changes settings of the incumbent at a time, picked by a
    # model of each setting's effect (TPE once no neighbour is left); tpe: optuna's TPE.
    max_changes: int = Field(default=3, ge=1, le=4)
    # Failed launches teach the search (docs/search.md, "Failed launches"): what failed for
    # the settings is not launched again. false: every proposal is launched, as before (for
    # benchmarks/failure_learning.py, which measures what the learning saves).
    learn_from_failures: bool = True
