"""The checks before a single-objective study's answer, queued by the SweepController.

- the simplification: the best with the settings the model of effects finds idle dropped
  (search.simplify), launched as often as a confirmed configuration, once per best;
- the tie-break: when the recommendation (the simplest within noise of the best) trails the
  best by more than min_gain, yet not significantly, the less measured of the two again.

Each returns True when it queued launches (the sweep goes on until they have run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import optuna

from tuner.space.settings import settings_from_params
from tuner.study import analysis, attrs, queue, search

if TYPE_CHECKING:
    from tuner.study.controller import SweepController


def queue_simplification(
    ctl: SweepController, study: optuna.Study, result: analysis.StudyAnalysis
) -> bool:
    """Queue the best with its idle settings dropped (search.simplify), as many times as
    a confirmed configuration is launched; once per best configuration."""
    best = result.best
    launches = 1 + ctl.spec.stop.confirmations
    done = list(study.user_attrs.get(attrs.SIMPLIFIED, []))
    if (
        best is None
        or best.is_baseline
        or best.config_hash in done
        or ctl.launched(study) + launches > ctl.n_trials
        or not ctl.claim("simplify", best.config_hash)  # once per best, in all workers
    ):
        return False
    study.set_user_attr(attrs.SIMPLIFIED, [*done, best.config_hash])
    simpler = search.simplify(
        ctl.spec,
        result.observations(),
        best.params,
        rng=ctl.rng(study),
        min_gain=ctl.spec.stop.min_gain,
        keep=ctl.probe.backed(study, best.params) if ctl.probe is not None else frozenset(),
    )
    if simpler is None:
        return False
    config_hash = settings_from_params(ctl.spec, simpler).config_hash
    measured = result.configs.get(config_hash)
    if measured is not None:
        # Launched already (a search trial may have tried it): top it up to a trusted
        # count, unless what it showed is already significantly worse than the best.
        if result.compare(best, measured).verdict == "better":
            return False
        launches -= len(measured.launches)
    elif any(
        t.user_attrs.get(attrs.CONFIG) == config_hash for t in study.get_trials(deepcopy=False)
    ):
        return False  # proposed before and not measured: refused, failed or pruned
    if launches <= 0:
        return False
    for _ in range(launches):
        queue.enqueue_launch(study, ctl.spec, simpler, "simplify", {attrs.CONFIG: config_hash})
    dropped = sorted(k for k, v in best.changed.items() if simpler.get(k) != v)
    ctl.observer.message(
        f"trying trial {best.trials[0]} without {', '.join(dropped)}, which look idle"
    )
    return True


def queue_tiebreak(
    ctl: SweepController, study: optuna.Study, result: analysis.StudyAnalysis
) -> bool:
    """When the recommendation trails the best by more than min_gain, yet not
    significantly, launch the less measured of the two again (up to the confirmation
    cap): the simplicity rule should not give away a real gain for want of data."""
    rec = result.recommendation()
    if rec is None or rec.recommended == rec.best:
        return False
    best, chosen = result.configs[rec.best], result.configs[rec.recommended]
    gap = result.compare(best, chosen).gain
    if gap <= ctl.spec.stop.min_gain or ctl.launched(study) >= ctl.n_trials:
        return False
    stop = ctl.spec.stop
    for config in sorted((chosen, best), key=lambda c: len(c.launches)):
        first = stop.baseline_launches if config.is_baseline else 1
        if len(config.launches) - first < stop.confirmation_cap:
            if not ctl.claim_confirmation(study.get_trials(deepcopy=False), config):
                return True  # another worker queued it: the sweep goes on until it ran
            queue.enqueue_launch(
                study, ctl.spec, config.params, "confirm", {attrs.CONFIG: config.config_hash}
            )
            ctl.observer.message(
                f"launching trial {config.trials[0]} again: {result.describe(chosen)} "
                f"trails {result.describe(best)} by {gap:.1%}, not yet significantly"
            )
            return True
    return False
