"""What a study's launches say so far: per-configuration estimates, noise, best, recommendation.

Reads the stored launches (never optuna's ``best_trial``: a configuration may be
launched several times and each launch is its own optuna trial) and applies the
pure statistics of tuner/stats/. The policy (tuner/study/policy/) reads it to decide what
to confirm, whether a gain is real and when to stop; `tuner best` reads it for the answer.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from tuner import stats
from tuner.space.objectives import is_multi_objective, study_objectives
from tuner.space.settings import canonical_value, changed_from_defaults, is_default
from tuner.space.spec import Scalar, Space
from tuner.stats.looks import LookPlan
from tuner.storage import LaunchRow, LaunchStatus, Store
from tuner.study import attrs
from tuner.study.effects.model import Observation
from tuner.study.facts import feasibility, final
from tuner.study.facts.fidelity import FidelityFacts, fidelity_facts
from tuner.study.facts.final_size import default_looks
from tuner.study.facts.objective_values import ObjectiveEstimates, estimate_objectives


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
class StudyAnalysis:
    """A snapshot of the study, recomputed from the store after every trial."""

    space: Space
    configs: dict[str, ConfigResult]
    noise: stats.NoiseEstimate | None
    launch_counts: dict[str, int] = field(default_factory=dict)
    measured: tuple[tuple[dict[str, Scalar], stats.LaunchEstimate], ...] = ()
    """Every launch with a measurement, pruned ones included: what the search model fits."""
    limit_checks: dict[str, feasibility.Feasibility] = field(default_factory=dict)
    """Each configuration against the space's ``objective.subject_to``; empty without limits."""
    objective_estimates: ObjectiveEstimates | None = None
    """With several objectives (``objectives:``), each configuration on every one of them
    (tuner/study/facts/pareto.py judges them); None with one."""
    final_blocks: tuple[final.FinalBlock, ...] = ()
    """The final comparisons' launches, kept apart from ``configs`` (tuner/study/facts/
    final.py): the search never sees them, the answer rests on them."""
    final_noise: stats.FinalNoise | None = None
    """The between-launch noise over every launch, final ones included, measured and shrunk."""
    fidelity: FidelityFacts | None = None
    """With a ``screening:`` section: the bias between the fidelities and how well screening
    ranks (tuner/study/facts/fidelity.py); None without one. ``configs`` then holds the
    screening launches (and, on that scale, the full ones screening cannot judge)."""
    full_opening: tuple[stats.LaunchEstimate, ...] | None = None
    """With screening: the opening's full launches of the defaults, what the final
    comparisons' drift is measured against (the screening baseline is another fidelity)."""
    looks: LookPlan | None = None
    """The final comparison's looks as the cost plan sized them (the study's state,
    ``with_looks``); None: the space's (tuner/study/facts/final_size.default_looks)."""

    def with_looks(self, looks: LookPlan | None) -> StudyAnalysis:
        """These facts judged with the study's sized looks (kept when None)."""
        if looks is None or looks == self.looks:
            return self
        return dataclasses.replace(self, looks=looks)

    @property
    def look_plan(self) -> LookPlan:
        """The looks a final comparison of this study takes."""
        return self.looks if self.looks is not None else default_looks(self.space.spec)

    @property
    def direction(self) -> stats.Direction:
        return self.space.spec.direction

    @property
    def baseline(self) -> ConfigResult | None:
        return next((c for c in self.configs.values() if c.is_baseline), None)

    def confirmed(self, config: ConfigResult) -> bool:
        """Trusted enough to be the best: the baseline, or launched 1 + confirmations times."""
        return config.is_baseline or len(config.launches) >= 1 + self.space.spec.stop.confirmations

    def limit_status(self, config: ConfigResult) -> feasibility.LimitStatus:
        """``feasible`` (always, without limits), ``infeasible`` or ``uncertain``."""
        judged = self.limit_checks.get(config.config_hash)
        return judged.status if judged is not None else "feasible"

    def eligible(self, config: ConfigResult) -> bool:
        """May be the best or the recommendation: meets every limit beyond noise."""
        return self.limit_status(config) == "feasible"

    def eligible_hash(self, config_hash: str) -> bool:
        config = self.configs.get(config_hash)
        return config is None or self.eligible(config)

    @property
    def best(self) -> ConfigResult | None:
        """The confirmed configuration with the best mean, among those meeting the limits."""
        trusted = [c for c in self.configs.values() if self.confirmed(c) and self.eligible(c)]
        if not trusted:
            return None
        sign = 1.0 if self.direction == "maximize" else -1.0
        return max(trusted, key=lambda c: sign * c.estimate.mean)

    def recommendation(self) -> stats.Recommendation | None:
        """The answer: the search's candidate only where a final comparison on fresh
        launches confirms it (tuner/study/facts/final.py); else the defaults."""
        baseline = self.baseline
        candidate = self.candidate()
        if baseline is not None and not self.eligible(baseline):
            # The defaults break a limit: the answer is what meets it (the limits' own test,
            # docs/statistics.md "Limits"), not a gain over them to confirm.
            return candidate
        return final.answer(
            candidate,
            self.final_comparisons(),
            baseline_key=baseline.config_hash if baseline is not None else None,
            name=lambda key: self._label(key),
            n_changed=lambda key: self.configs[key].n_changed if key in self.configs else 0,
            looks=self.look_plan,
            lead=self.lead(),
        )

    def lead(self) -> final.Lead | None:
        """The best-looking change, trusted or not (a single launch counts), and its
        comparison with the defaults: what may still hide a gain when the search has no
        candidate."""
        baseline = self.baseline
        if baseline is None:
            return None
        changes = [c for c in self.configs.values() if not c.is_baseline and self.eligible(c)]
        if not changes:
            return None
        sign = 1.0 if self.direction == "maximize" else -1.0
        best = max(changes, key=lambda c: sign * c.estimate.mean)
        return best.config_hash, self.compare(best, baseline)

    def comparison_candidate(self) -> str | None:
        """The configuration a final comparison would judge (None: nothing worth one): the
        search's candidate when it is a change; else the best-looking change, when its
        interval against the defaults still reaches the minimum gain (a gain worth
        deploying may hide there, so only fresh launches may say "no gain")."""
        return final.worth_comparing(self.candidate(), self.lead())

    def final_comparisons(self) -> list[stats.FinalComparison]:
        """Each final comparison's verdict, in the order they were made."""
        baseline = self.baseline
        stop = self.space.spec.stop
        opening = baseline.launches[: stop.baseline_launches] if baseline is not None else ()
        if self.full_opening is not None:
            opening = self.full_opening
        return final.verdicts(
            self.final_blocks,
            opening,
            self.final_noise,
            direction=self.direction,
            min_gain=stop.min_gain,
            confidence=stop.final_confidence,
            plan=self.look_plan,
        )

    def _label(self, key: str) -> str:
        config = self.configs.get(key)
        if config is None or not config.trials:
            return key
        return "the defaults" if config.is_baseline else f"trial {config.trials[0]}"

    def candidate(self) -> stats.Recommendation | None:
        """What the search's launches recommend (the simplest version of the best within
        noise of it that beats the defaults): the candidate of a final comparison, never
        the answer by itself (the winner's curse, many comparisons)."""
        if not self.configs:
            return None
        stop = self.space.spec.stop
        candidates = [
            stats.Candidate(
                key=c.config_hash,
                estimate=c.estimate,
                n_changed=c.n_changed,
                confirmed=self.confirmed(c),
                label=f"trial {c.trials[0]}",
                changes=frozenset((k, canonical_value(v)) for k, v in c.changed.items()),
                drops_checked=attrs.SIMPLIFY in c.roles,
            )
            for c in self.configs.values()
            if self.eligible(c)  # a configuration that breaks a limit is never recommended
        ]
        baseline = self.baseline
        if baseline is None or not candidates:
            return None  # nothing to recommend against, or nothing meets the limits
        rec = stats.recommend(
            candidates,
            direction=self.direction,
            min_gain=stop.min_gain,
            confidence=stop.confidence,
            baseline_key=baseline.config_hash,
        )
        judged = self.limit_checks.get(baseline.config_hash)
        if judged is None or judged.status == "feasible":
            return rec
        may = "break" if judged.status == "infeasible" else "may break"
        return dataclasses.replace(
            rec, reason=f"the defaults {may} {judged.describe()}; so {rec.reason}"
        )

    def compare(self, a: ConfigResult, b: ConfigResult) -> stats.Comparison:
        stop = self.space.spec.stop
        return stats.compare(
            a.estimate,
            b.estimate,
            direction=self.direction,
            min_gain=stop.min_gain,
            confidence=stop.confidence,
        )

    def significantly_better(self, a_hash: str, b_hash: str) -> bool:
        a, b = self.configs.get(a_hash), self.configs.get(b_hash)
        if a is None or b is None:
            return a is not None
        return self.compare(a, b).verdict == "better"

    def observations(self) -> list[Observation]:
        """The measured launches, each with the variance of its mean (both kinds of noise)."""
        noise = self.noise or stats.NoiseEstimate.prior()
        return [
            Observation(
                params=params,
                value=launch.mean,
                var=noise.var * launch.mean**2 + stats.launch_within_var(launch, noise.within_var),
            )
            for params, launch in self.measured
        ]

    def all_failed(self, *, min_launches: int) -> bool:
        done = sum(self.launch_counts.values())
        return (
            not self.configs
            and self.launch_counts.get(LaunchStatus.FAILED, 0) >= max(min_launches, 1)
            and done == self.launch_counts.get(LaunchStatus.FAILED, 0)
        )

    def noise_rel_sd(self) -> float | None:
        return self.noise.rel_sd if self.noise is not None else None

    def noise_dict(self) -> dict[str, float | str | None]:
        return {} if self.noise is None else self.noise.to_json()

    def describe(self, config: ConfigResult) -> str:
        what = " ".join(f"{k}={v}" for k, v in config.changed.items()) or "defaults"
        return f"{config.estimate.mean:.4g} ± {config.estimate.se:.2g} [{what}]"


def analyze(
    store: Store,
    space: Space,
    *,
    fingerprint: str | None = None,
    rows: Sequence[LaunchRow] | None = None,
) -> StudyAnalysis:
    """Group the study's completed launches by configuration and estimate each.

    ``fingerprint``: only the launches on that hardware (and those recorded before
    fingerprints were, which count with any); None: every launch. ``rows``: the study's
    launches when the caller has read them already.
    """
    rows = list(rows) if rows is not None else store.launches(space.study_name)
    if fingerprint is not None:
        rows = [r for r in rows if r.fingerprint in (None, fingerprint)]
    screening = space.spec.screening is not None
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
            confidence=space.spec.stop.confidence,
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
    return StudyAnalysis(
        space=space,
        configs=configs,
        noise=noise,
        launch_counts=dict(counts),
        measured=tuple(measured),
        limit_checks=feasibility.judge(store, space, groups),
        objective_estimates=(
            estimate_objectives(store, study_objectives(space.spec), groups)
            if is_multi_objective(space.spec)
            else None
        ),
        final_blocks=blocks,
        final_noise=final_noise,
        fidelity=fidelity,
        full_opening=tuple(full_opening) if screening else None,
    )
