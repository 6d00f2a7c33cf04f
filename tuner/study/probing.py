"""The probe in the sweep: each NCCL setting probed once, proposals screened, NCCL frozen.

With a ``probe:`` in the space file (docs/probe.md), ``SweepProbe``:

- ``prepare``: before the first launch, probes the defaults and every NCCL param's every
  value alone (the cheap part: seconds each, against a model load of minutes), caching
  each result in the study by the NCCL part of its environment, so a resumed study or a
  second worker never probes the same NCCL setting twice;
- ``refusal``: before a search trial's launch, probes its NCCL setting (from the cache
  when it was seen) and refuses it when its all-reduce is significantly slower than the
  default's, or when its probe fails where the default's runs (NCCL would fail the
  server too), or when it changes a param the verdict froze;
- ``update``: once the baseline is measured, decides whether NCCL settings can move the
  objective by ``stop.min_gain`` (tuner.probe.screen.nccl_verdict: probe gain x the share
  of a decode step spent in all-reduce; small gains that add up to it are probed once
  more, set at once), and freezes the NCCL params that cannot; the
  local search (and optuna's TPE after it) then leaves them at default. When every
  param is frozen, the sweep stops with the verdict; when every configuration of the
  params left open has been tried, it stops as exhausted (``stop``);
- ``search_spec``: the space the local search walks, each open NCCL param narrowed to
  the values that can help; a search trial with another value is refused;
- ``nominee``: once, the baseline with each open NCCL param at its significantly
  fastest value, the first search trial: where the probe sees the gains, one launch
  tries them all.

A default whose probe fails turns the probe off for the study with one message: the
sweep then runs as without it. NCCL params are those whose ``env`` starts with ``NCCL_``,
and ``CUDA_DEVICE_MAX_CONNECTIONS``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from tuner.events import SweepObserver
from tuner.probe.run import ProbeError, ProbeResult, child_env, measure, probe_argv
from tuner.probe.screen import (
    NcclVerdict,
    ProbeComparison,
    comm_share,
    compare_probe,
    nccl_verdict,
    together_values,
)
from tuner.probe.sizes import ProbePlan, ProbePlanError, probe_plan
from tuner.space.model_limits import INSPECT_PORT, inspect_names
from tuner.space.settings import (
    Settings,
    baseline_params,
    is_default,
    settings_from_params,
    violated_constraints,
)
from tuner.space.spec import DEFAULT, ParamSpec, Scalar, Space, SpaceSpec
from tuner.stats.wording import percent
from tuner.study import analysis, attrs, exhaustion, search
from tuner.trial.runner import launch_spec_for

NCCL_EXTRA_VARIABLES = ("CUDA_DEVICE_MAX_CONNECTIONS",)
"""Not NCCL's, but an NCCL setting in effect: how many queues carry its kernels."""

PRUNED = "pruned by the probe"
"""How the reason of a trial the probe kept from launching begins."""

ProbeRunner = Callable[[Mapping[str, str], frozenset[str]], ProbeResult]
"""Run the probe with a trial's env (set) and unset variables; ProbeError on failure."""


def is_nccl_variable(name: str) -> bool:
    return name.startswith("NCCL_") or name in NCCL_EXTRA_VARIABLES


def is_nccl_param(param: ParamSpec) -> bool:
    """A param that sets an NCCL variable: what the probe can speak for."""
    return param.env is not None and is_nccl_variable(param.env)


class CommandProbe:
    """The space's probe command, run with the trial's environment."""

    def __init__(self, space: Space, plan: ProbePlan) -> None:
        assert space.spec.probe is not None
        self.probe = space.spec.probe
        names = inspect_names(space)
        self.argv = probe_argv(self.probe, plan.sizes, names)
        self.sizes = plan.sizes

    def __call__(self, env: Mapping[str, str], unset: frozenset[str]) -> ProbeResult:
        return measure(
            self.argv,
            env=child_env(env, unset),
            sizes=self.sizes,
            repeats=self.probe.repeats,
            timeout_s=self.probe.timeout_s,
        )


