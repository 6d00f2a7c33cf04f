"""The servers this tuner process is running, stopped when tuner exits however it exits.

- Normal exit, an uncaught exception, Ctrl-C that nobody caught: ``atexit`` stops
  every server still registered.
- SIGTERM or SIGHUP to tuner (a batch scheduler, a closed terminal): by default
  Python dies without running ``atexit``. When tuner starts its first server from
  the main thread and the signal still has its default action, a handler is
  installed that raises ``Terminated(signum)`` (tuner/errors.py), a KeyboardInterrupt:
  every path written for Ctrl-C runs (the server stop in ``finally``, the trial
  marked failed, the study's stop recorded), and the CLI exits 128 + N. A second
  signal while a server stops raises again, which, like a second Ctrl-C, kills what
  is left at once instead of waiting. A handler the application installed itself
  is left alone. SIGINT is never touched: Python raises KeyboardInterrupt itself.
- SIGKILL to tuner: nothing can run; the next run finds the server by its stored
  identity (see ``reap_leftover``).
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
from typing import Protocol

from tuner.errors import Terminated

logger = logging.getLogger("tuner.launcher")

_HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _Stoppable(Protocol):
    def stop(self) -> object: ...


_live: dict[int, _Stoppable] = {}
_lock = threading.Lock()


def register(server: _Stoppable) -> None:
    with _lock:
        _live[id(server)] = server


def unregister(server: _Stoppable) -> None:
    with _lock:
        _live.pop(id(server), None)


def live_servers() -> list[_Stoppable]:
    with _lock:
        return list(_live.values())


def stop_all() -> None:
    """Stop every registered server; one failing does not keep the others running."""
    for server in live_servers():
        try:
            server.stop()
        except BaseException:  # noqa: BLE001 - at exit, keep stopping the rest
            logger.exception("could not stop a server at exit")
        finally:
            unregister(server)


def install_signal_handlers() -> None:
    """Turn SIGTERM/SIGHUP into ``Terminated`` while they have their default action.

    Only possible from the main thread; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _HANDLED_SIGNALS:
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _terminate_on_signal)


def _terminate_on_signal(signum: int, frame: object) -> None:
    raise Terminated(signum)


atexit.register(stop_all)
