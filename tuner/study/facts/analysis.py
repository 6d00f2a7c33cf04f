"""What a study's launches say so far: per-configuration estimates, noise, best, recommendation.

Reads the stored launches (never optuna's ``best_trial``: a configuration may be
launched several times and each launch is its own optuna trial) and applies the
pure statistics of tuner/stats/. The policy (tuner/study/policy/) reads it to decide what
to confirm, whether a gain is real and when to stop; `tuner best` reads it for the answer.
The launches are grouped and estimated by tuner/study/facts/launch_groups.py, whose
``ConfigResult`` (one configuration's launches) is this module's too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from tuner import stats
from tuner.space.objectives import is_multi_objective, study_objectives
from tuner.space.settings import canonical_value
from tuner.space.spec import Scalar, Space
from tuner.stats.looks import LookPlan
from tuner.storage import LaunchRow, LaunchStatus, Store
from tuner.study import attrs
from tuner.study.effects.model import Observation
from tuner.study.facts import feasibility, final
from tuner.study.facts.fidelity import FidelityFacts
from tuner.study.facts.final_size import default_looks
from tuner.study.facts.launch_groups import ConfigResult as ConfigResult
from tuner.study.facts.launch_groups import group_launches
from tuner.study.facts.objective_values import ObjectiveEstimates, estimate_objectives


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
    found = group_launches(rows, space.spec)
    return StudyAnalysis(
        space=space,
        configs=found.configs,
        noise=found.noise,
        launch_counts=found.counts,
        measured=found.measured,
        limit_checks=feasibility.judge(store, space, found.groups),
        objective_estimates=(
            estimate_objectives(store, study_objectives(space.spec), found.groups)
            if is_multi_objective(space.spec)
            else None
        ),
        final_blocks=found.final_blocks,
        final_noise=found.final_noise,
        fidelity=found.fidelity,
        full_opening=found.full_opening,
    )
