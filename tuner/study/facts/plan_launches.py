"""The cost plan's launches to a verdict: the quickest and the typical, by kind with screening.

The quickest verdict keeps the defaults: the baseline launches and the patience of search
trials without a gain. A typical one finds one gain: the search trials to it (half the
values to try), its confirmations, a new patience after it, the simpler form's launches
and the final comparison's (both sides of its sized look). With a ``screening:`` section
the search's launches are screening ones and the rest full loads (``ScreeningPlan``), set
beside the same study without screening, every launch a full load. The arithmetic only:
tuner/study/facts/plan.py puts it in the plan, tuner/views/plan_text.py says it.

The hours count the compile cache: a configuration's first launch compiles, its later
ones read what that one compiled, at either fidelity (tuner/study/facts/load_costs.py,
``CompileReuse``). Every full launch of a screening study is of a configuration a screening
launch warmed (the defaults, the gain the search found), so only the first launches of
configurations pay the compile: the defaults' first, each search launch, the simpler form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuner.space.spec import SpaceSpec
from tuner.study.attrs import FULL, SCREEN
from tuner.study.effects.model import levels
from tuner.study.facts.launch_times import LaunchCosts, LaunchTimes
from tuner.study.facts.load_costs import CompileReuse


@dataclass(frozen=True)
class VerdictLaunches:
    """The launches to a verdict of one study (see the module)."""

    values: int
    """Setting values the search tries (every non-default level of every param)."""
    to_try_all: int
    """Search trials to try every value once (``search.max_changes`` a trial)."""
    quickest: int
    typical: int
    parts: str
    """``typical`` in words, part by part."""
    typical_futile: int | None
    """``typical`` when the futility stop ends the search after the gain; None: it is off."""
    screening: ScreeningPlan | None


def verdict_launches(
    spec: SpaceSpec,
    final_size: int,
    futility_min_trials: int | None,
    times: LaunchTimes,
    costs: LaunchCosts | None,
) -> VerdictLaunches:
    """The launches to a verdict (see the module); ``final_size``: the final comparison's
    launches, both sides."""
    stop = spec.stop
    candidate, baseline = 1 + stop.confirmations, stop.baseline_launches
    values = sum(len(levels(p)) - 1 for p in spec.params.values())
    per_launch = max(1, spec.search.max_changes)
    to_try_all = -(-values // per_launch) if values else 0
    patience = spec.search_patience
    to_gain = max(1, -(-to_try_all // 2))
    full_baselines = spec.screening.baseline_launches if spec.screening is not None else 0
    quickest = baseline + full_baselines + patience
    search = to_gain + stop.confirmations + patience + candidate
    typical = baseline + full_baselines + search + final_size
    typical_futile = None
    if futility_min_trials is not None:
        after = min(patience, futility_min_trials)
        typical_futile = typical - patience + after
    full_part = f"{full_baselines} full baseline + " if full_baselines else ""
    parts = (
        f"{baseline} baseline + {full_part}~{to_gain} search to it + {stop.confirmations} to "
        f"confirm it + {patience} search after it + {candidate} for the simpler form "
        f"+ {final_size} for the final comparison"
    )
    screening = None
    if spec.screening is not None:
        plain = baseline + to_gain + stop.confirmations + stop.patience + candidate + final_size
        # Configurations first launched: the defaults, each search trial, the simpler form.
        screening = ScreeningPlan(
            full=costs.full if costs is not None else times,
            screen=costs.screen if costs is not None else LaunchTimes(0, None, None),
            keep_defaults=(baseline + patience, full_baselines),
            one_gain=(baseline + search, full_baselines + final_size),
            without=(baseline + stop.patience, plain),
            max_launches=spec.screening.max_launches,
            firsts=(1 + patience, 1 + to_gain + patience + 1),
            firsts_without=(1 + stop.patience, 1 + to_gain + stop.patience + 1),
            compile=costs.loads.compile if costs is not None else CompileReuse(),
        )
    return VerdictLaunches(values, to_try_all, quickest, typical, parts, typical_futile, screening)


@dataclass(frozen=True)
class ScreeningPlan:
    """The launches of a screening study by kind, and its hours against the same study
    without screening (every launch a full load, ``stop.patience``)."""

    full: LaunchTimes
    screen: LaunchTimes
    keep_defaults: tuple[int, int]
    """(screening, full) launches to keep the defaults."""
    one_gain: tuple[int, int]
    """(screening, full) launches with one gain found."""
    without: tuple[int, int]
    """Full launches without screening: to keep the defaults, with one gain found."""
    max_launches: int
    firsts: tuple[int, int] = (0, 0)
    """Configurations first launched (each compiles): to keep the defaults, with one gain."""
    firsts_without: tuple[int, int] = (0, 0)
    """The same without screening (its own patience)."""
    compile: CompileReuse = CompileReuse()

    def again_s(self, fidelity: str) -> float | None:
        """A launch of a configuration launched before: the measured mean of ``fidelity``
        less the extra compile of the first launches among those measured."""
        times = self.screen if fidelity == SCREEN else self.full
        per, saved = times.per_launch_s, self.compile.saved_s
        if per is None or not saved:
            return per
        return per - self.compile.first_share(fidelity) * saved

    def hours(self, launches: tuple[int, int], firsts: int = 0) -> float | None:
        """Hours of (screening, full) launches, ``firsts`` of them first launches of their
        configuration's compile cache (each adds the compile a warm cache saves)."""
        screen, full = self.again_s(SCREEN), self.again_s(FULL)
        if full is None or (screen is None and launches[0]):
            return None
        seconds = launches[0] * (screen or 0.0) + launches[1] * full
        return (seconds + firsts * (self.compile.saved_s or 0.0)) / 3600

    def hours_without(self, launches: int, firsts: int = 0) -> float | None:
        return self.hours((0, launches), firsts)

    @property
    def keep_hours(self) -> float | None:
        """Hours to keep the defaults. Where screening keys its compile cache apart
        (CompileReuse.screening_parts) the defaults' full launches compile once more."""
        parted = 1 if self.compile.screening_parts else 0
        return self.hours(self.keep_defaults, self.firsts[0] + parted)

    @property
    def gain_hours(self) -> float | None:
        """Hours with one gain found (the defaults and the gain compile again when parted)."""
        parted = 2 if self.compile.screening_parts else 0
        return self.hours(self.one_gain, self.firsts[1] + parted)

    @property
    def keep_hours_without(self) -> float | None:
        return self.hours_without(self.without[0], self.firsts_without[0])

    @property
    def gain_hours_without(self) -> float | None:
        return self.hours_without(self.without[1], self.firsts_without[1])

    def to_json(self) -> dict[str, Any]:
        def times(t: LaunchTimes) -> dict[str, Any]:
            return {
                "to_healthy": t.healthy_s,
                "per_launch": t.per_launch_s,
                "launches_timed": t.launches,
            }

        return {
            "seconds": {"full": times(self.full), "screen": times(self.screen)},
            "launches": {
                "keep_defaults": {"screen": self.keep_defaults[0], "full": self.keep_defaults[1]},
                "one_gain": {"screen": self.one_gain[0], "full": self.one_gain[1]},
                "without_screening": {
                    "keep_defaults": self.without[0],
                    "one_gain": self.without[1],
                },
                "max_screening": self.max_launches,
            },
            "first_launches": {
                "keep_defaults": self.firsts[0],
                "one_gain": self.firsts[1],
                "without_screening": {
                    "keep_defaults": self.firsts_without[0],
                    "one_gain": self.firsts_without[1],
                },
            },
            "compile": self.compile.to_json(),
            "hours": {
                "keep_defaults": self.keep_hours,
                "one_gain": self.gain_hours,
                "without_screening": {
                    "keep_defaults": self.keep_hours_without,
                    "one_gain": self.gain_hours_without,
                },
            },
        }