@dataclass(frozen=True)
class Probed:
    """One probe of one NCCL setting: its result, or why it failed."""

    key: str
    result: ProbeResult | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.result is None:
            return {"error": self.error}
        return self.result.to_json()

    @classmethod
    def from_json(cls, key: str, data: Mapping[str, Any]) -> Probed:
        if "error" in data:
            return cls(key, None, str(data["error"]))
        return cls(key, ProbeResult.from_json(data))


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
        self.nccl_params = [n for n, p in self.spec.params.items() if is_nccl_param(p)]
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
        try:
            plan = probe_plan(space.spec.probe, space.spec.benchmark, model_config)
        except ProbePlanError as exc:
            observer.message(f"probe: off: {space.path}: {exc}")
            return None
        return cls(space, plan, runner or CommandProbe(space, plan), observer)

    # --- measuring ---------------------------------------------------------------------

    def nccl_key(self, settings: Settings) -> str:
        """The NCCL part of the environment the server would get: the cache's key."""
        return json.dumps(nccl_env(self.space, settings.params), sort_keys=True)

    def measure(self, study: optuna.Study, settings: Settings) -> Probed:
        """This NCCL setting's probe, from the study's cache or run now (and cached)."""
        key = self.nccl_key(settings)
        if key in self._memo:
            return self._memo[key]
        # Another worker (or an earlier run of this study) may have probed it already.
        cache: dict[str, Any] = dict(study.user_attrs.get(attrs.PROBES) or {})
        if key in cache:
            self._memo[key] = Probed.from_json(key, cache[key])
            return self._memo[key]
        launch = launch_spec_for(
            self.space, settings, port=INSPECT_PORT, trial_dir=_scratch(self.space)
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
                "allreduces_per_token": self.plan.allreduces_per_token,
                "source": self.plan.source,
            },
        )
        default = self.measure(study, self._baseline)
        if default.result is None:
            reason = f"the default's probe failed: {default.error}"
            study.set_user_attr(attrs.PROBE_DISABLED, reason)
            self.observer.message(f"probe: off: {reason}; the sweep goes on without it")
            return
        study.set_user_attr(attrs.PROBE_DISABLED, None)
        slower: list[str] = []
        failed: list[str] = []
        for name, value, settings in self._single_changes():
            probed = self.measure(study, settings)
            cmp = self.compare(probed, default)
            if cmp is None:
                failed.append(f"{name}={value}")
            elif cmp.verdict == "slower":
                slower.append(f"{name}={value} ({cmp.rel_diff * 100:+.1f}%)")
        noise = _rel_sd(default.result.samples[self.size])
        line = (
            f"probe: the defaults take {default.result.mean_us(self.size):.4g} us per all-reduce "
            f"at {self.size} bytes (±{percent(noise)} over {self.probe.repeats} repeats)"
        )
        if self.nccl_params:
            line += f"; {sum(1 for _ in self._single_changes())} NCCL settings probed"
        self.observer.message(line)
        if slower:
            self.observer.message(f"probe: slower than the defaults: {', '.join(slower)}")
        if failed:
            self.observer.message(f"probe: fails (as NCCL would): {', '.join(failed)}")

    def disabled(self, study: optuna.Study) -> bool:
        return bool(study.user_attrs.get(attrs.PROBE_DISABLED))

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
        frozen = [n for n in sorted(self.frozen(study)) if not is_default(settings.params[n])]
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
        closed = self._closed_values(study, settings.params)
        if closed:
            return (
                f"{', '.join(closed)} not searched: the probe found "
                f"{'it' if len(closed) == 1 else 'they'} cannot move the objective by "
                f"min_gain at these sizes; not launched"
            )
        return None

    # --- after a trial -----------------------------------------------------------------

    def update(self, study: optuna.Study, result: analysis.StudyAnalysis) -> None:
        """Decide (again) which NCCL params can help, once the baseline is measured."""
        if self.disabled(study) or not self.nccl_params or result.baseline is None:
            return
        verdict = self.verdict(study, result.baseline)
        if verdict is None:
            return
        study.set_user_attr(attrs.PROBE_VERDICT, verdict.to_json())
        said = json.dumps(sorted(verdict.frozen))
        if said != self._said:
            self._said = said
            self.observer.message(f"probe: {verdict.sentence()}")

    def verdict(self, study: optuna.Study, baseline: analysis.ConfigResult) -> NcclVerdict | None:
        default = self.measure(study, self._baseline)
        if default.result is None:
            return None
        share = self.comm_share_of(baseline, default.result.mean_us(self.size))
        by_param: dict[str, dict[str, ProbeComparison | str]] = {}
        for name, value, settings in self._single_changes():
            probed = self.measure(study, settings)
            cmp = self.compare(probed, default)
            by_param.setdefault(name, {})[str(value)] = (
                cmp if cmp is not None else str(probed.error)
            )
        min_gain = self.spec.stop.min_gain
        verdict = nccl_verdict(by_param, comm_share=share, min_gain=min_gain)
        if verdict.combined_gain < min_gain:
            return verdict
        # Small gains whose sum reaches min_gain: probe them at once before keeping them.
        together = self._together(together_values(by_param, verdict))
        if together is None:
            return verdict
        cmp = self.compare(self.measure(study, together), default)
        if cmp is None:
            return verdict
        return nccl_verdict(by_param, comm_share=share, min_gain=min_gain, together=cmp)

    def _together(self, values: Mapping[str, str]) -> Settings | None:
        """The baseline with ``values`` (param -> str(value)) set at once, when that is a
        valid configuration of two or more changes; else None."""
        if len(values) < 2:
            return None
        params = dict(baseline_params(self.spec))
        for name, text in values.items():
            params[name] = next(v for v in search.levels(self.spec.params[name]) if str(v) == text)
        if violated_constraints(self.spec, params):
            return None
        return settings_from_params(self.spec, params)

    def comm_share_of(self, config: analysis.ConfigResult, us_per_allreduce: float) -> float:
        """The share of a decode step these all-reduces take: the space's, or measured."""
        if not isinstance(self.probe.comm_share, str):
            return self.probe.comm_share
        step_s = decode_step_s(self.space, config.estimate.mean)
        if step_s is None:
            return 1.0  # unknown: assume NCCL can move all of it (never freezes wrongly)
        return comm_share(self.plan.allreduces_per_token * us_per_allreduce * 1e-6, step_s)

    def _saved_verdict(self, study: optuna.Study) -> Mapping[str, Any]:
        """The verdict as ``update`` saved it (``NcclVerdict.to_json``); empty while there
        is none or the probe is off."""
        if self.disabled(study):
            return {}
        return study.user_attrs.get(attrs.PROBE_VERDICT) or {}

    def frozen(self, study: optuna.Study) -> frozenset[str]:
        """The params the local search must leave alone (at default)."""
        return frozenset(self._saved_verdict(study).get("frozen", ()))

    def open_values(self, study: optuna.Study) -> dict[str, frozenset[str]]:
        """For each NCCL param the verdict left open, the values still searched."""
        return _open_values(self._saved_verdict(study))

    def _closed_values(self, study: optuna.Study, params: Mapping[str, Scalar]) -> list[str]:
        """``name=value`` for each open param set to a value the probe found cannot help."""
        return [
            f"{name}={params[name]}"
            for name, values in sorted(self.open_values(study).items())
            if name in params and not is_default(params[name]) and str(params[name]) not in values
        ]

    def search_spec(self, study: optuna.Study) -> SpaceSpec:
        """The space the local search walks: each NCCL param narrowed to the values the
        probe leaves open, a frozen one to its default. Values off it are never proposed,
        and the model of effects has no column for them."""
        verdict = self._saved_verdict(study)
        frozen = frozenset(verdict.get("frozen", ()))
        open_values = _open_values(verdict)
        if not frozen and not open_values:
            return self.spec
        params = dict(self.spec.params)
        for name in self.nccl_params:
            if name not in frozen and name not in open_values:
                continue
            keep = open_values.get(name, frozenset())
            values = [v for v in search.levels(params[name])[1:] if str(v) in keep]
            params[name] = params[name].model_copy(
                update={"choices": [DEFAULT, *values], "int_range": None, "float_range": None}
            )
        return self.spec.model_copy(update={"params": params})

    def nominee(self, study: optuna.Study) -> dict[str, Scalar] | None:
        """The baseline with every open NCCL param at its significantly fastest value, or
        None: when the verdict names none, it breaks a constraint, or it was queued once."""
        if attrs.PROBE_NOMINATED in study.user_attrs:
            return None
        named: Mapping[str, str] = self._saved_verdict(study).get("nominee") or {}
        if not named:
            return None
        params = dict(baseline_params(self.spec))
        for name, text in named.items():
            value = next((v for v in search.levels(self.spec.params[name]) if str(v) == text), None)
            if value is None:
                return None
            params[name] = value
        if violated_constraints(self.spec, params):
            return None
        return params

    def backed(self, study: optuna.Study, params: Mapping[str, Scalar]) -> frozenset[str]:
        """The params set to the probe's nominee value: each measured alone as faster by
        enough to matter, so never dropped as idle (search.simplify's ``keep``)."""
        named = self._saved_verdict(study).get("nominee") or {}
        return frozenset(n for n, text in named.items() if str(params.get(n)) == text)

    def stop(self, study: optuna.Study) -> tuple[str, str] | None:
        """(reason, sentence) when the probe leaves nothing to launch, else None.

        ``probe``: every param is frozen. ``exhausted``: every configuration of the params
        left open has been tried (only choices params; a small grid). Neither while a
        trial waits: the baseline's launches are made in any case.
        """
        frozen = self.frozen(study)
        if not frozen or study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            return None
        if frozen >= set(self.spec.params):
            verdict = self._saved_verdict(study)
            return (
                "probe",
                f"{verdict.get('sentence', 'the probe froze every param')}; keep the defaults",
            )
        grid = exhaustion.open_grid(self.search_spec(study), frozen)
        if grid is None:
            return None
        tried = {t.user_attrs.get(attrs.CONFIG) for t in study.get_trials(deepcopy=False)}
        if grid <= tried:
            return "exhausted", (
                f"every configuration the probe leaves open has been tried ({len(grid)}; "
                f"no longer searched: {', '.join(sorted(frozen))})"
            )
        return None

    def _single_changes(self) -> list[tuple[str, Scalar, Settings]]:
        base = baseline_params(self.spec)
        out = []
        for name in self.nccl_params:
            for value in search.levels(self.spec.params[name])[1:]:
                out.append((name, value, settings_from_params(self.spec, {**base, name: value})))
        return out


