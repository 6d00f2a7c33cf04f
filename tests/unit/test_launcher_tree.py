"""ProcessTree on real processes: a zombie is no member and no survivor; a running one is."""

from __future__ import annotations

import subprocess

from tests.processes import (
    main_thread_exited,
    parent_of_a_zombie,
    stat_of,
    wait_until,
)
from tuner.launcher.tree import ProcessTree


def tree_led_by(proc: subprocess.Popen[str]) -> ProcessTree:
    """The tree of a process started in its own session, as ServerProcess starts one."""
    return ProcessTree(
        leader=proc.pid, leader_ticks=stat_of(proc.pid).start_ticks, session=proc.pid
    )


def test_a_zombie_is_set_aside_and_the_running_parent_is_a_member() -> None:
    with parent_of_a_zombie(start_new_session=True) as (parent, zombie):
        tree = tree_led_by(parent)
        members = tree.refresh(deep=True)
        assert parent.pid in members and zombie not in members
        assert parent.pid in tree.alive() and zombie not in tree.alive()
        assert list(tree.zombies()) == [zombie]
        result = tree.terminate(timeout_s=5, kill_wait_s=5)
        # The parent exited on SIGTERM; it is our child and we have not reaped it yet:
        # it is in /proc as a zombie, which is no survivor.
        assert result.sigkilled == () and result.survivors == ()
        assert stat_of(parent.pid).zombie
        assert parent.pid in tree.zombies()
        assert tree.members() == {}
        parent.wait()
        assert parent.pid not in tree.zombies()  # reaped: nothing left to report


def test_a_process_whose_main_thread_exited_is_a_member_and_is_stopped() -> None:
    with main_thread_exited(start_new_session=True) as proc:
        tree = tree_led_by(proc)
        assert proc.pid in tree.refresh(deep=True) and tree.zombies() == {}
        assert tree.leader_alive()
        result = tree.terminate(timeout_s=5, kill_wait_s=5)
        assert result.sigkilled == () and result.survivors == ()
        wait_until(lambda: proc.poll() is not None)
        assert proc.returncode == -15  # it was running, and SIGTERM ended it
