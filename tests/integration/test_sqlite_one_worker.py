"""SQLite stays honest: a second live `tuner run` on the same study is refused, naming
PostgreSQL; the first goes on undisturbed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.sweep_helpers import write_space
from tuner.storage import Store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_a_second_worker_on_a_sqlite_study_is_refused_and_told_to_use_postgresql(
    tmp_path: Path,
) -> None:
    path = write_space(tmp_path, benchmark={"max_tokens": 400, "rounds": 3})
    argv = [sys.executable, "-m", "tuner", "run", "--space", str(path), "--trials", "4"]
    first = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        store_url = f"sqlite:///{tmp_path}/experiments.db"
        deadline = time.monotonic() + 60
        while not (tmp_path / "experiments.db").exists() or not Store(store_url).workers("fast"):
            assert time.monotonic() < deadline, "the first worker never registered"
            time.sleep(0.2)
        second = subprocess.run(
            [*argv, "--runs-dir", "other-runs"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        said = " ".join(second.stderr.split())
        assert second.returncode == 2, said
        assert "SQLite takes one worker per study" in said
        assert "postgresql+psycopg://" in said
        out, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, out
    assert len(Store(store_url).workers("fast")) == 1  # the refused one never registered
