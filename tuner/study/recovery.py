"""After a crash: find what a killed tuner left behind, stop it, and fail its trials.

A worker is a tuner process, named ``host:pid:start`` (``worker_id``) in every trial it
runs. A launch row still ``running`` whose worker is gone has a server that may live
on (it runs in its own session): it is stopped by identity, never by pid alone. A
trial still RUNNING whose worker is gone is marked FAIL with the reason "interrupted".
Only this host's launches and workers are touched: with a shared PostgreSQL storage,
other hosts' running trials are theirs.
"""

from __future__ import annotations

import os
import socket

import optuna
import psutil
from optuna.trial import TrialState

from tuner import launcher
from tuner.events import SweepObserver
from tuner.launcher import procfs
from tuner.storage import LaunchStatus, Store
from tuner.study import attrs
from tuner.study.storage import open_storage, trial_id


def worker_id() -> str:
    """This tuner process as other workers and later runs see it: ``host:pid:start``.

    The start time (psutil's create time, in centiseconds) tells a live worker from
    an unrelated process that got its pid after it died.
    """
    start = round(psutil.Process().create_time() * 100)
    return f"{socket.gethostname()}:{os.getpid()}:{start}"


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
    optuna_storage = open_storage(storage)
    for name in names:
        study = optuna.load_study(study_name=name, storage=optuna_storage)
        recover_interrupted(study, optuna_storage, store, observer)
    return len(names)


def recover_interrupted(
    study: optuna.Study,
    optuna_storage: optuna.storages.BaseStorage,
    store: Store,
    observer: SweepObserver,
) -> None:
    """Stop the servers a dead worker of this host left behind; fail its RUNNING trials."""
    host = socket.gethostname()
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    for record in store.running_servers(study.study_name):
        if record.host != host:
            continue
        trial = trials.get(record.trial_number) if record.trial_number is not None else None
        if trial is not None and _worker_running(trial):
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
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get(attrs.WORKER, "")
        if worker.split(":", 1)[0] == host and not worker_alive(worker):
            number = trial.number
            optuna_storage.set_trial_user_attr(
                trial_id(optuna_storage, study.study_name, number), attrs.REASON, "interrupted"
            )
            study.tell(number, state=TrialState.FAIL)
            observer.message(f"trial {number} was interrupted; marked failed")


def _worker_running(trial: optuna.trial.FrozenTrial) -> bool:
    """The trial is still RUNNING and the worker that runs it is alive."""
    return trial.state == TrialState.RUNNING and worker_alive(
        trial.user_attrs.get(attrs.WORKER, "")
    )


def worker_alive(worker: str) -> bool:
    """Whether the tuner process named ``host:pid:start`` (see worker_id) still runs.

    This process never counts: a resumed run recovers its own earlier incarnation. A
    worker that exited and waits to be reaped (a zombie) is gone, not alive.
    """
    try:
        _, pid_text, start_text = worker.rsplit(":", 2)
        pid, start = int(pid_text), int(start_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        proc = psutil.Process(pid)
        running: bool = proc.is_running()
        same = abs(round(proc.create_time() * 100) - start) <= 100
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    stat = procfs.read_stat(pid)
    return running and same and stat is not None and not stat.zombie
