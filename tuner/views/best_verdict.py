"""The answer's verdict as `tuner best`, its JSON, its deployment formats and `tuner report`
say it: confirmed, no gain (keep the defaults) or not settled (deploy the defaults until
more launches settle it), never one read as another.

The verdict is the recommendation's (``stats.Recommendation.outcome``, decided by the final
comparison: tuner/study/facts/final.py). A not-settled answer names its candidate, its gain
and interval, and what would settle it: about ``more_each`` more launches a side, which a
resumed `tuner run` with ``--trials`` = the study's full launches so far + 2 x that makes.
How each surface says it: tuner/views/best_headline.py.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any

from tuner import stats
from tuner.secrets import safe_url
from tuner.storage import DEFAULT_STORAGE

VERDICTS = (stats.CONFIRMED, stats.NO_GAIN, stats.NOT_SETTLED)
"""The ``verdict`` of `tuner best --format json`."""
LABELS = {
    stats.CONFIRMED: "confirmed",
    stats.NO_GAIN: "no gain",
    stats.NOT_SETTLED: "not settled",
}
SPACE_FILE = "<space file>"
"""The resume command's --space where the study did not record its space file."""


@dataclass(frozen=True)
class NotSettled:
    """A not-settled answer: its candidate, what it showed, and what would settle it."""

    trial: int | None
    """The candidate's first trial."""
    config: str
    label: str
    gain: float
    """Signed: positive is better (final launches, else the search's estimate)."""
    ci_low: float | None
    ci_high: float | None
    confidence: float | None
    """The interval's level (None with ``ci_low``/``ci_high``: no final launches yet)."""
    launches_each: int
    """Final launches a side so far (0: the final comparison never ran)."""
    more_each: int
    """About how many more launches a side would settle it (or the next look's, when the
    gain measured is too close to the bar to say: ``sure`` False)."""
    trials_to_resume: int
    """``--trials`` of the resumed run: the study's full launches so far + 2 x more_each."""
    resume: str
    """The command that resumes the study with them."""
    why: str
    sure: bool = True

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def shown(self) -> str:
        """'+1.4% (99.75% interval -12.3% to +15.1%) against the defaults', or the search's
        gain alone ('+8.5% against the defaults in the search')."""
        if self.ci_low is None or self.ci_high is None or self.confidence is None:
            return f"{self.gain * 100:+.1f}% against the defaults in the search"
        return (
            f"{self.gain * 100:+.1f}% ({self.confidence * 100:g}% interval "
            f"{self.ci_low * 100:+.1f}% to {self.ci_high * 100:+.1f}%) against the defaults"
        )

    @property
    def settle(self) -> str:
        """'about 4 more launches a side would settle it; `tuner run ...` resumes with them'."""
        plural = "es" if self.more_each != 1 else ""
        more = f"{self.more_each} more launch{plural} a side"
        if not self.sure:
            return (
                "the gain measured is too close to the bar to say how many launches would "
                f"settle it; the next look takes {more}: `{self.resume}` resumes with them"
            )
        return f"about {more} would settle it; `{self.resume}` resumes with them"

    @property
    def sentence(self) -> str:
        """The answer in one sentence (after 'not settled: ')."""
        return (
            f"deploy the defaults until it is: {self.label} is {self.shown}; {self.why}; "
            f"{self.settle}"
        )


def not_settled(
    unsettled: stats.Unsettled,
    *,
    trial: int | None,
    full_launches: int,
    space_path: str | None,
    storage: str,
) -> NotSettled:
    """The view of ``unsettled`` with the run that would settle it."""
    trials = full_launches + 2 * unsettled.more_each
    command = f"tuner run --space {shlex.quote(space_path) if space_path else SPACE_FILE}"
    command += f" --trials {trials}"
    if storage != DEFAULT_STORAGE:
        command += f" --storage {shlex.quote(safe_url(storage))}"
    return NotSettled(
        trial=trial,
        config=unsettled.candidate,
        label=unsettled.label,
        gain=unsettled.gain,
        ci_low=unsettled.lower,
        ci_high=unsettled.upper,
        confidence=unsettled.confidence,
        launches_each=unsettled.launches_each,
        more_each=unsettled.more_each,
        trials_to_resume=trials,
        resume=command,
        why=unsettled.why,
        sure=unsettled.sure,
    )
