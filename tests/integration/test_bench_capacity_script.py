"""benchmarks/client_capacity.py's accuracy run: both clients, each against its own record.

tuner and plain aiohttp take turns against one paced server; each pass must be compared
with a fresh record holding that pass's streams only (aiohttp's warm pass of one-token
requests reset away), or the ratios compare a client with another one's streams. The
ratios themselves are timing and are not judged here (test_bench_accuracy does, alone).
"""

from __future__ import annotations

import argparse

import pytest

from tests.integration.bench_servers import capacity_module

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_accuracy_runs_tuner_and_aiohttp_each_against_a_fresh_truth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cc = capacity_module()
    args = argparse.Namespace(
        first_ms=5.0,
        interval_ms=2.0,
        accuracy_streams=8,
        tokens=6,
        repeat=2,
        timeout=60.0,
        loop="asyncio",
    )
    out = cc.accuracy(args)
    runs = out["runs"]
    assert [r["transport"] for r in runs] == ["tuner", "tuner", "aiohttp", "aiohttp"]
    for run in runs:
        assert run["truth_streams"] == 8, run  # this pass's streams, no warm pass
        assert 1 <= run["held"] <= 8 and run["server_peak_open"] <= 8
        assert run["ttft_ratio"] > 0 and run["itl_ratio"] > 0
        # The truth is the server's own record, measured: never the 5 ms asked for exactly.
        assert run["truth_ttft_ms_p50"] != 5.0 and run["truth_itl_ms_mean"] != 2.0
    assert all(isinstance(r["client_limited"], bool) for r in runs[:2])
    assert all(r["client_limited"] is None for r in runs[2:])
    summary = out["summary"]
    assert summary["tuner"]["runs"] == 2 and summary["tuner"]["client_limited_runs"] in (0, 1, 2)
    assert summary["aiohttp"]["client_limited_runs"] is None
    printed = capsys.readouterr().out
    assert "accuracy,   tuner, median of 2" in printed
    assert "accuracy, aiohttp, median of 2" in printed
    assert "flagged client-limited in" in printed
