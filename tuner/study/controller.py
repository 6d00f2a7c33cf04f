"""The sweep's controller: after every trial, what to launch next and whether to stop.

``SweepController`` is the optuna callback of ``study.optimize``. After every trial it
re-reads the study's launches (tuner/study/analysis.py), tracks the incumbent (the best
configuration whose gains were significant), queues confirmation launches of
configurations that look better than it, queues the local search's next proposal
(tuner/study/search.py), and stops the study on the budget, a plateau (``stop.patience``
search trials without a significant gain, after the final checks: the best without its
idle settings, and a close call settled), the futility stop (the model rules out every
untried neighbour of the incumbent, tuner/study/futility.py; the same final checks),
total failure, an exhausted space, or the probe's verdict that nothing is left to search
(tuner/study/probing.py); another worker's stop (tuner/study/peers.py) and this worker's
own budget (--worker-trials) end this worker's part. Once, after the baseline launches,
it says and records the cost plan (tuner/study/plan.py). It also hands the objective a
pruning check for the rounds of a running trial.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner import stats
from tuner.events import SweepObserver
from tuner.space.objectives import is_multi_objective
from tuner.space.settings import is_default, settings_from_params
from tuner.space.spec import DEFAULT, Space, SpaceSpec
from tuner.storage import Store
from tuner.study import (
    analysis,
    attrs,
    exhaustion,
    final_checks,
    futility,
    pareto,
    pareto_sweep,
    peers,
    plan,
    queue,
    search,
    verdicts,
)
from tuner.study.limit_steering import fit_steering, propose_avoiding
from tuner.study.probing import SweepProbe
from tuner.trial.runner import PruneCheck


class SweepController:
    """The optuna callback that decides what comes next and when to stop."""

    def __init__(
        self,
        space: Space,
        store: Store,
        *,
        n_trials: int,
        observer: SweepObserver,
        seed: int | None = None,
        probe: SweepProbe | None = None,
        claims: queue.Claims | None = None,
        worker_trials: int | None = None,
        recover: Callable[[], object] | None = None,
    ) -> None:
        self.space = space
        self.probe = probe  # the all-reduce probe (docs/probe.md), when the space has one
        self.seed = seed
        self.spec = space.spec
        self.store = store
        self.n_trials = n_trials
        self.observer = observer
        # Several objectives (tuner/study/pareto_sweep.py): no incumbent, no local search,
        # no pruning or final checks, all of which model one objective.
        self.multi = is_multi_objective(self.spec)
        self._idle_proposals = 0
        self._local_done = False  # the local search's last answer: nothing left to propose
        # Several workers (docs/distributed.md): once-only launches are claimed; a worker may
        # have a budget of its own; dead workers' trials are recovered after every trial.
        self.claims = claims
        self.worker = claims.worker if claims is not None else None
        self.worker_trials = worker_trials
        self.recover = recover
        self.stop_seen: str | None = None
        """The study's STOPPED_BY when this worker started: a change is another's stop."""
        self.worker_stop: tuple[str, str] | None = None
        """Why this worker alone stopped (its own budget, another worker's stop)."""

    # --- queries used by the objective ---------------------------------------------------

    def launched(self, study: optuna.Study) -> int:
        return sum(
            1
            for t in study.get_trials(deepcopy=False)
            if t.user_attrs.get(attrs.LAUNCHED) and t.state != TrialState.RUNNING
        )

    def previous_trial_of(self, study: optuna.Study, config_hash: str, number: int) -> int | None:
        for t in study.get_trials(deepcopy=False):
            if (
                t.number != number
                and t.user_attrs.get(attrs.CONFIG) == config_hash
                and t.user_attrs.get(attrs.LAUNCHED)
            ):
                return t.number
        return None

    def prune_check(self, study: optuna.Study) -> PruneCheck | None:
        """A function of the rounds so far: a reason to stop this trial early, or None."""
        result = analysis.analyze(self.store, self.space)
        best = result.best
        if best is None or self.multi:  # a launch slow on one objective may win another
            return None

        def check(rounds: Sequence[float]) -> str | None:
            if stats.should_prune(
                rounds,
                best.estimate,
                direction=self.spec.direction,
                confidence=self.spec.stop.confidence,
                noise=result.noise,
            ):
                return (
                    f"pruned after {len(rounds)} round{'s' if len(rounds) != 1 else ''}: "
                    "cannot reach the best "
                    f"(trial {best.trials[0]}) at {self.spec.stop.confidence:.0%} confidence"
                )
            return None

        return check

    # --- the callback ----------------------------------------------------------------------

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.observer.trial_finished(trial, self.spec.objective.metric)
        if self.recover is not None:
            self.recover()  # a dead worker's trial: failed, its configuration queued again
        peer_stop = peers.stopped_by_peer(study, self.stop_seen)
        if peer_stop is not None:
            self.worker_stop = peer_stop
            study.stop()
            return
        launched_now = trial.user_attrs.get(attrs.LAUNCHED, False)
        self._idle_proposals = 0 if launched_now else self._idle_proposals + 1
        result = analysis.analyze(self.store, self.space)
        self._save_noise(study, result)
        if self.probe is not None:
            self.probe.update(study, result)  # NCCL params it finds cannot help: frozen
        self._announce_plan(study, result)
        if self.multi:
            pareto_sweep.track(study, result, trial, self.observer)
        else:
            self._track_gain(study, result, trial)  # first: confirmations screen against it
        self.queue_confirmations(study, result)

        verdict = self._stop_verdict(study, result)
        if verdict is not None:
            self.finish(study, *verdict)
            study.stop()  # optuna's own way out of optimize(), after this callback
            return
        mine = self.worker_trials
        if mine is not None and peers.launched_by(study, self.worker) >= mine:
            self.worker_stop = (
                "worker_budget",
                f"this worker used its {self.worker_trials} launches (--worker-trials); "
                "the study goes on with the other workers",
            )
            study.stop()
            return
        left = self.n_trials - self.launched(study)
        if left == 1 + self.spec.stop.confirmations and not self._confirmation_pending(study):
            # The budget's last launches go to the checks before the answer, if any.
            self._queue_final_checks(study, result)
        self.queue_proposal(study, result)  # only when nothing else waits

    def _stop_verdict(
        self, study: optuna.Study, result: analysis.StudyAnalysis
    ) -> tuple[str, str] | None:
        """(reason, sentence) when the sweep should stop now, else None."""
        if self.launched(study) >= self.n_trials:
            return "budget", f"used the budget of {self.n_trials} launches"
        if result.all_failed(min_launches=self.spec.stop.baseline_launches):
            return "all_failed", "every launch failed; see `tuner trials` for the reasons"
        probe_stop = self.probe.stop(study) if self.probe is not None else None
        if probe_stop is not None:
            return probe_stop
        if self._confirmation_pending(study):
            pass  # a confirmation queued by this very trial may still reset the patience
        elif self._plateau(study):
            # The checks before the answer are worth their launches.
            if self._queue_final_checks(study, result):
                return None
            if self.multi:
                since = self._search_trials_since_gain(study)
                return "plateau", pareto_sweep.plateau_sentence(study, since)
            return "plateau", self._plateau_sentence(study, result)
        elif (chance := self._futile(study, result)) is not None:
            if self._queue_final_checks(study, result):
                return None
            return "futile", self._futile_sentence(study, result, chance)
        return self._exhausted(study)

    def _exhausted(self, study: optuna.Study) -> tuple[str, str] | None:
        """tuner/study/exhaustion.py: the open grid all tried, or repeats in a row."""
        pending = self._confirmation_pending(study)
        # Where optuna's TPE is the only proposer (several objectives, search.method: tpe)
        # there is no local search to wait for: a used-up grid ends the sweep at once.
        tpe_only = self.multi or self.spec.search.method != "local"
        return exhaustion.verdict(
            self._search_spec(study),
            self.probe.frozen(study) if self.probe is not None else frozenset(),
            self._tried(study) if (self._local_done or tpe_only) and not pending else None,
            idle=self._idle_proposals,
            local_done=self._local_done,
            tpe_only=tpe_only,
        )

    def _tried(self, study: optuna.Study) -> set[str]:
        """The configurations proposed so far: launched, queued, refused or repeated."""
        return {
            t.user_attrs[attrs.CONFIG]
            for t in study.get_trials(deepcopy=False)
            if attrs.CONFIG in t.user_attrs
        }

    def finish(self, study: optuna.Study, reason: str, detail: str) -> None:
        self.store.update_study(study.study_name, stop_reason=reason, stop_detail=detail)
        study.set_user_attr(attrs.STOP_REASON, reason)
        study.set_user_attr(attrs.STOP_DETAIL, detail)
        # Every trial's verdict from the whole study, for optuna-dashboard.
        verdicts.record_final(study, analysis.analyze(self.store, self.space))
        marker = peers.mark_stop(study, reason, self.worker)  # the others stop too
        self.stop_seen = marker or self.stop_seen

    def claim(self, kind: str, key: str) -> bool:
        """Whether this worker takes a once-only launch (always, without claims)."""
        return self.claims is None or self.claims.take(kind, key)

    def queue_confirmations(
        self, study: optuna.Study, result: analysis.StudyAnalysis | None = None
    ) -> None:
        """Launch again any configuration that looks better than the best but is unconfirmed."""
        result = result or analysis.analyze(self.store, self.space)
        waiting = {
            t.user_attrs.get(attrs.CONFIG)
            for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        }
        incumbent = study.user_attrs.get(attrs.INCUMBENT)
        trials = study.get_trials(deepcopy=False)
        wanted = (
            pareto.needs_confirmation(result)
            if self.multi
            else result.needs_confirmation(against=incumbent)
        )
        for config in wanted:
            if config.config_hash in waiting or not self.claim_confirmation(trials, config):
                continue
            queue.enqueue_launch(
                study, self.spec, config.params, "confirm", {attrs.CONFIG: config.config_hash}
            )
            self.observer.message(
                f"trial {config.trials[-1]} looks better than the defaults on an objective "
                "and no trusted configuration dominates it; launching it again to confirm"
                if self.multi
                else f"trial {config.trials[-1]} looks better than the best; "
                "launching it again to confirm"
                if result.eligible(config)
                else f"trial {config.trials[-1]} may break a limit "
                f"({result.limit_checks[config.config_hash].describe()}); launching it again"
            )

    def claim_confirmation(
        self, trials: Sequence[FrozenTrial], config: analysis.ConfigResult
    ) -> bool:
        """One worker queues the next launch of a configuration: the key is the configuration
        and how many trials it has had, so a worker with an older view loses the claim."""
        count = sum(1 for t in trials if t.user_attrs.get(attrs.CONFIG) == config.config_hash)
        return self.claim("confirm", f"{config.config_hash}:{count}")

    def queue_proposal(self, study: optuna.Study, result: analysis.StudyAnalysis) -> None:
        """Queue the local search's next launch near the incumbent, unless a trial waits.

        Nothing is queued with ``search.method: tpe``, before the baseline is measured, or
        when every neighbour of the incumbent has been tried: optuna's TPE then proposes.
        """
        baseline = result.baseline
        if self.spec.search.method != "local" or baseline is None or self.multi:
            return  # several objectives: optuna's multi-objective TPE proposes
        trials = study.get_trials(deepcopy=False)
        if any(t.state == TrialState.WAITING for t in trials):
            return
        if self._queue_probe_nominee(study):
            return
        incumbent = result.configs.get(study.user_attrs.get(attrs.INCUMBENT, "")) or baseline
        frozen = self.probe.frozen(study) if self.probe is not None else frozenset()
        rng = self.rng(study)
        search_spec = self._search_spec(study)
        params, skipped = propose_avoiding(  # not what the limits rule out
            lambda exclude: search.propose(
                search_spec,
                result.observations(),
                incumbent.params,
                exclude=exclude,
                rng=rng,
                min_gain=self.spec.stop.min_gain,
                max_changes=self.spec.search.max_changes,
                trials_left=self.spec.stop.patience - self._search_trials_since_gain(study),
                frozen=frozen,
            ),
            fit_steering(self.store, self.space, self.rng(study, stream=2)),
            self.spec,
            self._tried(study),
        )
        self._local_done = params is None
        for line in skipped:
            self.observer.message(line)
        if params is None:
            if frozen:  # optuna's TPE proposes next: the frozen params stay at default
                fixed = dict.fromkeys(frozen, DEFAULT)
                queue.enqueue_launch(study, self.spec, fixed, "search", {attrs.PROPOSER: "tpe"})
            return
        queue.enqueue_launch(study, self.spec, params, "search", {attrs.PROPOSER: "local"})

    def _queue_probe_nominee(self, study: optuna.Study) -> bool:
        """Queue the probe's nominee as the first search trial, once; True when queued."""
        if self.probe is None:
            return False
        params = self.probe.nominee(study)
        if params is None:
            return False
        config = settings_from_params(self.spec, params).config_hash
        study.set_user_attr(attrs.PROBE_NOMINATED, True)
        if config in self._tried(study):
            return False
        queue.enqueue_launch(study, self.spec, params, "search", {attrs.PROPOSER: "probe"})
        changed = ", ".join(f"{k}={v}" for k, v in params.items() if not is_default(v))
        self.observer.message(f"probe: launching its nominee first: {changed}")
        return True

    def _search_spec(self, study: optuna.Study) -> SpaceSpec:
        """The space the local search walks: the probe's narrowing of it, if any."""
        return self.probe.search_spec(study) if self.probe is not None else self.spec

    # --- internals -------------------------------------------------------------------------

    def _save_noise(self, study: optuna.Study, result: analysis.StudyAnalysis) -> None:
        if result.noise is None:
            return
        noise = result.noise_dict()
        self.store.update_study(study.study_name, noise=noise)
        study.set_user_attr(attrs.NOISE_REL_SD, noise.get("rel_sd"))

    def _announce_plan(self, study: optuna.Study, result: analysis.StudyAnalysis) -> None:
        """Once, after the baseline launches: what the study can confirm, and its cost."""
        if attrs.PLAN in study.user_attrs:
            return
        cost = plan.study_plan(
            result,
            self.store.launches(study.study_name),
            budget=self.n_trials,
            futility_min_trials=futility.MIN_TRIALS if self.spec.stop.futility > 0 else None,
        )
        if cost is not None:
            study.set_user_attr(attrs.PLAN, cost.to_json())
            self.observer.cost_plan(cost)

    def _track_gain(
        self, study: optuna.Study, result: analysis.StudyAnalysis, trial: FrozenTrial
    ) -> None:
        """Remember the trial at which the best last improved beyond the noise."""
        best = result.best
        if best is None:
            return
        incumbent = study.user_attrs.get(attrs.INCUMBENT)
        if incumbent is None or not result.eligible_hash(incumbent):
            study.set_user_attr(attrs.INCUMBENT, best.config_hash)
            study.set_user_attr(attrs.LAST_GAIN_TRIAL, trial.number)
            return
        if best.config_hash != incumbent and result.significantly_better(
            best.config_hash, incumbent
        ):
            study.set_user_attr(attrs.INCUMBENT, best.config_hash)
            study.set_user_attr(attrs.LAST_GAIN_TRIAL, trial.number)
            self.observer.message(f"new best: trial {best.trials[0]} ({result.describe(best)})")

    def _search_trials_since_gain(self, study: optuna.Study) -> int:
        last_gain = study.user_attrs.get(attrs.LAST_GAIN_TRIAL)
        if last_gain is None:
            return 0
        return sum(
            1
            for t in study.get_trials(deepcopy=False)
            if t.number > last_gain
            and t.user_attrs.get(attrs.LAUNCHED)
            and t.user_attrs.get(attrs.ROLE) == "search"
            and t.state.is_finished()
        )

    def _confirmation_pending(self, study: optuna.Study) -> bool:
        # RUNNING too: another worker may be measuring one now (this worker's own trial
        # has finished by the time its callback runs).
        return any(
            t.user_attrs.get(attrs.ROLE) in ("confirm", "simplify")
            for t in study.get_trials(
                deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING)
            )
        )

    def _queue_final_checks(self, study: optuna.Study, result: analysis.StudyAnalysis) -> bool:
        """Before the answer: launch a simpler form of the best, then settle a close call.

        True when launches were queued (the sweep goes on until they are done). None with
        several objectives: both checks measure the gain on one.
        """
        if self.multi:
            return False
        return final_checks.queue_simplification(
            self, study, result
        ) or final_checks.queue_tiebreak(self, study, result)

    def rng(self, study: optuna.Study, stream: int = 0) -> np.random.Generator:
        # Seeded per proposal, so a seeded study proposes the same whether resumed or not;
        # ``stream`` keeps the futility check's draws apart from the proposal's.
        n = len(study.get_trials(deepcopy=False))
        if self.seed is None:
            return np.random.default_rng()
        return np.random.default_rng([self.seed, n, stream] if stream else [self.seed, n])

    def _plateau(self, study: optuna.Study) -> bool:
        return self._search_trials_since_gain(study) >= self.spec.stop.patience

    def _futile(self, study: optuna.Study, result: analysis.StudyAnalysis) -> float | None:
        """The model's largest chance that an untried neighbour of the incumbent beats it by
        min_gain, when that is below stop.futility and futility.MIN_TRIALS search trials
        have run without a gain; else None (search on)."""
        stop = self.spec.stop
        baseline = result.baseline
        if stop.futility <= 0 or baseline is None or self.multi:
            return None
        if self._search_trials_since_gain(study) < futility.MIN_TRIALS:
            return None
        incumbent = result.configs.get(study.user_attrs.get(attrs.INCUMBENT, "")) or baseline
        chance = futility.chance_of_gain(
            self._search_spec(study),
            result.observations(),
            incumbent.params,
            exclude=self._tried(study),
            rng=self.rng(study, stream=1),
            min_gain=stop.min_gain,
            max_changes=self.spec.search.max_changes,
            frozen=self.probe.frozen(study) if self.probe is not None else frozenset(),
        )
        return chance if chance < stop.futility else None

    def _futile_sentence(
        self, study: optuna.Study, result: analysis.StudyAnalysis, chance: float
    ) -> str:
        incumbent = result.configs.get(study.user_attrs.get(attrs.INCUMBENT, ""))
        who = f"trial {incumbent.trials[0]}" if incumbent else "the best"
        n = self._search_trials_since_gain(study)
        stop = self.spec.stop
        return (
            f"no configuration beat {who} by more than the noise in {n} trials, and the model "
            f"of the settings' effects gives no untried change to it more than a "
            f"{chance * 100:.1f}% chance of beating it by {stop.min_gain * 100:g}% (futility "
            f"stop below {stop.futility * 100:g}%; patience {stop.patience} not used up)"
        )

    def _plateau_sentence(self, study: optuna.Study, result: analysis.StudyAnalysis) -> str:
        incumbent = result.configs.get(study.user_attrs.get(attrs.INCUMBENT, ""))
        n = self._search_trials_since_gain(study)
        noise = result.noise_rel_sd()
        noise_text = f" (±{noise:.1%})" if noise is not None else ""
        who = f"trial {incumbent.trials[0]}" if incumbent else "the best"
        return f"no configuration beat {who} by more than the noise{noise_text} in {n} trials"
