"""Shared-memory cleanup rules, on a temporary directory standing in for /dev/shm."""

from __future__ import annotations

import os
from pathlib import Path

from tuner.launcher.shm import ShmTracker


def test_only_new_matching_or_used_files_are_removed(tmp_path: Path) -> None:
    (tmp_path / "psm_before").write_bytes(b"")
    tracker = ShmTracker(tmp_path)
    tracker.snapshot()
    for name in ("psm_new", "sem.mp-abc", "nccl-x1", "foo_sim_1", "unrelated", "used_by_server"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "psm_dir").mkdir()
    tracker._seen.add("used_by_server")  # as if observed in the server's maps
    removed, problems = tracker.cleanup()
    assert problems == []
    assert sorted(Path(p).name for p in removed) == [
        "foo_sim_1", "nccl-x1", "psm_new", "sem.mp-abc", "used_by_server",
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["psm_before", "psm_dir", "unrelated"]


def test_a_recreated_file_is_new(tmp_path: Path) -> None:
    old = tmp_path / "psm_same"
    old.write_bytes(b"")
    keep = tmp_path / "keep"  # hold the inode so the new file gets another
    os.link(old, keep)
    tracker = ShmTracker(tmp_path)
    tracker.snapshot()
    old.unlink()
    old.write_bytes(b"new")
    removed, _ = tracker.cleanup()
    assert removed == [str(old)]


def test_a_file_still_in_use_is_kept(tmp_path: Path) -> None:
    tracker = ShmTracker(tmp_path)
    tracker.snapshot()
    held = tmp_path / "psm_held"
    with open(held, "wb"):
        assert tracker.cleanup() == ([], [])
        assert held.exists()


def test_without_snapshot_only_observed_files_go(tmp_path: Path) -> None:
    tracker = ShmTracker(tmp_path)
    (tmp_path / "psm_unknown").write_bytes(b"")
    (tmp_path / "psm_seen").write_bytes(b"")
    with open(tmp_path / "psm_seen", "rb"):
        tracker.observe([os.getpid()])
    assert tracker.seen == {"psm_seen"}
    removed, _ = tracker.cleanup()
    assert removed == [str(tmp_path / "psm_seen")]
    assert (tmp_path / "psm_unknown").exists()
