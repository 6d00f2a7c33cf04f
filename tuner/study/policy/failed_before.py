"""Failed launches teach the search: what failed for its settings is not launched again.

Each failed launch has a cause (tuner/launcher/failure_cause.py, the trial attr
``tuner_failure_cause``). A cause the settings made (out of memory, an NCCL error, a flag
refused) counts at its first failure: it is deterministic. One that may be chance (a
timeout, a crash) counts once the configuration, launched once more (``retries``), failed
again. One from outside (a port taken, an interruption) never counts, nor a failure of the
defaults. A launch's values are its changed settings (``param=value``, never ``default``);
a launch that reached health clears its values. Counted failures refuse, in later search
launches (tuner/study/gate.py; the local search does not propose what is refused):

1. **a value alone**: one that two counted failures of one kind share (running out of
   memory is one kind, wherever it happened), no launch that started held, and neither
   failure is explained by another value refused alone;
2. **the combination**: a configuration holding every value of a counted failure that no
   value refused alone explains, unless a launch holding them all started;
3. **apart first**: a configuration holding a suspect (a value of such a failure that no
   launch that started held) beside another value no launch that started held: a second
   failure must say which value fails, never blame the one launched beside it.

While a failure has two suspects or more, the local search changes one untried value at a
time (a group that failed again would not say which value failed), and it leaves out a
failure's last suspect (the others started since) and a suspect whose setting failed by
itself at another value: probably what failed, though not refused, since two settings may
fail only together. A failure on a screening launch counts for a full one when it ran out
of memory (random weights take the memory real ones do); for a screening launch every
failure counts. docs/search.md ("Failed launches") has the rule and its limits. Pure:
trials in, refusals out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tuner.launcher.failure_cause import MEMORY, blame, words
from tuner.space.settings import canonical_value, is_default
from tuner.study import attrs
from tuner.study.state import TrialView

Value = tuple[str, str]
"""One changed setting: (param, its value as text)."""


def values_of(params: Mapping[str, object]) -> frozenset[Value]:
    """A configuration's changed settings, as the rule compares them."""
    return frozenset((k, canonical_value(v)) for k, v in params.items() if not is_default(v))


def label(values: Iterable[Value]) -> str:
    return " with ".join(f"{k}={v}" for k, v in sorted(values))


@dataclass(frozen=True)
class Refused:
    """Values not launched again, the failures that refuse them and what the words say."""

    values: frozenset[Value]
    failed: tuple[int, ...]
    """Every failed launch holding them all (trial numbers)."""
    causes: tuple[str, ...]
    alone: bool
    """A value refused alone (rule 1), else a combination (rule 2)."""

    @property
    def learned_at(self) -> int:
        return max(self.failed)

    def sentence(self) -> str:
        """``max_num_seqs=1024 failed 2 of 2 launches: CUDA out of memory during graph
        capture; not launched again``."""
        n = len(self.failed)
        together = not self.alone and len(self.values) > 1
        again = "not launched together again" if together else "not launched again"
        return f"{label(self.values)} failed {n} of {n} launches: {_why(self.causes)}; {again}"


@dataclass(frozen=True)
class Suspect:
    """A value of a counted failure that no launch that started held (rule 3)."""

    value: Value
    trial: int
    cause: str
    last: bool
    """The failure's other values all started since: probably what failed."""
    likely: bool = False
    """Its setting failed at another value by itself: the likelier culprit, whose
    companions the local search tries first."""

    def sentence(self) -> str:
        return (
            f"{label([self.value])} failed in trial {self.trial} ({words(self.cause)}) and "
            "has not started since: launched beside settings that started only, so that a "
            "second failure says which value fails; not launched"
        )


@dataclass(frozen=True)
class Lessons:
    """What a study's failed launches refuse, for launches of one fidelity."""

    refused: tuple[Refused, ...] = ()
    suspects: tuple[Suspect, ...] = ()
    cleared: frozenset[Value] = frozenset()
    counted: bool = False
    """A failure counted."""

    @property
    def ambiguous(self) -> bool:
        """A failure has two suspects or more: the local search then changes one untried
        value at a time, until it is told which failed (a group would fail again unread)."""
        trials = [s.trial for s in self.suspects]
        return len(trials) != len(set(trials))

    def refusal(self, params: Mapping[str, object]) -> str | None:
        """Why a configuration is not launched (rules 1 to 3), or None."""
        held = values_of(params)
        for item in self.refused:
            if item.values <= held:
                return item.sentence()
        for suspect in self.suspects:
            if suspect.value in held and any(v not in self.cleared for v in held - {suspect.value}):
                return suspect.sentence()
        return None

    def avoids(self, params: Mapping[str, object]) -> bool:
        """What the local search does not propose: a refusal, a failure's last suspect, or
        a suspect whose setting failed by itself at another value (the likelier culprit)."""
        held = values_of(params)
        return self.refusal(params) is not None or any(
            (s.last or s.likely) and s.value in held for s in self.suspects
        )

    def learned(self, number: int) -> list[str]:
        """The refusals trial ``number``'s failure made: said once, when learned."""
        return [r.sentence() for r in self.refused if r.learned_at == number]


