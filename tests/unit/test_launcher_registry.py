"""The exit-time registry and signal handlers."""

from __future__ import annotations

import signal

import pytest

from tuner.launcher import registry


class Stub:
    def __init__(self, fail: bool = False) -> None:
        self.stopped = 0
        self.fail = fail

    def stop(self) -> None:
        self.stopped += 1
        if self.fail:
            raise KeyboardInterrupt


def test_stop_all_stops_every_server_even_if_one_fails() -> None:
    servers = [Stub(), Stub(fail=True), Stub()]
    for server in servers:
        registry.register(server)
    registry.stop_all()
    assert [s.stopped for s in servers] == [1, 1, 1]
    assert not any(s in registry.live_servers() for s in servers)


def test_signal_handlers_only_replace_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    sigint = signal.getsignal(signal.SIGINT)
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:

        def mine(signum: int, frame: object) -> None:
            pass

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, mine)
        registry.install_signal_handlers()
        handler = signal.getsignal(signal.SIGTERM)
        assert handler is registry._exit_on_signal
        assert signal.getsignal(signal.SIGHUP) is mine
        assert signal.getsignal(signal.SIGINT) is sigint
        with pytest.raises(SystemExit) as caught:
            handler(signal.SIGTERM, None)  # type: ignore[operator]
        assert caught.value.code == 128 + signal.SIGTERM
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
