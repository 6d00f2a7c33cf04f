"""Which configuration to recommend, and a sentence saying why.

The best is the highest trusted mean; the recommendation is the simplest version of the
best (the best with settings left at their defaults, each dropped setting judged idle
where it was made: the simplification step's launches) within noise of it and less than
min_gain slower, that also beats the defaults significantly, else the defaults. Only such
a version: another configuration within noise of the best, or the best less a setting
nobody judged idle, is a slower alternative the data could not yet tell apart, not a
simplification. And within noise is not enough: at 1% noise a real 2.5% setting dropped
is often "within noise" of the best on two launches each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuner.stats.compare import Comparison, Direction, compare
from tuner.stats.estimates import ConfigEstimate
from tuner.stats.wording import faster_or_slower, percent


@dataclass(frozen=True)
class Candidate:
    """A configuration as recommend() sees it.

    ``n_changed`` counts params not at their default. ``confirmed`` marks a
    configuration whose lead survived a confirmation launch; ``label`` is how
    sentences name it ("trial 7"), the key otherwise. ``changes`` holds its settings
    that differ from the defaults (param, value); None where unknown, and then any
    configuration with fewer changes counts as simpler. ``drops_checked``: what it leaves
    at default was judged idle before it was launched (the simplification step's model),
    so it may stand in for a best it simplifies.
    """

    key: str
    estimate: ConfigEstimate
    n_changed: int
    confirmed: bool = False
    label: str | None = None
    changes: frozenset[tuple[str, str]] | None = None
    drops_checked: bool = True

    def version_of(self, other: Candidate) -> bool:
        """This is ``other`` with idle settings left at their defaults (or itself)."""
        if self.changes is None or other.changes is None:
            return True
        return self.changes <= other.changes and (self.drops_checked or self is other)


CONFIRMED = "confirmed"
"""The answer: a change, confirmed (its final comparison cleared the bar)."""
NO_GAIN = "no_gain"
"""The answer: keep the defaults; the launches support it (see ``Recommendation.verdict``)."""
NOT_SETTLED = "not_settled"
"""The answer: not known yet; a candidate whose comparison neither passed nor was refuted,
or had no room to run. Deploy the defaults until more launches settle it."""


@dataclass(frozen=True)
class Unsettled:
    """What a not-settled answer's candidate showed, and what would settle it."""

    candidate: str
    label: str
    gain: float
    """The candidate's gain over the defaults as measured (final launches, else the search's)."""
    lower: float | None
    upper: float | None
    """Its interval at ``confidence`` (None: the search's estimate, no final launches)."""
    confidence: float | None
    launches_each: int
    """Final launches a side so far (0: the comparison never ran)."""
    more_each: int
    """About how many more launches a side would settle it (the plan's next looks)."""
    why: str
    """Why it is not settled, in a clause."""
    sure: bool = True
    """Whether ``more_each`` would settle it at the gain measured (False: that gain is too
    close to the bar to say; ``more_each`` is then the next look's launches)."""


@dataclass(frozen=True)
class Recommendation:
    """best: highest trusted mean; recommended: the simplest version of the best that is
    not significantly worse than it nor min_gain slower (and, unless it is the baseline,
    significantly better than the baseline). ``equivalent`` lists the keys within noise
    of the best."""

    best: str
    recommended: str
    reason: str
    keep_defaults: bool
    equivalent: tuple[str, ...] = ()
    best_vs_baseline: Comparison | None = None
    recommended_vs_baseline: Comparison | None = None
    trailing: str | None = None
    """A simpler version of the best, within noise of it and a significant gain over the
    defaults, passed over only because it measures more than min_gain slower: more
    launches may settle whether it is as fast (tuner/study/policy/final_checks.tiebreak)."""
    verdict: str | None = None
    """CONFIRMED, NO_GAIN or NOT_SETTLED as the final comparison decided (None: derived
    from ``keep_defaults``, where no final comparison judges: see ``outcome``)."""
    unsettled: Unsettled | None = None
    """With NOT_SETTLED: the candidate, what it showed and what would settle it."""

    @property
    def outcome(self) -> str:
        """The answer's verdict: CONFIRMED, NO_GAIN or NOT_SETTLED (a not-settled answer
        keeps the defaults until settled, ``keep_defaults`` is then True too)."""
        if self.verdict is not None:
            return self.verdict
        return NO_GAIN if self.keep_defaults else CONFIRMED


def recommend(
    candidates: Sequence[Candidate],
    *,
    direction: Direction,
    min_gain: float,
    confidence: float,
    baseline_key: str,
) -> Recommendation:
    """Pick the best and the configuration to recommend, with a sentence saying why.

    Only trusted estimates compete: the baseline, confirmed configurations and any
    launched at least twice. An unconfirmed single launch is where the winner's curse
    lives (the luckiest of many draws), so it can be neither best nor recommended;
    if nothing is trusted, everything is.
    """
    if not candidates:
        raise ValueError("recommend needs at least one candidate")
    return _Judge(direction, min_gain, confidence, baseline_key).recommend(candidates)


@dataclass(frozen=True)
class _Judge:
    """The settings every comparison of one recommendation shares."""

    direction: Direction
    min_gain: float
    confidence: float
    baseline_key: str

    def versus(self, a: Candidate, b: Candidate) -> Comparison:
        return compare(
            a.estimate,
            b.estimate,
            direction=self.direction,
            min_gain=self.min_gain,
            confidence=self.confidence,
        )

    def name(self, c: Candidate) -> str:
        return "the defaults" if c.key == self.baseline_key else (c.label or c.key)

    def recommend(self, candidates: Sequence[Candidate]) -> Recommendation:
        sign = 1.0 if self.direction == "maximize" else -1.0
        trusted = [
            c
            for c in candidates
            if c.key == self.baseline_key or c.confirmed or c.estimate.n_launches >= 2
        ] or list(candidates)
        baseline = next((c for c in candidates if c.key == self.baseline_key), None)
        best = max(trusted, key=lambda c: (sign * c.estimate.mean, -c.n_changed))
        # Not significantly worse than the best: the best does not beat it.
        equivalent = [c for c in trusted if c is best or self.versus(best, c).verdict != "better"]
        best_vs_base = (
            self.versus(best, baseline) if baseline is not None and best is not baseline else None
        )
        if baseline is not None and baseline in equivalent:
            untrusted = [c for c in candidates if c not in trusted]
            return Recommendation(
                best=best.key,
                recommended=baseline.key,
                reason=self._keep_defaults(best, baseline, trusted, untrusted),
                keep_defaults=True,
                equivalent=tuple(c.key for c in equivalent),
                best_vs_baseline=best_vs_base,
            )
        # A change from the defaults must itself be a significant gain over them, not
        # only within noise of the best; the best is one (the baseline is not equivalent).
        # And it must be the best with idle settings dropped: fewer changes are worth a
        # loss within noise only where they are the winner's own, less what did nothing,
        # and where that loss measures under min_gain (what the study calls no gain).
        versions = [
            c
            for c in equivalent
            if c is not best
            and c.version_of(best)
            and (baseline is None or self.versus(c, baseline).verdict == "better")
        ]

        def simplest_first(c: Candidate) -> tuple[int, float]:
            return c.n_changed, -sign * c.estimate.mean  # ties: the better mean

        close = [c for c in versions if self.versus(best, c).gain <= self.min_gain]
        chosen = min([best, *close], key=simplest_first)
        trailing = [c for c in versions if c not in close and c.n_changed < chosen.n_changed]
        chosen_vs_base = self.versus(chosen, baseline) if baseline is not None else None
        return Recommendation(
            best=best.key,
            recommended=chosen.key,
            reason=self._change(chosen, best, equivalent, chosen_vs_base),
            keep_defaults=False,
            equivalent=tuple(c.key for c in equivalent),
            best_vs_baseline=best_vs_base,
            recommended_vs_baseline=chosen_vs_base,
            trailing=min(trailing, key=simplest_first).key if trailing else None,
        )

    def _keep_defaults(
        self,
        best: Candidate,
        baseline: Candidate,
        trusted: list[Candidate],
        untrusted: list[Candidate],
    ) -> str:
        floor = f"the {self.min_gain * 100:g}% minimum gain"
        if best is not baseline:
            cmp = self.versus(best, baseline)
            why = "within the noise" if not cmp.significant else f"less than {floor}"
            text = (
                f"keep the defaults: the best configuration, {self.name(best)}, is "
                f"{percent(cmp.gain)} ± {percent(cmp.noise_rel)} "
                f"{faster_or_slower(cmp.gain)} than the defaults, which is {why}"
            )
        else:
            others = [c for c in trusted if c is not baseline]
            if others:
                closest = max(others, key=lambda c: self.versus(c, baseline).gain)
                cmp = self.versus(closest, baseline)
                n = len(others)
                text = (
                    f"keep the defaults: no configuration beat the defaults by more than the "
                    f"noise (±{percent(cmp.noise_rel)}) and {floor} ({n} "
                    f"configuration{'s' if n != 1 else ''} compared; the closest, "
                    f"{self.name(closest)}, is {percent(cmp.gain)} {faster_or_slower(cmp.gain)})"
                )
            elif untrusted:
                n = len(untrusted)
                text = (
                    f"keep the defaults: no other configuration was confirmed ({n} launched once)"
                )
            else:
                return "keep the defaults: no other configuration was measured"
        lucky = [c for c in untrusted if self.versus(c, baseline).verdict == "better"]
        if len(lucky) == 1:
            cmp = self.versus(lucky[0], baseline)
            text += (
                f"; {self.name(lucky[0])} looked {percent(cmp.gain)} ± {percent(cmp.noise_rel)} "
                f"{faster_or_slower(cmp.gain)} in a single launch but was not launched again "
                "to confirm it"
            )
        elif lucky:
            text += (
                f"; {len(lucky)} configurations looked better in a single launch but were not "
                "launched again to confirm them"
            )
        return text

    def _change(
        self,
        chosen: Candidate,
        best: Candidate,
        equivalent: list[Candidate],
        chosen_vs_base: Comparison | None,
    ) -> str:
        def settings(c: Candidate) -> str:
            return f"{c.n_changed} setting{'s' if c.n_changed != 1 else ''} changed"

        if chosen_vs_base is not None:
            head = (
                f"{self.name(chosen)} ({settings(chosen)}) is {percent(chosen_vs_base.gain)} ± "
                f"{percent(chosen_vs_base.noise_rel)} {faster_or_slower(chosen_vs_base.gain)} "
                "than the defaults"
            )
        else:
            head = f"{self.name(chosen)} ({settings(chosen)}) has the best estimate"
        if chosen is not best:
            cmp = self.versus(best, chosen)
            return (
                f"{head}, and within noise of the best, {self.name(best)} ({settings(best)}; "
                f"{percent(cmp.gain)} ± {percent(cmp.noise_rel)} "
                f"{faster_or_slower(cmp.gain)} than it): fewer changes win"
            )
        rivals = [c for c in equivalent if c is not best]
        if not rivals:
            return f"{head}; no other configuration is within noise of it"
        n = len(rivals)
        return (
            f"{head}; {n} other configuration{'s are' if n != 1 else ' is'} within noise of "
            f"it, none a version of it with fewer changes, less than {self.min_gain * 100:g}% "
            "slower and significantly faster than the defaults"
        )
