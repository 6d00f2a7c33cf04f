"""Identity matching: never take a recycled pid for the server we started."""

from __future__ import annotations

import os
import socket
from dataclasses import replace

import psutil

from tests.processes import parent_of_a_zombie
from tuner.launcher.identity import ProcessIdentity, identity_matches


def me() -> ProcessIdentity:
    return ProcessIdentity.capture(os.getpid(), marker="abc")


def test_capture_of_this_process() -> None:
    identity = me()
    assert identity.pid == os.getpid()
    assert identity.pgid == os.getpgid(0)
    assert identity.cmdline == tuple(psutil.Process().cmdline())
    assert identity.hostname == socket.gethostname()
    assert identity.is_alive_same_process()


def test_other_start_time_is_another_process() -> None:
    assert not replace(me(), create_time=me().create_time + 5).is_alive_same_process()


def test_other_command_line_is_another_process() -> None:
    assert not replace(me(), cmdline=("vllm", "serve", "x")).is_alive_same_process()


def test_missing_pid_and_other_host() -> None:
    assert not replace(me(), pid=2**31 - 2).is_alive_same_process()
    assert not replace(me(), pid=-1).is_alive_same_process()
    assert not replace(me(), hostname="elsewhere.invalid").is_alive_same_process()


def test_matching_rules() -> None:
    identity = ProcessIdentity(1, 1, 1000.0, ("vllm", "serve"), "h", "id")
    assert identity_matches(identity, create_time=1000.01, cmdline=["vllm", "serve"])
    assert not identity_matches(identity, create_time=1001.0, cmdline=["vllm", "serve"])
    assert not identity_matches(identity, create_time=1000.0, cmdline=["VLLM::APIServer"])
    # A server that rewrote its title is still ours if it carries the launch marker.
    assert identity_matches(identity, create_time=1000.0, cmdline=["VLLM::APIServer"], marked=True)
    assert not identity_matches(identity, create_time=1002.0, cmdline=["x"], marked=True)


def test_round_trip_through_a_dict() -> None:
    identity = me()
    data = identity.to_dict()
    assert isinstance(data["cmdline"], list)
    assert ProcessIdentity.from_dict(data) == identity
    legacy = {k: v for k, v in data.items() if k != "marker"}
    assert ProcessIdentity.from_dict(legacy).marker == ""


def test_a_zombie_is_not_alive_and_is_known_as_exited_unreaped() -> None:
    with parent_of_a_zombie() as (_, zombie):
        identity = ProcessIdentity.capture(zombie, argv=["server"])
        assert not identity.is_alive_same_process()
        stat = identity.exited_unreaped()
        assert stat is not None and stat.pid == zombie and stat.zombie
        assert replace(identity, create_time=identity.create_time + 5).exited_unreaped() is None
    assert me().exited_unreaped() is None  # a running process is not one
