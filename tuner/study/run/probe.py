"""The probe in the sweep: each NCCL setting probed once, search trials screened by it.

With a ``probe:`` in the space file (docs/probe.md), ``SweepProbe``:

- ``prepare``: before the first launch, probes the defaults and every NCCL param's every
  value alone (seconds each, against a model load of minutes), cached in the study
  (tuner/study/run/probe_cache.py);
- ``refusal``: before a search trial's launch, refuses it when its all-reduce is
  significantly slower than the default's, its probe fails where the default's runs
  (NCCL would fail the server too), or it sets a param or value the finding closed;
- ``update``: once the baseline is measured, decides whether NCCL settings can move the
  objective by ``stop.min_gain`` (tuner.probe.screen.nccl_finding: probe gain x the share
  of a decode step spent in all-reduce; small gains that add up to it are probed once
  more, set at once) and saves the finding: params frozen, values open, the nominee. The
  policy reads it (tuner/study/policy/probe_narrowing.py, stops.py).

A default whose probe fails turns the probe off for the study with one message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import optuna

from tuner.errors import ConfigError
from tuner.events import SweepObserver
from tuner.probe.model_config import probe_model_config
from tuner.probe.run import ProbeError
from tuner.probe.screen import (
    NcclFinding,
    ProbeComparison,
    comm_share,
    compare_probe,
    nccl_finding,
    together_values,
)
from tuner.probe.sizes import ProbePlan, ProbePlanError, probe_plan
from tuner.space.model_limits import INSPECT_PORT
from tuner.space.settings import (
    Settings,
    baseline_params,
    is_default,
    settings_from_params,
)
from tuner.space.spec import Space
from tuner.stats.wording import percent
from tuner.study import attrs
from tuner.study.facts.analysis import ConfigResult, StudyAnalysis
from tuner.study.policy.probe_narrowing import closed_values
from tuner.study.run import probe_settings
from tuner.study.run.probe_cache import (
    CommandProbe,
    Probed,
    ProbeRunner,
    decode_step_s,
    nccl_key,
    rel_sd,
    scratch_dir,
)
from tuner.study.state import ProbeMemory, StudyState
from tuner.trial.runner import launch_spec_for

PRUNED = "pruned by the probe"
"""How the reason of a trial the probe kept from launching begins."""


class SweepProbe:
    """The probe of one study (see the module's docstring)."""

    def __init__(
        self,
        space: Space,
        plan: ProbePlan,
        runner: ProbeRunner,
        observer: SweepObserver,
    ) -> None:
        assert space.spec.probe is not None, "a SweepProbe needs the space's probe: section"
        self.space = space
        self.spec = space.spec
        self.probe = space.spec.probe
        self.plan = plan
        self.runner = runner
        self.observer = observer
        self.size = plan.size_at(self.spec.objective_concurrency)
        self.nccl_params = probe_settings.nccl_params(self.spec)
        self._baseline = settings_from_params(self.spec, baseline_params(self.spec))
        self._said: str | None = None
        self._memo: dict[str, Probed] = {}  # the study's cache, as this process has read it

    @classmethod
    def for_space(
        cls,
        space: Space,
        model_config: Mapping[str, Any] | None,
        observer: SweepObserver,
        runner: ProbeRunner | None = None,
    ) -> SweepProbe | None:
        """The study's probe, or None without a ``probe:`` (or, with a message, when its
        sizes cannot be known here)."""
        if space.spec.probe is None:
            return None
        if space.spec.probe.config_json is not None:  # the space's own config.json first
            try:
                model_config = probe_model_config(space)
            except ConfigError as exc:
                observer.message(f"probe: {exc}")
        try:
            plan = probe_plan(space.spec.probe, space.spec.benchmark, model_config)
        except ProbePlanError as exc:
            observer.message(f"probe: off: {space.path}: {exc}")
            return None
        return cls(space, plan, runner or CommandProbe(space, plan), observer)

    # --- measuring ---------------------------------------------------------------------

    def measure(self, study: optuna.Study, settings: Settings) -> Probed:
        """This NCCL setting's probe, from the study's cache or run now (and cached)."""
        key = nccl_key(self.space, settings.params)
        if key in self._memo:
            return self._memo[key]
        # Another worker (or an earlier run of this study) may have probed it already.
        cache: dict[str, Any] = dict(study.user_attrs.get(attrs.PROBES) or {})
        if key in cache:
            self._memo[key] = Probed.from_json(key, cache[key])
            return self._memo[key]
        launch = launch_spec_for(
            self.space, settings, port=INSPECT_PORT, trial_dir=scratch_dir(self.space)
        )
        try:
            probed = Probed(key, self.runner(launch.env, launch.unset))
        except ProbeError as exc:
            probed = Probed(key, None, str(exc))
        cache[key] = probed.to_json()
        study.set_user_attr(attrs.PROBES, cache)
        self._memo[key] = probed
        return probed

    def prepare(self, study: optuna.Study) -> None:
        """Probe the defaults, then every NCCL param's every value alone."""
        study.set_user_attr(
            attrs.PROBE_PLAN,
            {
                "size": self.size,
                "by_level": {str(c): s for c, s in self.plan.by_level.items()},
                "sizes": list(self.plan.sizes),
                "prefill_sizes": list(self.plan.prefill),
                "allreduces_per_token": self.plan.allreduces_per_token,
                "source": self.plan.source,
            },
        )
        changes = list(probe_settings.single_changes(self.spec, self.nccl_params))
        total = 1 + len(changes)
        self.observer.probe_progress(0, total, "the defaults")
        default = self.measure(study, self._baseline)
        if default.result is None:
            self.observer.probe_progress(total, total, "")
            reason = f"the default's probe failed: {default.error}"
            study.set_user_attr(attrs.PROBE_DISABLED, reason)
            self.observer.message(f"probe: off: {reason}; the sweep goes on without it")
            return
        study.set_user_attr(attrs.PROBE_DISABLED, None)
        slower: list[str] = []
        failed: list[str] = []
        for done, (name, value, settings) in enumerate(changes, start=1):
            self.observer.probe_progress(done, total, f"{name}={value}")
            probed = self.measure(study, settings)
            cmp = self.compare(probed, default)
            if cmp is None:
                failed.append(f"{name}={value}")
            elif cmp.verdict == "slower":
                slower.append(f"{name}={value} ({cmp.rel_diff * 100:+.1f}%)")
        self.observer.probe_progress(total, total, "")
        noise = rel_sd(default.result.samples[self.size])
        line = (
            f"probe: the defaults take {default.result.mean_us(self.size):.4g} us per all-reduce "
            f"at {self.size} bytes (±{percent(noise)} over {self.probe.repeats} repeats)"
        )
        if self.nccl_params:
            line += f"; {len(changes)} NCCL settings probed"
        self.observer.message(line)
        if slower:
            self.observer.message(f"probe: slower than the defaults: {', '.join(slower)}")
        if failed:
            self.observer.message(f"probe: fails (as NCCL would): {', '.join(failed)}")

    def disabled(self, study: optuna.Study) -> bool:
        return bool(study.user_attrs.get(attrs.PROBE_DISABLED))

    def memory(self, study: optuna.Study) -> ProbeMemory:
        """What the probe saved in the study, as the policy reads it."""
        return StudyState.from_attrs(study.user_attrs).probe

    def compare(self, probed: Probed, default: Probed) -> ProbeComparison | None:
        """``probed`` against the default's at the objective's size; None if it failed."""
        if probed.result is None or default.result is None:
            return None
        return compare_probe(
            probed.result.samples[self.size],
            default.result.samples[self.size],
            size=self.size,
            confidence=self.spec.stop.confidence,
        )

    # --- before a launch ---------------------------------------------------------------

    def refusal(self, trial: optuna.Trial, settings: Settings) -> str | None:
        """Why this search trial should not be launched, or None; records its probe."""
        study = trial.study
        if self.disabled(study):
            return None
        memory = self.memory(study)
        frozen = [n for n in sorted(memory.frozen) if not is_default(settings.params[n])]
        if frozen:
            return (
                f"{', '.join(frozen)} no longer searched: the probe found "
                f"{'it' if len(frozen) == 1 else 'they'} cannot move the objective by "
                f"min_gain at these sizes; not launched"
            )
        # Probed before the value check, so that a slower setting is pruned with its numbers.
        default = self.measure(study, self._baseline)
        probed = self.measure(study, settings)
        if probed.result is None:
            trial.set_user_attr(attrs.PROBE, {"key": probed.key, "error": probed.error})
            return f"{PRUNED}: it fails with these NCCL settings ({probed.error}); not launched"
        cmp = self.compare(probed, default)
        if cmp is not None:
            trial.set_user_attr(attrs.PROBE, {"key": probed.key, **cmp.to_json()})
            if cmp.verdict == "slower":
                return f"{PRUNED}: all-reduce {cmp.describe()}; not launched"
        closed = closed_values(memory, settings.params)
        if closed:
            return (
                f"{', '.join(closed)} not searched: the probe found "
                f"{'it' if len(closed) == 1 else 'they'} cannot move the objective by "
                f"min_gain at these sizes; not launched"
            )
        return None

    # --- after a trial -----------------------------------------------------------------

    def update(self, study: optuna.Study, facts: StudyAnalysis) -> None:
        """Decide (again) which NCCL params can help, once the baseline is measured."""
        if self.disabled(study) or not self.nccl_params or facts.baseline is None:
            return
        finding = self.finding(study, facts.baseline)
        if finding is None:
            return
        study.set_user_attr(attrs.PROBE_FINDING, finding.to_json())
        said = json.dumps(sorted(finding.frozen))
        if said != self._said:
            self._said = said
            self.observer.message(f"probe: {finding.sentence()}")

    def finding(self, study: optuna.Study, baseline: ConfigResult) -> NcclFinding | None:
        """What the probes say NCCL settings can do for the objective, once it is measured."""
        default = self.measure(study, self._baseline)
        if default.result is None:
            return None
        share = self.comm_share_of(baseline, default.result.mean_us(self.size))
        by_param: dict[str, dict[str, ProbeComparison | str]] = {}
        for name, value, settings in probe_settings.single_changes(self.spec, self.nccl_params):
            probed = self.measure(study, settings)
            cmp = self.compare(probed, default)
            by_param.setdefault(name, {})[str(value)] = (
                cmp if cmp is not None else str(probed.error)
            )
        min_gain = self.spec.stop.min_gain
        finding = nccl_finding(by_param, comm_share=share, min_gain=min_gain)
        if finding.combined_gain < min_gain:
            return finding
        # Small gains whose sum reaches min_gain: probe them at once before keeping them.
        together = probe_settings.together(self.spec, together_values(by_param, finding))
        if together is None:
            return finding
        cmp = self.compare(self.measure(study, together), default)
        if cmp is None:
            return finding
        return nccl_finding(by_param, comm_share=share, min_gain=min_gain, together=cmp)

    def comm_share_of(self, config: ConfigResult, us_per_allreduce: float) -> float:
        """The share of a decode step these all-reduces take: the space's, or measured."""
        if not isinstance(self.probe.comm_share, str):
            return self.probe.comm_share
        step_s = decode_step_s(self.space, config.estimate.mean)
        if step_s is None:
            return 1.0  # unknown: assume NCCL can move all of it (never freezes wrongly)
        return comm_share(self.plan.allreduces_per_token * us_per_allreduce * 1e-6, step_s)
