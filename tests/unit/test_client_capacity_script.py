"""benchmarks/client_capacity.py's own logic, without sockets or timing.

The accuracy run is only as good as the server's record it compares with: that record
must come from the instants the server wrote, not from the pacing it was asked for (a
slow machine writes late). The scaling report must say when the machine has too few
cores for its client processes, instead of passing a flat line off as no scaling.
"""

from __future__ import annotations

import types

import pytest

from tests.unit.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def cc() -> types.ModuleType:
    return load_benchmark("client_capacity.py")


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)


class _Conn:
    def __init__(self, truth: object) -> None:
        self.server = types.SimpleNamespace(truth=truth)
        self.transport = _Transport()
        self.stream = None
        self.pending = False
        self.closed = False


def test_the_truth_is_the_servers_write_times_not_its_pacing(
    cc: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Asked for 50 ms + 20 ms per token, a slow machine wrote at 61 ms, then every 23 ms.
    writes = iter([10.061, 10.084, 10.107, 10.130])
    monkeypatch.setattr(cc.time, "perf_counter", lambda: next(writes))
    truth = cc.Truth()
    truth.open = 1
    conn = _Conn(truth)
    stream = cc.Stream(conn, 4, "completion", 0, False, prompt_tokens=2, t_recv=10.0)
    finished = [stream.write_token() for _ in range(4)]
    assert finished == [False, False, False, True]
    report = truth.report()
    assert report["streams"] == 1 and report["tokens"] == 4
    assert report["ttft_ms_p50"] == pytest.approx(61.0)
    assert report["itl_ms_mean"] == pytest.approx(23.0)
    assert conn.transport.writes[0].startswith(b"HTTP/1.1 200 OK")  # headers with token 1
    assert conn.transport.writes[-1].endswith(b"0\r\n\r\n")


def test_accuracy_figures_are_ratios_to_the_servers_record(cc: types.ModuleType) -> None:
    truth = {
        "streams": 256,
        "tokens": 256 * 256,
        "peak_open_streams": 256,
        "ttft_ms_p50": 53.0,
        "itl_ms_mean": 22.9,
        "server_cpu_s": 1.0,
    }
    run = {"peak_in_flight": 256, "ttft_ms_p50": 159.0, "itl_ms_mean": 22.9, "cpu_s": 2.0}
    run["tokens"] = 256 * 256
    aiohttp = cc.accuracy_figures("aiohttp", run, truth)
    assert aiohttp["ttft_ratio"] == pytest.approx(3.0)
    assert aiohttp["itl_ratio"] == pytest.approx(1.0)
    assert aiohttp["client_limited"] is None  # only tuner judges itself
    tuner = cc.accuracy_figures(
        "tuner", {**run, "ttft_ms_p50": 65.72, "client_limited": True, "lag_ms_p99": 12.0}, truth
    )
    assert tuner["ttft_ratio"] == pytest.approx(1.24)
    summary = cc.accuracy_summary([tuner, {**tuner, "client_limited": False}, tuner])
    assert summary["client_limited_runs"] == 2 and summary["runs"] == 3
    assert cc.accuracy_summary([aiohttp])["client_limited_runs"] is None


def test_too_few_cores_is_said(cc: types.ModuleType) -> None:
    assert cc.too_few_cores(2, 1) is None
    assert cc.too_few_cores(2, 2) == (
        "this machine has 2 cores: 2 workers cannot show scaling "
        "(2 client processes and the server need 3)"
    )
    assert cc.too_few_cores(4, 4) is not None
    assert cc.too_few_cores(5, 4) is None
    assert cc.too_few_cores(16, 4) is None


def test_scaling_is_tok_s_over_one_worker_with_the_cores_note(cc: types.ModuleType) -> None:
    def row(workers: int, tps: float, mode: str = "flood", transport: str = "tuner") -> dict:
        return {
            "mode": mode,
            "streams": 256,
            "transport": transport,
            "workers": workers,
            "tokens_per_s": tps,
        }

    rows = [
        row(1, 200_000),
        row(2, 390_000),
        row(4, 700_000),
        row(1, 150_000, transport="aiohttp"),
        row(1, 25_000, mode="paced"),
    ]
    lines = cc.scaling_lines(rows, cores=16)
    assert lines == [
        "scaling, flood 256 streams, tuner: x1 200000 tok/s, x2 390000 (1.95x), x4 700000 (3.50x)"
    ]
    lines = cc.scaling_lines(rows, cores=2)
    assert lines[1:] == [cc.too_few_cores(2, 2), cc.too_few_cores(2, 4)]
    assert cc.scaling_lines([row(1, 200_000)], cores=2) == []  # nothing to scale against
