"""After a crash: what a dead worker left behind (its servers, its RUNNING trials) is recovered.

A worker is a tuner process, ``host:pid:start`` (tuner/study/run/workers.py ``worker_id``) in
every trial it runs. A worker is dead when:

- it ran on this host and its process is gone (or its pid now names another process);
- it ran on another host and its heartbeat (``tuner_workers``) is older than the grace
  period, or it exited while a trial of its was still RUNNING.

A launch row still ``running`` of a dead worker of this host has a server that may live
on (it runs in its own session): it is stopped by identity, never by pid alone. A server
of a dead worker on another host is reported with its host and pid, never touched: this
host cannot tell a pid there from anything else (`tuner cleanup` on that host stops it).
Every RUNNING trial of a dead worker is marked FAIL with the reason, and its
configuration is queued again (same role and params, ``tuner_retry_of``); the retry is
claimed in ``tuner_claims``, so two workers that find the same dead trial queue it once.
A worker on another host that registered no heartbeat (a tuner before schema 2) is left
alone: nothing says whether it lives. A trial RUNNING for longer than the grace period
without any worker named on it lost its worker as it began.
"""

from __future__ import annotations

import socket

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner import launcher
from tuner.events import SweepObserver
from tuner.storage import LaunchStatus, Store
from tuner.study import attrs
from tuner.study.run import queue
from tuner.study.run.optuna_rdb import open_rdb, trial_id
from tuner.study.run.workers import DeadWorkers, Heartbeat, worker_id
from tuner.study.run.workers import worker_alive as worker_alive  # where callers have found it

RETRY_CLAIM = "retry"


def cleanup(storage: str, study_name: str | None, observer: SweepObserver) -> int:
    """`tuner cleanup`: recover every study (or one) of a storage; the number of studies seen."""
    names = (
        [study_name]
        if study_name
        else [
            s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)
        ]
    )
    store = Store(storage)
    rdb = open_rdb(storage)
    for name in names:
        study = optuna.load_study(study_name=name, storage=rdb)
        recover_interrupted(study, rdb, store, observer)
    return len(names)


def recover_interrupted(
    study: optuna.Study,
    rdb: optuna.storages.BaseStorage,
    store: Store,
    observer: SweepObserver,
    *,
    heartbeat: Heartbeat | None = None,
    reported: set[int] | None = None,
) -> list[int]:
    """Stop this host's servers of dead workers, report other hosts', fail and requeue the
    dead workers' RUNNING trials. Returns the numbers of the trials failed here.

    ``reported`` holds the launch ids already reported (a worker says each once).
    """
    heartbeat = heartbeat or Heartbeat.from_env()
    reported = reported if reported is not None else set()
    host = socket.gethostname()
    dead = DeadWorkers(store, study.study_name, heartbeat.grace_s)
    claims = queue.Claims(
        store, study.study_name, worker_id(), queued_in=study, grace_s=heartbeat.grace_s
    )
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    for record in store.running_servers(study.study_name):
        trial = trials.get(record.trial_number) if record.trial_number is not None else None
        running = trial is not None and trial.state == TrialState.RUNNING
        if running and dead.why(_worker_of(trial)) is None:
            continue  # its worker is alive and measuring it
        if record.host != host:
            if running or record.launch_id not in reported:
                reported.add(record.launch_id)
                observer.message(
                    f"server pid {record.pid} of trial {record.trial_number} on host "
                    f"{record.host} was left by a dead worker; not touched from here: run "
                    f"`tuner cleanup` on {record.host}"
                )
            continue
        identity = launcher.ProcessIdentity(
            pid=record.pid or -1,
            pgid=record.pgid or -1,
            create_time=record.create_time or 0.0,
            cmdline=record.cmdline,
            hostname=record.host,
            marker=record.marker,
        )
        stopped = record.pid is not None and launcher.reap_leftover(identity, stop_timeout_s=30)
        store.update_launch(record.launch_id, status=LaunchStatus.FAILED, reason="interrupted")
        if stopped:
            observer.message(f"stopped server pid {record.pid} left by an interrupted run")
    failed = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = _worker_of(trial)
        reason = dead.why(worker) if worker else dead.orphaned(trial)
        if reason is not None and _fail_and_requeue(study, rdb, claims, trial, reason):
            failed.append(trial.number)
            again = ", its configuration queued again" if attrs.PARAMS in trial.user_attrs else ""
            observer.message(
                f"trial {trial.number} was interrupted ({reason}); marked failed{again}"
            )
    return failed


def _worker_of(trial: FrozenTrial | None) -> str:
    return str(trial.user_attrs.get(attrs.WORKER, "")) if trial is not None else ""


def _fail_and_requeue(
    study: optuna.Study,
    rdb: optuna.storages.BaseStorage,
    claims: queue.Claims,
    trial: FrozenTrial,
    reason: str,
) -> bool:
    """FAIL the trial with ``reason`` and queue its configuration again, once in all workers
    (a retry claim its dead holder never acted on expires, ``queue.Claims``)."""
    if not claims.take(RETRY_CLAIM, str(trial.number)):
        return False  # another worker recovers it
    try:
        number = trial_id(rdb, study.study_name, trial.number)
        rdb.set_trial_user_attr(number, attrs.REASON, reason)
        rdb.set_trial_user_attr(number, attrs.CUT_SHORT, True)  # its retry is charged
        study.tell(trial.number, state=TrialState.FAIL)
    except RuntimeError:  # it finished meanwhile: its worker was alive after all
        return False
    if attrs.PARAMS in trial.user_attrs:
        _queue_again(study, trial)
    return True


def requeue_interrupted(study: optuna.Study, claims: queue.Claims | None) -> list[int]:
    """Queue again, once in all workers, every launch this study's runs cut short
    (Ctrl-C, a signal) that was not queued again yet: a resumed study runs it first, and
    the cut launch is not charged to --trials. Returns the numbers queued again."""
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get(attrs.RETRY_OF) for t in trials}
    again = []
    for trial in trials:
        if trial.state != TrialState.FAIL or not trial.user_attrs.get(attrs.CUT_SHORT):
            continue
        if trial.number in retried or attrs.PARAMS not in trial.user_attrs:
            continue
        if claims is not None and not claims.take(RETRY_CLAIM, str(trial.number)):
            continue
        _queue_again(study, trial)
        again.append(trial.number)
    return again


def _queue_again(study: optuna.Study, trial: FrozenTrial) -> None:
    """Queue ``trial``'s configuration again, same role and params (``tuner_retry_of``)."""
    # The values fixed at enqueue time (baseline, confirmations) or suggested so far.
    params = {**trial.system_attrs.get("fixed_params", {}), **trial.params}
    kept = (attrs.ROLE, attrs.PARAMS, attrs.CONFIG, attrs.PROPOSER, attrs.FIDELITY)
    study.enqueue_trial(
        params,
        user_attrs={
            **{k: trial.user_attrs[k] for k in kept if k in trial.user_attrs},
            attrs.RETRY_OF: trial.number,
            **queue.claim_attrs(RETRY_CLAIM, str(trial.number)),
        },
        skip_if_exists=False,
    )
