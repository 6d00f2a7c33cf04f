"""The final comparison: before a change is the answer, it and the defaults run again.

When the search is over (a stop rule fired, or the budget's last launches are reached)
and its candidate (``StudyAnalysis.candidate``) is a change from the defaults, the
candidate and the defaults are launched ``stop.final_launches`` times each (more, up to
``stop.final_launches_max``, when the gain the search saw is small against the noise),
interleaved (C B B C ...), with role ``final``; the stop that fired is remembered (study attr
``tuner_final_trigger``) and recorded once those launches are done. The answer then
rests on them alone (tuner/stats/final.py, tuner/study/facts/final.py). Once per
candidate: a candidate already compared is not launched again.

Pure: a snapshot in; the launches (and the state after) out, or nothing.
"""

from __future__ import annotations

from tuner.space.settings import baseline_params
from tuner.stats.power import final_launches_for
from tuner.stats.recommend import Recommendation
from tuner.stats.student_t import t_critical
from tuner.study import attrs
from tuner.study.policy.decisions import Launch, Stop
from tuner.study.policy.snapshot import Snapshot


def order(k: int) -> list[bool]:
    """The interleaving of ``k`` launches each: True for the candidate (C B B C C B ...),
    so that the mean launch time of both sides is the same and a linear drift cancels."""
    out: list[bool] = []
    for pair in range(k):
        out += [True, False] if pair % 2 == 0 else [False, True]
    return out


def pending(snap: Snapshot) -> bool:
    """A final launch waits or runs: the study waits for the comparison."""
    return any(t.role == attrs.FINAL and (t.waiting or t.running) for t in snap.trials)


def due_stop(snap: Snapshot) -> Stop | None:
    """The remembered stop, once the final comparison's launches are all done."""
    trigger = snap.state.final_trigger
    if not trigger or pending(snap):
        return None
    return Stop(str(trigger.get("reason", attrs.BUDGET)), str(trigger.get("detail", "")))


def launches_a_side(snap: Snapshot, candidate: Recommendation) -> int:
    """How many launches a side this candidate's comparison takes: stop.final_launches,
    or up to stop.final_launches_max when the gain the search saw (over the defaults) is
    small against the study's noise (stats.power.final_launches_for). The gain aimed at is
    one standard error below the search's estimate: the search chose the candidate for
    looking good, so its estimate runs high (the winner's curse)."""
    stop = snap.spec.stop
    seen = candidate.recommended_vs_baseline
    noise = snap.facts.noise
    most = snap.spec.final_launches_most
    if seen is None or noise is None or most == stop.final_launches:
        return stop.final_launches
    sd = seen.noise_rel / t_critical(seen.confidence, seen.dof) if seen.noise_rel > 0 else 0.0
    return final_launches_for(
        seen.gain - sd,
        noise,
        fewest=stop.final_launches,
        most=most,
        rounds=snap.spec.benchmark.rounds,
        min_gain=stop.min_gain,
        confidence=stop.final_confidence,
        direction=snap.spec.direction,
    )


def launches(snap: Snapshot, trigger: Stop) -> tuple[list[Launch], Snapshot]:
    """The final comparison's launches before ``trigger`` is recorded, or nothing: the
    candidate is the defaults, was compared already, or the budget has no room left for
    ``stop.final_launches`` launches a side (never fewer: the answer's test is the one the
    study's settings promise; the search's reserve keeps that room, see final_reserve)."""
    facts, spec = snap.facts, snap.spec
    candidate = facts.candidate()
    if candidate is None or candidate.keep_defaults or facts.baseline is None:
        return [], snap
    if not facts.eligible(facts.baseline):
        return [], snap  # the defaults break a limit: the answer is what meets it
    key = candidate.recommended
    if any(t.role == attrs.FINAL and t.config == key for t in snap.trials):
        return [], snap  # compared once: the answer is that comparison's
    k = min(launches_a_side(snap, candidate), snap.full_left // 2)
    if k < spec.stop.final_launches:
        return [], snap
    config, baseline = facts.configs[key], facts.baseline
    defaults = baseline_params(spec)
    queued = []
    for slot, is_candidate in enumerate(order(k)):
        queued.append(
            Launch(
                config.params if is_candidate else defaults,
                attrs.FINAL,
                {attrs.CONFIG: key if is_candidate else baseline.config_hash},
                claim=(attrs.FINAL, f"{key}:{slot}"),
                message=(
                    f"final comparison: trial {config.trials[0]} and the defaults, "
                    f"{k} fresh launch{'es' if k != 1 else ''} each, interleaved, before "
                    "the answer (the search's own launches only chose it)"
                )
                if slot == 0
                else None,
            )
        )
    remembered = {"reason": trigger.reason, "detail": trigger.detail}
    return queued, snap.with_state(snap.state.replace(final_trigger=remembered))