NO_LESSONS = Lessons()


def lessons(trials: Sequence[TrialView], *, screening: bool = False) -> Lessons:
    """The refusals the study's finished launches make for a launch of one fidelity."""
    counted = [t for t in _counted(trials) if screening or not t.screening or t.cause in MEMORY]
    if not counted:
        return NO_LESSONS
    started = [values_of(t.params) for t in trials if t.started]
    cleared = frozenset().union(*started)
    alone = _alone(counted, cleared)
    explained = {t.number for t in counted if values_of(t.params) & alone}
    failures = [t for t in trials if t.finished and blame(t.cause) != "outside" and t.cause]
    refused = [_refused(frozenset({v}), failures, alone=True) for v in sorted(alone)]
    suspects = []
    for t in counted:
        if t.number in explained:
            continue
        held = values_of(t.params)
        if not any(held <= s for s in started):
            refused.append(_refused(held, failures, alone=False))
        left = sorted(held - cleared)
        suspects += [Suspect(v, t.number, str(t.cause), last=len(left) == 1) for v in left]
    # a setting that failed by itself at one value: its other values are the likelier
    # culprits of the failures they are suspects of (max-num-seqs runs out at 1024 and 512)
    alone_failed = {r.values for r in refused if len(r.values) == 1}
    failed_at = {next(iter(values)) for values in alone_failed}
    suspects = [
        dataclasses.replace(
            s, likely=any(k == s.value[0] and (k, v) != s.value for k, v in failed_at)
        )
        for s in suspects
    ]
    return Lessons(tuple(refused), tuple(suspects), cleared, counted=True)


def retries(trials: Sequence[TrialView]) -> list[TrialView]:
    """Failed search launches of a cause that may be chance, their configuration not
    launched again yet: each gets one more launch, to tell chance from its settings."""
    later = {t.config for t in trials if t.retry_of is not None}
    return [
        t
        for t in trials
        if t.state == "FAIL"
        and t.role == attrs.SEARCH
        and blame(t.cause) == "retry"
        and t.retry_of is None
        and t.config not in later
        and t.params
    ]


def _counted(trials: Sequence[TrialView]) -> list[TrialView]:
    """The failures that count: a settings cause at once, a chance one when its
    configuration failed twice; never one from outside, never the defaults'."""
    failed = [t for t in trials if t.finished and t.cause and values_of(t.params)]
    chance: dict[str | None, int] = {}
    for t in failed:
        if blame(t.cause) != "outside":
            chance[t.config] = chance.get(t.config, 0) + 1
    return [
        t
        for t in failed
        if blame(t.cause) == "settings" or (blame(t.cause) == "retry" and chance[t.config] >= 2)
    ]


def _alone(counted: Sequence[TrialView], cleared: frozenset[Value]) -> frozenset[Value]:
    """Rule 1 to a fixed point: values that the counted failures of two configurations of
    one kind share, each failure not explained by another value already refused alone."""
    alone: set[Value] = set()
    while True:
        support: dict[tuple[str, Value], set[str | None]] = {}
        for t in counted:
            held = values_of(t.params)
            for v in held - cleared - alone:
                if not (held & alone):
                    key = ("memory" if t.cause in MEMORY else str(t.cause), v)
                    support.setdefault(key, set()).add(t.config)
        found = {v for (_, v), configs in support.items() if len(configs) >= 2}
        if not found:
            return frozenset(alone)
        alone |= found


def _refused(values: frozenset[Value], failures: Sequence[TrialView], *, alone: bool) -> Refused:
    holding = sorted((t for t in failures if values <= values_of(t.params)), key=lambda t: t.number)
    return Refused(
        values=values,
        failed=tuple(t.number for t in holding),
        causes=tuple(str(t.cause) for t in holding),
        alone=alone,
    )


def _why(causes: Iterable[str]) -> str:
    return ", ".join(dict.fromkeys(words(c) for c in causes))


@dataclass
class FidelityLessons:
    """The lessons for full and for screening launches, each read once when first asked."""

    trials: Sequence[TrialView]
    _found: dict[bool, Lessons] = field(default_factory=dict)

    def of(self, screening: bool) -> Lessons:
        if screening not in self._found:
            self._found[screening] = lessons(self.trials, screening=screening)
        return self._found[screening]
