"""Following a log file incrementally and reading its tail, without a server."""

from __future__ import annotations

from pathlib import Path

from tuner.launcher.logfile import LogFollower, read_tail

SHARDS = "Loading safetensors checkpoint shards: {pct:3d}% Completed | {n}/4 [00:01<00:01, 1.8it/s]"


def append(path: Path, text: str | bytes) -> None:
    with open(path, "ab") as f:
        f.write(text.encode() if isinstance(text, str) else text)


def test_follower_reports_changes_only(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("# tuner: header\n")
    follower = LogFollower(log, start_offset=log.stat().st_size)
    assert follower.poll() is None
    append(log, SHARDS.format(pct=25, n=1) + "\n")
    first = follower.poll()
    assert first is not None and first.done == 1 and first.total == 4
    assert follower.poll() is None  # nothing new
    append(log, SHARDS.format(pct=25, n=1) + "\n")
    assert follower.poll() is None  # same state
    append(log, "INFO 11-29 11:10:00 [x.py:1] Model loading took 3.2 GiB\n")
    phase = follower.poll()
    assert phase is not None and phase.percent is None
    assert phase.line == "Model loading took 3.2 GiB"
    assert follower.last == phase


def test_follower_sees_a_tqdm_bar_being_redrawn(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    follower = LogFollower(log)
    append(log, "\rCapturing CUDA graphs:  33%|###  | 1/3 [00:00<00:00, 9.0it/s]")
    state = follower.poll()
    assert state is not None and state.done == 1
    append(log, "\rCapturing CUDA graphs:  66%|##")  # half-written redraw: wait for the rest
    assert follower.poll() is None
    append(log, "##  | 2/3 [00:00<00:00, 9.0it/s]")
    state = follower.poll()
    assert state is not None and state.done == 2


def test_follower_skips_a_flood_and_keeps_memory_bounded(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    line = b"DEBUG " + b"x" * 120 + b"\n"
    flood = line * (20 * (1 << 20) // len(line))
    log.write_bytes(flood + SHARDS.format(pct=50, n=2).encode() + b"\n")
    follower = LogFollower(log, max_read_bytes=1 << 20, max_backlog_bytes=4 << 20)
    state = follower.poll()
    assert state is not None and state.done == 2
    assert follower.skipped_bytes > 15 * (1 << 20)
    assert len(follower._partial) <= follower.max_partial_bytes


def test_follower_bounds_a_line_without_end(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"y" * (300 << 10))
    follower = LogFollower(log)
    follower.poll()
    assert len(follower._partial) <= follower.max_partial_bytes


def test_follower_restarts_after_truncation(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("a long first line of the log\n")
    follower = LogFollower(log)
    assert follower.poll() is not None
    log.write_text("new\n")
    state = follower.poll()
    assert state is not None and state.line == "new"


def test_read_tail_reads_only_the_end(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(100_000)))
    assert read_tail(log, 3) == "line 99997\nline 99998\nline 99999"
    assert read_tail(log, 0) == ""
    assert read_tail(tmp_path / "missing.log") == ""


def test_read_tail_splits_carriage_returns_and_bounds_bytes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"start\n" + b"\r12%|#|" * 10 + b"\nend\n")
    assert read_tail(log, 2) == "12%|#|\nend"
    log.write_bytes(b"z" * (1 << 20))  # one huge line: cut, not dropped
    tail = read_tail(log, 5, max_bytes=64 << 10)
    assert 0 < len(tail) <= 2000


def test_follower_ignores_debug_floods_and_health_probes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        SHARDS.format(pct=50, n=2) + "\n"
        + "(APIServer pid=7) DEBUG 11-29 11:21:47 [flood.py:42] line 9 xxxxxxxx\n" * 50
        + 'INFO:     127.0.0.1:51022 - "GET /health HTTP/1.1" 200 OK\n'
    )  # fmt: skip
    follower = LogFollower(log)
    state = follower.poll()
    assert state is not None and state.done == 2
    with open(log, "a") as f:
        f.write("(APIServer pid=7) DEBUG 11-29 11:21:48 [flood.py:42] line 10 xxxxxxxx\n")
    assert follower.poll() is None
