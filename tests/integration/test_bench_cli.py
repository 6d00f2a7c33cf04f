"""`tuner bench` against a running `tuner sim`: the JSON contract and --record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.launcher import LaunchSpec, ServerProcess, free_port
from tuner.storage import Store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_bench_json_and_record(tmp_path: Path) -> None:
    port = free_port()
    spec = LaunchSpec(
        argv=[
            sys.executable,
            "-m",
            "tuner.sim",
            "--port",
            str(port),
            "--load-seconds",
            "0.1",
            "--time-scale",
            "0.1",
        ],
        port=port,
        log_path=tmp_path / "sim.log",
        startup_timeout_s=30,
        stop_timeout_s=5,
    )
    storage = f"sqlite:///{tmp_path}/b.db"
    with ServerProcess(spec) as server:
        server.start()
        server.wait_healthy()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tuner",
                "bench",
                "--url",
                f"http://127.0.0.1:{port}",
                "--concurrency",
                "1,4",
                "--requests",
                "4",
                "--max-tokens",
                "16",
                "--warmup",
                "1",
                "--format",
                "json",
                "--record",
                "--storage",
                storage,
            ],
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, "COLUMNS": "200"},
        )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 4]
    for level in doc["levels"]:
        assert level["completed"] == 4 and level["errors"] == 0
        assert level["output_throughput"] > 0
        for family in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
            assert {"mean", "p50", "p99"} <= set(level[family])
    store = Store(storage)
    [launch] = store.launches("bench")
    assert launch.role == "bench" and launch.status == "complete"
    levels = store.levels(launch.id)
    assert [lv.concurrency for lv in levels] == [1, 4]
    assert len(store.requests(levels[1].id)) == 4


def test_bench_refuses_bad_levels_with_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuner",
            "bench",
            "--url",
            "http://127.0.0.1:9",
            "--concurrency",
            "1,x",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2  # bad input (tuner/exit_codes.py)
    assert "Error: --concurrency '1,x'" in done.stderr
