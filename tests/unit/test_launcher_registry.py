"""The exit-time registry and signal handlers."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import optuna
import pytest

from tuner.errors import Terminated
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
        assert signal.getsignal(signal.SIGTERM) is registry._terminate_on_signal
        assert signal.getsignal(signal.SIGHUP) is mine
        assert signal.getsignal(signal.SIGINT) is sigint
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@pytest.fixture
def default_handlers() -> Iterator[None]:
    """SIGTERM and SIGHUP at their default action for the test, restored after it."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    for sig in saved:
        signal.signal(sig, signal.SIG_DFL)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_real_signal_raises_terminated_naming_it(
    default_handlers: None, sig: signal.Signals
) -> None:
    registry.install_signal_handlers()
    with pytest.raises(Terminated) as caught:
        signal.raise_signal(sig)  # a real signal to this thread; its handler runs at once
    assert caught.value.signum == sig
    assert str(caught.value) == caught.value.reason == f"terminated by signal ({sig.name})"


def test_terminated_is_a_keyboard_interrupt_and_not_an_exception() -> None:
    # `except Exception` in library code must not swallow it; Ctrl-C's paths must see it.
    assert issubclass(Terminated, KeyboardInterrupt)
    assert not issubclass(Terminated, Exception)


def test_optuna_fails_the_running_trial_on_terminated_and_re_raises() -> None:
    # Why Terminated is a KeyboardInterrupt: optuna 5 tells FAIL for Exception and
    # KeyboardInterrupt only; a SystemExit would leave the trial RUNNING.
    study = optuna.create_study()

    def objective(trial: optuna.Trial) -> float:
        raise Terminated(signal.SIGTERM)

    with pytest.raises(Terminated):
        study.optimize(objective, n_trials=1)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.FAIL]