def decode_step_s(space: Space, objective_value: float) -> float | None:
    """Seconds of one decode step the objective implies, when its metric says it."""
    metric = space.spec.objective.metric
    if objective_value <= 0 or not math.isfinite(objective_value):
        return None
    if metric == "output_throughput":
        return space.spec.objective_concurrency / objective_value
    if metric.startswith(("tpot_ms_", "itl_ms_")):
        return objective_value / 1000.0
    return None


def nccl_env(space: Space, params: Mapping[str, Scalar]) -> dict[str, str]:
    """The NCCL variables the server would get with ``params``: the probe cache's key."""
    settings = settings_from_params(space.spec, params)
    launch = launch_spec_for(space, settings, port=INSPECT_PORT, trial_dir=_scratch(space))
    return {k: v for k, v in launch.env.items() if is_nccl_variable(k)}


def _scratch(space: Space) -> Path:
    """A trial directory for placeholders only: nothing is written there."""
    return Path(inspect_names(space)["trial_dir"])


def _rel_sd(values: tuple[float, ...]) -> float:
    mean = math.fsum(values) / len(values)
    if len(values) < 2 or mean == 0:
        return 0.0
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)) / mean


def _open_values(verdict: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """A saved verdict's ``open_values``, as sets (none in a verdict saved before them)."""
    return {name: frozenset(v) for name, v in (verdict.get("open_values") or {}).items()}
