"""reap_leftover on real processes: a running leftover is stopped, a zombie is only named."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from tests.processes import parent_of_a_zombie
from tuner.launcher.identity import ProcessIdentity
from tuner.launcher.reap import reap_leftover


def test_a_zombie_leader_is_not_running_and_the_log_says_zombie(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with parent_of_a_zombie() as (parent, zombie):
        identity = ProcessIdentity.capture(zombie, marker="no-process-has-it", argv=["server"])
        with caplog.at_level(logging.INFO, logger="tuner.launcher"):
            assert reap_leftover(identity, stop_timeout_s=1, kill_wait_s=1) is False
        assert parent.poll() is None  # nothing was stopped
    note = f"pid {zombie} exited, not yet reaped by its parent pid {parent.pid} (zombie)"
    assert note in caplog.text
    assert "stopping" not in caplog.text


def test_a_running_leftover_is_stopped_and_its_unreaped_exit_is_called_a_zombie(
    caplog: pytest.LogCaptureFixture,
) -> None:
    leader = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        identity = ProcessIdentity.capture(leader.pid)
        with caplog.at_level(logging.INFO, logger="tuner.launcher"):
            assert reap_leftover(identity, stop_timeout_s=5, kill_wait_s=5) is True
    finally:
        leader.kill()
        leader.wait()
    assert leader.returncode == -15  # SIGTERM, not SIGKILL
    # This test process is its parent and had not reaped it when the reap ended.
    note = f"pid {leader.pid} exited, not yet reaped by its parent pid {os.getpid()} (zombie)"
    assert note in caplog.text
    assert "still alive after SIGKILL" not in caplog.text
