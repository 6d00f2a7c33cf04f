"""The study's state: one typed owner of what tuner keeps in optuna's user attrs.

A study remembers between trials, processes and workers what its launches alone do not
say: the incumbent (the configuration whose significant gains reset the patience) and
the trial of its last gain, the recommendable set of a several-objective study, the best
configurations already simplified, whether the cost plan was said, the probe's cache and
finding, the params vLLM ignores on its GPUs, the final comparison's memory (the stop it
runs before, its looks), and why and by whom the study stopped. They live in optuna's
study user attrs (tuner/study/attrs.py names them; optuna-dashboard shows them).
``StudyState`` reads them into one frozen value, and ``attr_changes`` says which attrs a
new state writes; only the run layer (tuner/study/run/) touches optuna. ``TrialView`` is
the same for one trial's attrs. Pure: mappings in, values out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuner.stats.looks import LookPlan
from tuner.study import attrs


@dataclass(frozen=True)
class ProbeMemory:
    """What the probe left in the study (tuner/study/run/probe.py writes it)."""

    disabled: str | None = None
    """Why the probe is off for this study (the default's probe failed), when it is."""
    finding: Mapping[str, Any] = field(default_factory=dict)
    """The NCCL finding as saved (``NcclFinding.to_json``); empty while there is none."""
    nominated: bool = False
    """The probe's nominee was queued (or found tried): once a study."""

    @property
    def active(self) -> Mapping[str, Any]:
        """The finding, or nothing while the probe is off."""
        return {} if self.disabled else self.finding

    @property
    def frozen(self) -> frozenset[str]:
        """The params the search leaves at default: the probe found they cannot help."""
        return frozenset(self.active.get("frozen", ()))

    @property
    def open_values(self) -> dict[str, frozenset[str]]:
        """For each NCCL param the finding left open, the values still searched."""
        found = self.active.get("open_values") or {}
        return {name: frozenset(values) for name, values in found.items()}

    @property
    def nominee(self) -> dict[str, str]:
        """Each open param's significantly fastest value (param -> its text)."""
        return dict(self.active.get("nominee") or {})

    @property
    def sentence(self) -> str | None:
        found = self.active.get("sentence")
        return str(found) if found is not None else None


@dataclass(frozen=True)
class Trigger:
    """The stop a final comparison runs before, as stored: recorded once its launches are
    done (the answer rests on them, so the study may not end first)."""

    reason: str
    detail: str


@dataclass(frozen=True)
class FinalMemory:
    """What the final comparison keeps in the study; only tuner/study/policy/
    final_comparison.py changes it (its phase, derived from this and the trials, is there)."""

    trigger: Trigger | None = None
    """The stop it waits to record (``tuner_final_trigger``); None: none waits."""
    looks: LookPlan | None = None
    """Its looks as the cost plan sized them (``tuner_final_looks``; None: not sized yet)."""


@dataclass(frozen=True)
class StudyState:
    """The study attrs the decisions read and write (see the module)."""

    incumbent: str | None = None
    last_gain_trial: int | None = None
    recommendable: tuple[str, ...] = ()
    simplified: tuple[str, ...] = ()
    plan_said: bool = False
    stopped_by: str | None = None
    stop_reason: str | None = None
    stop_detail: str | None = None
    probe: ProbeMemory = field(default_factory=ProbeMemory)
    final: FinalMemory = field(default_factory=FinalMemory)
    ignored: frozenset[str] = frozenset()
    """The params vLLM ignores on the study's GPUs (tuner/study/run/topology.py): the
    search leaves them at default, as it does the probe's frozen ones."""

    @classmethod
    def from_attrs(cls, found: Mapping[str, Any]) -> StudyState:
        last_gain = found.get(attrs.LAST_GAIN_TRIAL)
        return cls(
            incumbent=found.get(attrs.INCUMBENT),
            last_gain_trial=int(last_gain) if last_gain is not None else None,
            recommendable=tuple(found.get(attrs.RECOMMENDABLE, ())),
            simplified=tuple(found.get(attrs.SIMPLIFIED, ())),
            plan_said=attrs.PLAN in found,
            stopped_by=found.get(attrs.STOPPED_BY),
            stop_reason=found.get(attrs.STOP_REASON),
            stop_detail=found.get(attrs.STOP_DETAIL),
            final=FinalMemory(
                trigger=_trigger(found.get(attrs.FINAL_TRIGGER)),
                looks=_looks(found.get(attrs.FINAL_LOOKS)),
            ),
            ignored=frozenset(found.get(attrs.IGNORED) or ()),
            probe=ProbeMemory(
                disabled=found.get(attrs.PROBE_DISABLED) or None,
                finding=found.get(attrs.PROBE_FINDING) or {},
                nominated=attrs.PROBE_NOMINATED in found,
            ),
        )

    def replace(self, **changes: Any) -> StudyState:
        return dataclasses.replace(self, **changes)


def attr_changes(old: StudyState, new: StudyState) -> dict[str, Any]:
    """The study attrs to write to go from ``old`` to ``new`` (what the decisions change)."""
    out: dict[str, Any] = {}
    if new.incumbent != old.incumbent and new.incumbent is not None:
        out[attrs.INCUMBENT] = new.incumbent
    if new.last_gain_trial != old.last_gain_trial and new.last_gain_trial is not None:
        out[attrs.LAST_GAIN_TRIAL] = new.last_gain_trial
    if new.recommendable != old.recommendable:
        out[attrs.RECOMMENDABLE] = list(new.recommendable)
    if new.simplified != old.simplified:
        out[attrs.SIMPLIFIED] = list(new.simplified)
    if new.probe.nominated and not old.probe.nominated:
        out[attrs.PROBE_NOMINATED] = True
    trigger, looks = new.final.trigger, new.final.looks
    if trigger != old.final.trigger:
        # {}: none waits any more (the stored form older studies have too).
        out[attrs.FINAL_TRIGGER] = (
            {"reason": trigger.reason, "detail": trigger.detail} if trigger else {}
        )
    if looks != old.final.looks and looks is not None:
        out[attrs.FINAL_LOOKS] = looks.to_json()
    return out


def _trigger(found: Any) -> Trigger | None:
    """The stored stop (``{"reason", "detail"}``; ``{}`` or missing: none waits). A reason
    missing from an older study's record reads as the budget's, as it always did."""
    if not isinstance(found, Mapping) or not found:
        return None
    return Trigger(str(found.get("reason", attrs.BUDGET)), str(found.get("detail", "")))


def _looks(found: Any) -> LookPlan | None:
    """The stored looks (``LookPlan.to_json``), or None."""
    if not isinstance(found, Mapping) or "first" not in found or "sized" not in found:
        return None
    target = found.get("target_gain")
    return LookPlan(
        first=int(found["first"]),
        sized=int(found["sized"]),
        target_gain=float(target) if target is not None else None,
    )


def launched(trials: Iterable[TrialView]) -> int:
    """Launches run to the end (what --trials counts): a running one is not yet counted,
    nor one cut short from outside (it runs again when the study resumes)."""
    return sum(1 for t in trials if t.launched and not t.running and not t.interrupted)


def full_launched(trials: Iterable[TrialView]) -> int:
    """Full launches run to the end (what --trials counts: every launch without screening)."""
    return launched(t for t in trials if not t.screening)


@dataclass(frozen=True)
class TrialView:
    """One optuna trial as the decisions see it: its state and tuner's attrs."""

    number: int
    state: str
    """optuna's TrialState name: WAITING, RUNNING, COMPLETE, PRUNED or FAIL."""
    role: str | None = None
    proposer: str | None = None
    config: str | None = None
    launched: bool = False
    worker: str | None = None
    fidelity: str | None = None
    """``screen`` or ``full`` once queued or started (None: a free proposal not yet started,
    or a study from before screening: full)."""
    interrupted: bool = False
    """Cut short from outside (Ctrl-C, a signal, a dead worker): not charged to --trials."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Every param's value, ``default`` included (empty: a free proposal not yet started)."""
    cause: str | None = None
    """Why its launch failed (tuner/launcher/failure_cause.py), when it did."""
    retry_of: int | None = None
    """The trial it launches again (a dead worker's, or a failure's that may be chance)."""

    @classmethod
    def of(cls, number: int, state: str, found: Mapping[str, Any]) -> TrialView:
        retry_of = found.get(attrs.RETRY_OF)
        return cls(
            number=number,
            state=state,
            role=found.get(attrs.ROLE),
            proposer=found.get(attrs.PROPOSER),
            config=found.get(attrs.CONFIG),
            launched=bool(found.get(attrs.LAUNCHED)),
            worker=found.get(attrs.WORKER),
            fidelity=found.get(attrs.FIDELITY),
            interrupted=bool(found.get(attrs.CUT_SHORT)),
            params=dict(found.get(attrs.PARAMS) or {}),
            cause=found.get(attrs.FAILURE_CAUSE),
            retry_of=int(retry_of) if retry_of is not None else None,
        )

    @property
    def screening(self) -> bool:
        return self.fidelity == attrs.SCREEN

    @property
    def waiting(self) -> bool:
        return self.state == "WAITING"

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def finished(self) -> bool:
        return self.state in ("COMPLETE", "PRUNED", "FAIL")

    @property
    def started(self) -> bool:
        """Its server reached health: measured, or pruned on its rounds."""
        return self.launched and self.state in ("COMPLETE", "PRUNED")
