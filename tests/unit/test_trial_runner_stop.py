"""The runner's stop: a second Ctrl-C or signal during the stop is held until the record."""

from __future__ import annotations

import signal
from typing import Any

from tuner.errors import Terminated
from tuner.trial import runner


class InterruptedStop:
    """A server whose stop is interrupted once, like ServerProcess: the report is kept."""

    def __init__(self, report: Any) -> None:
        self.report = report
        self.calls = 0

    def stop(self) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise Terminated(signal.SIGTERM)  # after killing at once, as teardown does
        return self.report


def test_an_interrupted_stop_hands_back_the_report_and_the_interruption() -> None:
    report = object()
    process = InterruptedStop(report)
    got, again = runner._stop_keeping_interruption(process)  # type: ignore[arg-type]
    assert got is report and isinstance(again, Terminated)
    assert process.calls == 2  # the second call reads the report the first one kept
