"""What the policy decides, as values: launches to queue, a stop, the state after.

``Decision`` is the whole answer of tuner/study/policy/next_launch.py to one snapshot of
the study (each of its steps answers with a part of one: ``goes_on``);
tuner/study/run/apply.py is the one place that carries it out (claims and enqueues the
launches, writes the state, says the messages, records the stop).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tuner.space.spec import Scalar
from tuner.study import attrs
from tuner.study.facts.plan import CostPlan
from tuner.study.state import StudyState


@dataclass(frozen=True)
class Launch:
    """One launch to queue (``copies`` times), with why it was decided."""

    params: Mapping[str, Scalar]
    role: attrs.Role
    extra_attrs: Mapping[str, object] = field(default_factory=dict)
    """Trial attrs beside the role and params: the configuration, the proposer, ..."""
    claim: tuple[str, str] | None = None
    """(kind, key) of a launch that must happen once in all workers: queued only by the
    worker whose claim goes through (tuner/study/run/queue.py)."""
    copies: int = 1
    message: str | None = None
    """Said once it is queued (not when another worker's claim won)."""

    @property
    def config(self) -> str | None:
        found = self.extra_attrs.get(attrs.CONFIG)
        return str(found) if found is not None else None

    @property
    def fixed_fidelity(self) -> str | None:
        """A fidelity the policy fixed (the full baselines); None: the rule decides."""
        found = self.extra_attrs.get(attrs.FIDELITY)
        return str(found) if found is not None else None

    @property
    def proposer(self) -> str | None:
        found = self.extra_attrs.get(attrs.PROPOSER)
        return str(found) if found is not None else None

    @property
    def retry_of(self) -> int | None:
        """The failed trial this launch repeats, if it is a second chance."""
        found = self.extra_attrs.get(attrs.RETRY_OF)
        return int(str(found)) if found is not None else None


@dataclass(frozen=True)
class Stop:
    """Why the study (or only this worker, ``whole_study`` False) stops now."""

    reason: str
    detail: str
    whole_study: bool = True


@dataclass(frozen=True)
class Decision:
    """The policy's answer to one snapshot (see the module)."""

    launches: tuple[Launch, ...] = ()
    stop: Stop | None = None
    state: StudyState | None = None
    """The study's state after the decision (None: as it was)."""
    messages: tuple[str, ...] = ()
    """Said before the launches are queued, in order."""
    local_done: bool | None = None
    """The local search's answer this time: True when it had nothing left (None: not asked)."""
    plan: CostPlan | None = None
    """The cost plan to say and record, once."""
    goes_on: bool = False
    """Only a part of the decision: the later steps of tuner/study/policy/next_launch.py
    decide too, seeing its launches queued and its state (False: the decision ends here)."""
