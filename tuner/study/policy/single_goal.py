"""One objective: the incumbent, its confirmations, pruning, the checks and the search.

The goal of a study of one ``objective:``. The incumbent is the configuration whose
significant gains reset the patience: the best trusted configuration, replaced only when
another beats it beyond the noise. What looks better than it is confirmed
(tuner/study/policy/confirmations.py); a running search trial that cannot reach the best
is pruned after a round; before the answer come the final checks
(tuner/study/policy/final_checks.py); proposals come from the probe's nominee, the local
search and, when it has nothing left, optuna's TPE with the frozen params at default
(tuner/study/policy/proposals.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from tuner import stats
from tuner.space.settings import is_default
from tuner.space.spec import DEFAULT, SpaceSpec
from tuner.study import attrs
from tuner.study.facts.analysis import ConfigResult, StudyAnalysis
from tuner.study.policy import final_checks, final_comparison, futility, proposals, screening
from tuner.study.policy.confirmations import model_backed, needs_confirmation
from tuner.study.policy.decisions import Launch, Stop
from tuner.study.policy.snapshot import Snapshot
from tuner.study.state import StudyState, TrialView

PruneCheck = Callable[[Sequence[float]], "str | None"]


@dataclasses.dataclass(frozen=True)
class _Weighed:
    """The futility check's chances: the largest of the untried neighbours', and each
    unconfirmed configuration's (``launched``) of beating the incumbent by min_gain."""

    untried: float
    launched: list[ConfigResult]
    chances: list[float]


_Seen = tuple[StudyAnalysis, tuple[TrialView, ...], StudyState]

PLATEAU_LOOKS = 4
"""Confirmation launches a screened study makes once its patience is used up (the last
looks before the plateau stop). Bounded: a study with nothing to find would otherwise go
on looking at one hope after another and never reach its plateau."""


