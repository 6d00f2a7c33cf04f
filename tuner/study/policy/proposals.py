"""The search's next launch with one objective, in order: the probe's nominee (once), the
local search's proposal near the incumbent (limits steered around), or optuna's TPE with
the frozen params held at default.

The nominee comes first because the probe measured it in seconds: each open NCCL param's
significantly fastest value (tuner/study/policy/probe_narrowing.py). The local search
(tuner/study/policy/local_search.py) walks the model of effects; a proposal the limits'
models say is likely to break one is skipped and said (tuner/study/policy/steering.py).
When it has nothing left, optuna's TPE proposes, the frozen params pinned at default (none
frozen: nothing is queued and TPE proposes freely). Pure: a snapshot in, launches out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tuner.space.settings import is_default, settings_from_params
from tuner.space.spec import DEFAULT, Scalar
from tuner.study import attrs
from tuner.study.policy import local_search, probe_narrowing, screening, steering
from tuner.study.policy.decisions import Launch
from tuner.study.policy.snapshot import Snapshot


def proposal(snap: Snapshot) -> tuple[list[Launch], Snapshot, bool | None, list[str]]:
    """The next search launch: the probe's nominee (once), else the local search's
    proposal, else optuna's TPE with the frozen params held at default (or nothing
    queued: TPE proposes freely). Returns the launches, the snapshot after (the
    nominee's mark), the local search's answer (True: nothing left; None: not asked)
    and the messages of proposals skipped for the limits."""
    if snap.spec.search.method != "local" or snap.facts.baseline is None:
        return [], snap, None, []
    found, snap = nominee(snap)
    if found:
        return found, snap, None, []
    params, skipped = local_proposal(snap)
    if params is not None:
        return (
            [Launch(params, attrs.SEARCH, {attrs.PROPOSER: attrs.LOCAL})],
            snap,
            False,
            skipped,
        )
    if snap.frozen:  # optuna's TPE proposes next: the frozen params stay at default
        fixed = dict.fromkeys(snap.frozen, DEFAULT)
        return [Launch(fixed, attrs.SEARCH, {attrs.PROPOSER: attrs.TPE})], snap, True, skipped
    return [], snap, True, skipped


def nominee(snap: Snapshot) -> tuple[list[Launch], Snapshot]:
    """The probe's nominee as the first search trial, once."""
    params = probe_narrowing.nominee(snap.spec, snap.state.probe)
    if params is None:
        return [], snap
    config = settings_from_params(snap.spec, params).config_hash
    nominated = dataclasses.replace(snap.state.probe, nominated=True)
    snap = snap.with_state(snap.state.replace(probe=nominated))
    if config in snap.tried():
        return [], snap
    changed = ", ".join(f"{k}={v}" for k, v in params.items() if not is_default(v))
    launch = Launch(
        params,
        attrs.SEARCH,
        {attrs.PROPOSER: attrs.NOMINEE},
        message=f"probe: launching its nominee first: {changed}",
    )
    return [launch], snap


def local_proposal(snap: Snapshot) -> tuple[dict[str, Scalar] | None, list[str]]:
    """The local search's proposal near the incumbent, not what the limits rule out nor
    what failed launches refuse; once a failure counted, one untried value at a time (a
    group that fails again would not say which value failed)."""
    facts, spec = snap.facts, snap.spec
    baseline = facts.baseline
    assert baseline is not None
    incumbent = facts.configs.get(snap.state.incumbent or "") or baseline
    rng = snap.rng()
    search_spec = snap.search_spec
    failures = snap.failures()
    learned = failures is not None and failures.of(screening=False).ambiguous

    def avoid(params: Mapping[str, Scalar]) -> bool:
        if failures is None:
            return False
        level = screening.fidelity(spec, attrs.SEARCH, params, None)
        return failures.of(screening=level == attrs.SCREEN).avoids(params)

    return steering.propose_avoiding(
        lambda exclude: local_search.propose(
            search_spec,
            facts.observations(),
            incumbent.params,
            exclude=exclude,
            rng=rng,
            min_gain=spec.stop.min_gain,
            max_changes=1 if learned else spec.search.max_changes,
            trials_left=spec.search_patience - snap.search_trials_since_gain(),
            frozen=snap.frozen,
            avoid=avoid if failures is not None else None,
        ),
        steering.fit_steering(snap.limit_data, spec, snap.rng(stream=2)),
        spec,
        snap.tried(),
    )
