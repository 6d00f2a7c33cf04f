"""What `tuner best` says about the probe: the floor, the all-reduce share, the finding.

Read from the probes a study stored (tuner/study/run/probe.py runs them): the defaults'
and the fastest probe's time per all-reduce, the single-stream bound the fastest gives
(the communication floor), the measured tokens per second of the recommended
configuration beside it and the share of its decode step spent in all-reduce, the
NCCL finding and how many trials the probe kept from launching.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.probe.screen import comm_share, floor_tokens_per_s
from tuner.space.settings import baseline_params
from tuner.space.spec import Space
from tuner.study import attrs
from tuner.study.facts import analysis
from tuner.study.run.probe import PRUNED
from tuner.study.run.probe_cache import Probed, decode_step_s, nccl_key


@dataclass(frozen=True)
class ProbeSummary:
    """What `tuner best` says about the probe: the floor, the share, the finding."""

    size: int
    allreduces_per_token: int
    default_us: float
    best_us: float
    best_env: dict[str, str]
    floor_tokens_per_s: float
    """The most one stream can reach if all-reduce took the whole step (fastest probe)."""
    measured_tokens_per_s: float | None
    """The recommended configuration's tokens per second per stream, measured."""
    comm_share: float | None
    """Share of the recommended configuration's decode step spent in all-reduce."""
    finding: str | None
    """The probe's finding about NCCL, in one sentence."""
    frozen: tuple[str, ...]
    probed: int
    pruned: int
    disabled: str | None = None
    own_us: float | None = None
    """The recommended configuration's own NCCL setting's probe (the defaults' if unprobed)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "allreduces_per_token": self.allreduces_per_token,
            "default_us": self.default_us,
            "best_us": self.best_us,
            "best_env": dict(self.best_env),
            "floor_tokens_per_s": self.floor_tokens_per_s,
            "measured_tokens_per_s": self.measured_tokens_per_s,
            "comm_share": self.comm_share,
            "verdict": self.finding,  # the JSON key of `tuner best` since the probe began
            "frozen": list(self.frozen),
            "probed": self.probed,
            "pruned": self.pruned,
            "disabled": self.disabled,
            "own_us": self.own_us,
        }


def probe_summary(
    space: Space, study: optuna.Study, recommended: analysis.ConfigResult | None
) -> ProbeSummary | None:
    """The probe's figures for `tuner best`, from the study's stored probes."""
    plan = study.user_attrs.get(attrs.PROBE_PLAN)
    cache = study.user_attrs.get(attrs.PROBES) or {}
    if not plan or space.spec.probe is None:
        return None
    size, per_token = int(plan["size"]), int(plan["allreduces_per_token"])
    results = {
        key: Probed.from_json(key, data).result
        for key, data in cache.items()
        if "error" not in data
    }
    means = {k: r.mean_us(size) for k, r in results.items() if r is not None and size in r.samples}
    default_key = nccl_key(space, baseline_params(space.spec))
    if default_key not in means:
        return None
    best_key = min(means, key=lambda k: means[k])
    measured = share = own_us = None
    if recommended is not None:
        step_s = decode_step_s(space, recommended.estimate.mean)
        if step_s is not None:
            measured = 1.0 / step_s
            own = nccl_key(space, recommended.params)
            us = own_us = means.get(own, means[default_key])
            share = comm_share(per_token * us * 1e-6, step_s)
    finding = study.user_attrs.get(attrs.PROBE_FINDING) or {}
    trials = study.get_trials(deepcopy=False)
    return ProbeSummary(
        size=size,
        allreduces_per_token=per_token,
        default_us=means[default_key],
        best_us=means[best_key],
        best_env=json.loads(best_key),
        floor_tokens_per_s=floor_tokens_per_s(per_token, means[best_key]),
        measured_tokens_per_s=measured,
        comm_share=share,
        finding=finding.get("sentence"),
        frozen=tuple(finding.get("frozen", ())),
        probed=len(cache),
        pruned=sum(1 for t in trials if str(t.user_attrs.get(attrs.REASON, "")).startswith(PRUNED)),
        disabled=study.user_attrs.get(attrs.PROBE_DISABLED),
        own_us=own_us,
    )
