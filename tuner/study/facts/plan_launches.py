"""The cost plan's launches to a verdict: the quickest and the typical, by kind with screening.

The quickest verdict keeps the defaults: the baseline launches and the patience of search
trials without a gain. A typical one finds one gain: the search trials to it (half the
values to try), its confirmations, a new patience after it, the simpler form's launches
and the final comparison's (both sides of its sized look). With a ``screening:`` section
the search's launches are screening ones and the rest full loads (``ScreeningPlan``), set
beside the same study without screening, every launch a full load. The arithmetic only:
tuner/study/facts/plan.py puts it in the plan, tuner/views/plan_text.py says it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuner.space.spec import SpaceSpec
from tuner.study.effects.model import levels
from tuner.study.facts.launch_times import LaunchCosts, LaunchTimes


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
        screening = ScreeningPlan(
            full=costs.full if costs is not None else times,
            screen=costs.screen if costs is not None else LaunchTimes(0, None, None),
            keep_defaults=(baseline + patience, full_baselines),
            one_gain=(baseline + search, full_baselines + final_size),
            without=(baseline + stop.patience, plain),
            max_launches=spec.screening.max_launches,
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

    def hours(self, launches: tuple[int, int]) -> float | None:
        screen, full = self.screen.per_launch_s, self.full.per_launch_s
        if full is None or (screen is None and launches[0]):
            return None
        return (launches[0] * (screen or 0.0) + launches[1] * full) / 3600

    def hours_without(self, launches: int) -> float | None:
        full = self.full.per_launch_s
        return None if full is None else launches * full / 3600

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
            "hours": {
                "keep_defaults": self.hours(self.keep_defaults),
                "one_gain": self.hours(self.one_gain),
                "without_screening": {
                    "keep_defaults": self.hours_without(self.without[0]),
                    "one_gain": self.hours_without(self.without[1]),
                },
            },
        }