class SingleGoal:
    """The goal of a single-objective study (see the module)."""

    tpe_only = False
    """The local search proposes (unless the space says ``search.method: tpe``)."""

    def __init__(self) -> None:
        # The last futility check, and the study it weighed: (facts, trials, state).
        self._weighed: tuple[_Seen, _Weighed] | None = None

    def track(self, snap: Snapshot) -> tuple[Snapshot, list[str]]:
        """The incumbent moved on when the best beat it significantly (patience reset)."""
        facts, state = snap.facts, snap.state
        best = facts.best
        if best is None or snap.finished is None:
            return snap, []
        incumbent = state.incumbent
        if incumbent is None or not facts.eligible_hash(incumbent):
            new = state.replace(incumbent=best.config_hash, last_gain_trial=snap.finished)
            return snap.with_state(new), []
        if best.config_hash != incumbent and facts.significantly_better(
            best.config_hash, incumbent
        ):
            new = state.replace(incumbent=best.config_hash, last_gain_trial=snap.finished)
            return snap.with_state(new), [
                f"new best: trial {best.trials[0]} ({facts.describe(best)})"
            ]
        return snap, []

    def confirmations(self, snap: Snapshot) -> list[Launch]:
        """Launch again what looks better than the incumbent and is unconfirmed."""
        facts = snap.facts
        waiting = snap.waiting_configs()
        out = []
        wanted = needs_confirmation(facts, snap.state.incumbent)
        backed = model_backed(facts, snap.state.incumbent, snap.search_spec, snap.rng(stream=3))
        if backed is not None and all(c.config_hash != backed.config_hash for c in wanted):
            wanted.append(backed)
        last = None if wanted else self.last_look(snap)
        if last is not None:
            wanted.append(last[0])
        for config in wanted:
            if config.config_hash in waiting:
                continue
            trial = config.trials[-1]
            if last is not None and config is last[0]:
                message = (
                    f"trial {trial}: the model of effects gives it a {last[1]:.0%} chance of "
                    f"beating the best by {snap.spec.stop.min_gain:.0%}; launching it "
                    f"again before {last[2]}"
                )
            elif facts.eligible(config):
                message = f"trial {trial} looks better than the best; launching it again to confirm"
            else:
                limits = facts.limit_checks[config.config_hash].describe()
                message = f"trial {trial} may break a limit ({limits}); launching it again"
            out.append(
                final_checks.confirm_launch(snap, config.config_hash, config.params, message)
            )
        return out

    def last_look(self, snap: Snapshot) -> tuple[ConfigResult, float, str] | None:
        """Before the futility stop, the configuration launched once that the model of
        effects gives the largest chance of beating the incumbent by min_gain, with that
        chance and the stop it comes before, when every untried neighbour is below
        stop.futility and it is not. With screening, before the plateau stop too.

        The futility stop weighs untried neighbours only: a configuration launched once,
        a little above the incumbent and not yet confirmed, can be the optimum the model
        still gives a fair chance, and stopping then gives it away. One more launch of the
        likeliest settles it: each configuration gets such launches only until it is
        confirmed (1 + stop.confirmations launches: one more, by default).

        Before the plateau stop of a screened study the same holds: configurations launched
        two or three times at a small gain, none confirmed, would be left behind. There a
        look costs a screening launch (minutes); without screening it would cost a model
        load of --trials, so the plateau stops without one.
        """
        weighed = self._futility(snap)
        if weighed is None or not weighed.launched:
            return None
        looked: Sequence[int] = range(len(weighed.launched))
        if weighed.untried < snap.spec.stop.futility:
            before = "the futility stop"
        elif _screened_plateau(snap) and snap.confirmations_past_patience() < PLATEAU_LOOKS:
            before = "the plateau stop"
            # Only what a screening launch can settle: a setting screening cannot judge
            # would spend a model load of --trials here.
            looked = [
                i
                for i in looked
                if screening.fidelity(snap.spec, attrs.CONFIRM, weighed.launched[i].params)
                == attrs.SCREEN
                and snap.has_room(weighed.launched[i].params)
            ]
        else:
            return None  # the search goes on: no stop to look before
        if not looked:
            return None
        best = max(looked, key=weighed.chances.__getitem__)
        chance = weighed.chances[best]
        if chance < snap.spec.stop.futility:
            return None
        return weighed.launched[best], chance, before

    def _futility(self, snap: Snapshot) -> _Weighed | None:
        """The futility check's chances (untried neighbours, and the configurations launched
        once), or None before it may stop the search. One fit a decision: the last look
        and the stop rule ask it of the same study (remembered by its trials and facts)."""
        stop, facts = snap.spec.stop, snap.facts
        baseline = facts.baseline
        if stop.futility <= 0 or baseline is None:
            return None
        if snap.search_trials_since_gain() < futility.MIN_TRIALS:
            return None
        if self._weighed is not None:
            (seen_facts, seen_trials, seen_state), seen = self._weighed
            if seen_facts is facts and seen_trials == snap.trials and seen_state == snap.state:
                return seen
        incumbent = facts.configs.get(snap.state.incumbent or "") or baseline
        waiting = snap.waiting_configs()
        launched = [
            c
            for c in facts.configs.values()
            if c is not incumbent
            and not facts.confirmed(c)
            and facts.eligible(c)
            and c.config_hash not in waiting
            and all(is_default(c.params.get(name, DEFAULT)) for name in snap.frozen)
        ]
        untried, chances = futility.chances_of_gain(
            snap.search_spec,
            facts.observations(),
            incumbent.params,
            exclude=snap.tried(),
            rng=snap.rng(stream=1),
            min_gain=stop.min_gain,
            max_changes=snap.spec.search.max_changes,
            frozen=snap.frozen,
            launched=[c.params for c in launched],
        )
        weighed = _Weighed(untried, launched, chances)
        self._weighed = ((facts, snap.trials, snap.state), weighed)
        return weighed

    def final_checks(self, snap: Snapshot) -> tuple[list[Launch], Snapshot]:
        return final_checks.final_checks(snap)

    def final_comparison(self, snap: Snapshot, trigger: Stop) -> tuple[list[Launch], Snapshot]:
        return final_comparison.launches(snap, trigger)

    def plateau_detail(self, snap: Snapshot) -> str:
        facts = snap.facts
        incumbent = facts.configs.get(snap.state.incumbent or "")
        n = snap.search_trials_since_gain()
        noise = facts.noise_rel_sd()
        noise_text = f" (±{noise:.1%})" if noise is not None else ""
        who = f"trial {incumbent.trials[0]}" if incumbent else "the best"
        return f"no configuration beat {who} by more than the noise{noise_text} in {n} trials"

    def futile_chance(self, snap: Snapshot) -> float | None:
        """The model's largest chance that an untried neighbour of the incumbent beats it by
        min_gain, when that is below stop.futility and futility.MIN_TRIALS search trials
        have run without a gain; else None (search on)."""
        weighed = self._futility(snap)
        if weighed is None:
            return None
        return weighed.untried if weighed.untried < snap.spec.stop.futility else None

    def futile_detail(self, snap: Snapshot, chance: float) -> str:
        incumbent = snap.facts.configs.get(snap.state.incumbent or "")
        who = f"trial {incumbent.trials[0]}" if incumbent else "the best"
        n = snap.search_trials_since_gain()
        stop = snap.spec.stop
        patience = snap.spec.search_patience
        return (
            f"no configuration beat {who} by more than the noise in {n} trials, and the model "
            f"of the settings' effects gives no untried change to it more than a "
            f"{chance * 100:.1f}% chance of beating it by {stop.min_gain * 100:g}% (futility "
            f"stop below {stop.futility * 100:g}%; patience {patience} not used up)"
        )

    def proposal(self, snap: Snapshot) -> tuple[list[Launch], Snapshot, bool | None, list[str]]:
        """The next search launch (tuner/study/policy/proposals.py)."""
        return proposals.proposal(snap)

    # --- what optuna is told ---------------------------------------------------------------

    def optuna_objectives(self, spec: SpaceSpec) -> tuple[stats.Direction, str]:
        """The study's direction and the name of its objective, as optuna takes them."""
        return spec.direction, spec.objective.label  # output_throughput/GPU per GPU

    def optuna_value(
        self, mean: float, per_objective: Callable[[], list[float]]
    ) -> float | list[float]:
        """A launch's value for optuna: its mean over rounds of the objective."""
        return mean

    def reported_rounds(self, rounds: Sequence[float]) -> Sequence[float]:
        """The round values reported to optuna as intermediate values (its pruners')."""
        return rounds

    # --- while a trial runs --------------------------------------------------------------

    def prune_check(self, facts: StudyAnalysis) -> PruneCheck | None:
        """A function of a search trial's rounds so far: why to stop it early, or None."""
        best = facts.best
        spec = facts.space.spec
        if best is None:
            return None

        def check(rounds: Sequence[float]) -> str | None:
            if stats.should_prune(
                rounds,
                best.estimate,
                direction=spec.direction,
                confidence=spec.stop.confidence,
                noise=facts.noise,
            ):
                return (
                    f"pruned after {len(rounds)} round{'s' if len(rounds) != 1 else ''}: "
                    "cannot reach the best "
                    f"(trial {best.trials[0]}) at {spec.stop.confidence:.0%} confidence"
                )
            return None

        return check


def _screened_plateau(snap: Snapshot) -> bool:
    """The plateau stop is due in a study with screening (where the last look costs a
    screening launch, minutes, not a model load)."""
    return snap.spec.screening is not None and snap.patience_used_up()
