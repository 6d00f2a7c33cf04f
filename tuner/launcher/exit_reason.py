"""Why a server that exited before it was healthy failed, in one line, from its log's end.

How it ended (its exit code or signal), then the most telling line of the log
(``progress.error_line``), tuner's own lines left out. A port taken between tuner's pick
and the server's bind is a ``PortTakenError``: the host's doing, not the settings', so
the runner launches again rather than count it against them. The error carries the
failure's cause (tuner/launcher/failure_cause.py), read from the same tail.
"""

from __future__ import annotations

import signal

from tuner.errors import LaunchError, PortTakenError
from tuner.launcher.failure_cause import PORT_TAKEN, cause_of_log
from tuner.launcher.progress import error_line
from tuner.launcher.spawn import TUNER_LINES

REASON_TAIL_LINES = 400  # the end of the log searched for why a server died


def early_exit_error(code: int, reason_tail: str, log_tail: str) -> LaunchError:
    """The error of a server that exited with ``code`` before it was healthy: its reason
    from ``reason_tail`` (the log's last REASON_TAIL_LINES), ``log_tail`` attached."""
    reason = early_exit_reason(code, reason_tail)
    server_tail = _without_tuner_lines(reason_tail)
    # A port taken between the runner's pick and the server's bind (another server or
    # a client's ephemeral port on this host): the host's doing, not the settings'.
    error = PortTakenError if PORT_TAKEN.search(server_tail) else LaunchError
    # The cause from the longer tail: a traceback's frames tell the moment of an OOM.
    cause = cause_of_log(reason, server_tail, exit_code=code)
    return error(reason, exit_code=code, log_tail=log_tail, cause=cause)


def early_exit_reason(code: int, log_tail: str) -> str:
    """Why a server that exited before it was healthy failed, as the launch and the trial
    record it (and ``tuner trials`` / ``tuner show`` print it): how it ended, then the most
    telling line of its log tail (``error_line``), tuner's own lines left out."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        reason = f"server was killed by {name} before it was healthy"
        if -code == signal.SIGKILL:
            reason += " (out of host memory?)"
    else:
        reason = f"server exited with code {code} before it was healthy"
    line = error_line(_without_tuner_lines(log_tail))
    return f"{reason}: {line}" if line else reason


def _without_tuner_lines(tail: str) -> str:
    """The tail without the lines tuner itself wrote around the server's output."""
    return "\n".join(line for line in tail.splitlines() if not line.startswith(TUNER_LINES))
