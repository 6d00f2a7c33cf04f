"""What a launch's row says once its server is stopped: status, reason, log, cleanup, phases.

Every outcome (measured, pruned, failed, interrupted) ends with this one update, so a
launch row never stays ``running`` for a server that is gone; secret values the server
was given are hidden in everything of its log and errors that is stored or shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuner import stats
from tuner.errors import BenchmarkError, LaunchError
from tuner.launcher import ServerProcess, StopReport
from tuner.launcher.load_phases import NEEDLES, load_phases
from tuner.launcher.logfile import matching_lines
from tuner.secrets import scrub
from tuner.storage import utcnow
from tuner.trial.monitor import plain_dict
from tuner.trial.rounds import LaunchOutcome


def final_fields(
    process: ServerProcess,
    report: StopReport,
    *,
    status: str,
    reason: str | None,
    hide: set[str],
    outcome: LaunchOutcome | None,
    phases_read: bool,
) -> dict[str, Any]:
    """The launch row's last update, after the stop: ``phases_read`` False means the server
    was never healthy, and the phases it went through before it failed are read now."""
    # The server may print a secret it was given (an old vLLM logs its --api-key):
    # what is stored and shown of its log has the values hidden.
    fields: dict[str, Any] = dict(
        status=status,
        reason=scrub(reason, hide) if reason else reason,
        log_tail=scrub(process.log_tail(60), hide),
        cleanup_ok=left_nothing_behind(report),
        cleanup=plain_dict(report),
        finished_at=utcnow(),
    )
    if not phases_read:
        fields["load_phases"] = read_load_phases(process.log_path, None)
    if outcome is not None:
        fields.update(
            objective_mean=outcome.mean,
            objective_se=stats.mean_se(outcome.round_values)[1],
            objective_rounds=list(outcome.round_values),
            rounds_done=len(outcome.round_values),
        )
    return fields


def left_nothing_behind(report: StopReport) -> bool:
    """Whether the next trial can start: no process survived and the GPU memory came back.

    A SIGKILL that worked or a leftover /dev/shm file is worth a notice (the report
    keeps it) but leaves the GPUs free, so it does not mark the cleanup as failed.
    """
    return not report.survivors and report.gpu_memory_ok is not False


def read_load_phases(log_path: Path, seconds_to_healthy: float | None) -> dict[str, Any] | None:
    """The phases of a launch's load from its log (launcher/load_phases.py) and its KV cache's
    size, as stored in ``tuner_launches.load_phases``; None when the log names neither (or
    cannot be read)."""
    phases = load_phases(matching_lines(log_path, NEEDLES), healthy_s=seconds_to_healthy)
    return phases.to_json() if phases.said_anything else None


def scrub_error(exc: LaunchError | BenchmarkError, hide: set[str]) -> None:
    """Hide secret values in the error before it is recorded, shown or re-raised.

    In place, so the traceback stays the original one.
    """
    if isinstance(exc, LaunchError):
        exc.reason = scrub(exc.reason, hide)
        exc.log_tail = scrub(exc.log_tail, hide)
        exc.args = (exc.reason,)
    else:
        exc.args = tuple(scrub(str(a), hide) for a in exc.args)
