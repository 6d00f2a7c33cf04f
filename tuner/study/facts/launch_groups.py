"""The launches of a study grouped: by configuration, and by what each decides.

A search launch selects: it joins its configuration's estimate (``ConfigResult``) and
the model's data. A final launch decides: it is kept apart, in its comparison's block
(tuner/study/facts/final.py), so the search never sees it. With a ``screening:`` section
the full launches of the defaults and of the final comparisons decide too (the drift,
the answer), while a full launch of a setting screening cannot judge is searched on the
screening scale once the bias between the fidelities is known
(tuner/study/facts/fidelity.py). tuner/study/facts/analysis.py ``analyze`` asks this
module, then judges the groups. Pure: the stored launches in, estimates out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from tuner import stats
from tuner.space.settings import changed_from_defaults, is_default
from tuner.space.spec import Scalar, SpaceSpec
from tuner.storage import LaunchRow, LaunchStatus
from tuner.study import attrs
from tuner.study.facts import final
from tuner.study.facts.fidelity import FidelityFacts, fidelity_facts


@dataclass(frozen=True)
class ConfigResult:
    """One configuration and every completed launch of it."""

    config_hash: str
    params: dict[str, Scalar]
    trials: tuple[int, ...]
    launches: tuple[stats.LaunchEstimate, ...]
    estimate: stats.ConfigEstimate
    is_baseline: bool
    roles: frozenset[str] = frozenset()  # of its launches (attrs.SEARCH, attrs.SIMPLIFY, ...)

    @property
    def n_changed(self) -> int:
        return len(self.changed)

    @property
    def changed(self) -> dict[str, Scalar]:
        return changed_from_defaults(self.params)


@dataclass(frozen=True)
class LaunchGroups:
    """What ``group_launches`` found (see the module)."""

    configs: dict[str, ConfigResult]
    noise: stats.NoiseEstimate | None
    counts: dict[str, int]
    """Launches by status, every one counted (failed ones too)."""
    measured: tuple[tuple[dict[str, Scalar], stats.LaunchEstimate], ...]
    """Every launch with a measurement, pruned ones included: what the search model fits."""
    groups: dict[str, list[LaunchRow]]
    """The completed launches of each configuration the search sees."""
    final_blocks: tuple[final.FinalBlock, ...]
    final_noise: stats.FinalNoise | None
    fidelity: FidelityFacts | None
    full_opening: tuple[stats.LaunchEstimate, ...] | None


def group_launches(rows: Sequence[LaunchRow], spec: SpaceSpec) -> LaunchGroups:
    """The study's launches grouped and estimated (see the module)."""
    screening = spec.screening is not None
    counts: dict[str, int] = defaultdict(int)
    groups: dict[str, list[LaunchRow]] = defaultdict(list)
    estimates: dict[str, list[stats.LaunchEstimate]] = defaultdict(list)
    measured = []
    final_rows: list[tuple[LaunchRow, stats.LaunchEstimate]] = []
    full: dict[str, list[stats.LaunchEstimate]] = defaultdict(list)
    """With screening: every complete full launch, by configuration, unscaled."""
    deciding: dict[str, list[stats.LaunchEstimate]] = defaultdict(list)
    """With screening: the full launches of the defaults and the final comparisons."""
    full_opening: list[stats.LaunchEstimate] = []
    searched_full: list[LaunchRow] = []
    """With screening: full launches of configurations screening cannot judge, searched
    on the screening scale once it is known."""
    for row in rows:
        counts[row.status] += 1
        if row.status not in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED):
            continue
        if not row.objective_rounds:
            continue
        estimate = stats.launch_estimate(row.objective_rounds)
        complete = row.status == LaunchStatus.COMPLETE
        if screening and (row.fidelity or attrs.FULL) == attrs.FULL:
            if complete:
                full[row.config_hash].append(estimate)
            if row.role in (attrs.FINAL, attrs.BASELINE):
                if complete:
                    deciding[row.config_hash].append(estimate)
                    if row.role == attrs.BASELINE:
                        full_opening.append(estimate)
                    else:
                        final_rows.append((row, estimate))
                continue  # the full defaults and final launches decide; they never search
            searched_full.append(row)
            continue
        if row.role == attrs.FINAL:
            if complete:
                final_rows.append((row, estimate))
            continue  # the search never sees a final launch: it decides, it does not select
        measured.append((dict(row.params), estimate))
        if complete:
            groups[row.config_hash].append(row)
            estimates[row.config_hash].append(estimate)
    screened = {key: tuple(group) for key, group in estimates.items()}
    noise = stats.between_launch_variance(screened.values())
    fidelity = None
    if screening:
        baseline_key = next(
            (k for k, g in groups.items() if all(is_default(v) for v in g[0].params.values())),
            None,
        )
        fidelity = fidelity_facts(
            screened,
            full,
            baseline_key=baseline_key,
            noise=noise,
            confidence=spec.stop.confidence,
        )
        for row in searched_full:  # on the screening scale, beside the screening launches
            scaled = stats.launch_estimate([v * fidelity.scale for v in row.objective_rounds or ()])
            measured.append((dict(row.params), scaled))
            if row.status == LaunchStatus.COMPLETE:
                groups[row.config_hash].append(row)
                estimates[row.config_hash].append(scaled)
        if searched_full:
            noise = stats.between_launch_variance([tuple(g) for g in estimates.values()])
    launches = {key: tuple(group) for key, group in estimates.items()}
    blocks = final.blocks(final_rows)
    configs = {}
    for key, group in groups.items():
        params = dict(group[0].params)
        configs[key] = ConfigResult(
            config_hash=key,
            params=params,
            trials=tuple(r.trial_number for r in group if r.trial_number is not None),
            launches=launches[key],
            estimate=stats.config_estimate(launches[key], noise),
            is_baseline=all(is_default(v) for v in params.values()),
            roles=frozenset(r.role for r in group if r.role),
        )
    if screening:
        # Pooled within each fidelity: the bias between them is not noise.
        keyed = [*launches.values(), *(tuple(v) for v in deciding.values())]
        final_noise = stats.final_noise(keyed) if blocks else None
    else:
        final_noise = final.noise_over(launches, final_rows) if blocks else None
    return LaunchGroups(
        configs=configs,
        noise=noise,
        counts=dict(counts),
        measured=tuple(measured),
        groups=groups,
        final_blocks=blocks,
        final_noise=final_noise,
        fidelity=fidelity,
        full_opening=tuple(full_opening) if screening else None,
    )
