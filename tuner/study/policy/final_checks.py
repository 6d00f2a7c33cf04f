"""The checks before a single-objective answer: the simpler form of the best, a close call.

When the search is done (a plateau, the futility stop, or the budget's last launches),
two checks are worth their launches before the answer:

- ``simplification``: the best without the settings the model finds idle
  (tuner/study/policy/simplify.py), launched as often as a confirmed configuration, once
  per best; the recommendation can then be the simplest configuration that is as fast;
- ``tiebreak``: when the defaults (the recommendation) or a simpler version of the best
  (which the candidate rule then passes over, tuner/stats/recommend.py) trail the best by
  more than min_gain, yet not significantly, the less measured of the two launched again
  (up to the confirmation cap): more data settles the close call, so that neither the
  defaults nor the simplicity rule give a real gain away for want of data.

Pure: a snapshot in; the launches (and the state after) out, or nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from tuner.space.settings import settings_from_params
from tuner.space.spec import Scalar
from tuner.study import attrs
from tuner.study.policy import probe_narrowing
from tuner.study.policy.decisions import Launch
from tuner.study.policy.simplify import simplify
from tuner.study.policy.snapshot import Snapshot


def confirm_launch(
    snap: Snapshot, config_hash: str, params: Mapping[str, Scalar], message: str
) -> Launch:
    """A confirmation of a configuration, claimed by its trial count: a worker with an older
    view of the study loses the claim, so a launch is queued once in all workers."""
    return Launch(
        params,
        attrs.CONFIRM,
        {attrs.CONFIG: config_hash},
        claim=(attrs.CONFIRM, f"{config_hash}:{snap.count_of(config_hash)}"),
        message=message,
    )


def simplification(snap: Snapshot) -> tuple[list[Launch], Snapshot]:
    """The best with its idle settings dropped, as many launches as a confirmed
    configuration gets; once per best configuration (the state remembers it)."""
    facts, spec = snap.facts, snap.spec
    best = facts.best
    launches = 1 + spec.stop.confirmations
    if (
        best is None
        or best.is_baseline
        or best.config_hash in snap.state.simplified
        or not snap.has_room(best.params, launches)
    ):
        return [], snap
    snap = snap.with_state(
        snap.state.replace(simplified=(*snap.state.simplified, best.config_hash))
    )
    simpler = simplify(
        spec,
        facts.observations(),
        best.params,
        rng=snap.rng(),
        min_gain=spec.stop.min_gain,
        keep=probe_narrowing.backed(snap.state.probe, best.params),
    )
    if simpler is None:
        return [], snap
    config_hash = settings_from_params(spec, simpler).config_hash
    measured = facts.configs.get(config_hash)
    if measured is not None:
        # Launched already (a search trial may have tried it): top it up to a trusted
        # count, unless what it showed is already significantly worse than the best.
        if facts.compare(best, measured).verdict == "better":
            return [], snap
        launches -= len(measured.launches)
    elif config_hash in snap.tried():
        return [], snap  # proposed before and not measured: refused, failed or pruned
    if launches <= 0:
        return [], snap
    dropped = sorted(k for k, v in best.changed.items() if simpler.get(k) != v)
    launch = Launch(
        simpler,
        attrs.SIMPLIFY,
        {attrs.CONFIG: config_hash},
        claim=(attrs.SIMPLIFY, best.config_hash),  # once per best, in all workers
        copies=launches,
        message=f"trying trial {best.trials[0]} without {', '.join(dropped)}, which look idle",
    )
    return [launch], snap


def tiebreak(snap: Snapshot) -> list[Launch]:
    """The less measured of the best and its rival launched again, when the rival trails
    the best by more than min_gain, not yet significantly. The rival: the defaults when
    they are the recommendation, else a simpler version of the best passed over for that
    gap (``Recommendation.trailing``)."""
    facts, stop = snap.facts, snap.spec.stop
    rec = facts.candidate()  # the search's choice; the final comparison decides later
    if rec is None:
        return []
    rival_key = rec.recommended if rec.recommended != rec.best else rec.trailing
    if rival_key is None:
        return []
    best, rival = facts.configs[rec.best], facts.configs[rival_key]
    gap = facts.compare(best, rival).gain
    if gap <= stop.min_gain:
        return []
    for config in sorted((rival, best), key=lambda c: len(c.launches)):
        first = stop.baseline_launches if config.is_baseline else 1
        # Room for the launch made, at its own fidelity: with screening the rival may be
        # screened and the best full (a setting screening cannot judge), and a check
        # queued past the final comparison's reserve is never launched (the next
        # decision queued it again, trial after trial).
        if len(config.launches) - first < stop.confirmation_cap and snap.has_room(config.params):
            message = (
                f"launching trial {config.trials[0]} again: {facts.describe(rival)} "
                f"trails {facts.describe(best)} by {gap:.1%}, not yet significantly"
            )
            return [confirm_launch(snap, config.config_hash, config.params, message)]
    return []


def final_checks(snap: Snapshot) -> tuple[list[Launch], Snapshot]:
    """The simplification if it is due, else the tiebreak; nothing when neither is."""
    launches, snap = simplification(snap)
    if launches:
        return launches, snap
    return tiebreak(snap), snap
