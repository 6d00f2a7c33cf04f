"""tuner.sim.faults and its flags: a slow first launch and a drift over launches, by the
launch index a counter file gives; FakeRunner's same faults without processes."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.fakes import FakeRunner
from tuner.sim.cli import main
from tuner.sim.faults import (
    DEFAULT_DRIFT_LAUNCHES,
    LaunchIndexError,
    next_launch_index,
    slowdown,
    throughput_factor,
)
from tuner.sim.settings import ArgError, parse_settings
from tuner.sim.startup import SimServer


# -- the factor by launch index --------------------------------------------------------------
def test_no_fault_is_a_factor_of_one_at_every_index() -> None:
    assert [throughput_factor(k) for k in (0, 1, 5, 100)] == [1.0] * 4
    assert [slowdown(k) for k in (0, 1, 5, 100)] == [1.0] * 4


def test_a_cold_first_launch_slows_launch_zero_only() -> None:
    assert throughput_factor(0, cold_first=0.05) == pytest.approx(0.95)
    assert slowdown(0, cold_first=0.05) == pytest.approx(1 / 0.95)
    assert [throughput_factor(k, cold_first=0.05) for k in (1, 2, 30)] == [1.0] * 3


def test_a_drift_builds_up_linearly_then_stays() -> None:
    factors = [throughput_factor(k, drift=0.03, drift_launches=10) for k in range(13)]
    assert factors[0] == 1.0
    assert factors[5] == pytest.approx(0.985)
    assert factors[10:] == pytest.approx([0.97] * 3)
    steps = [a - b for a, b in zip(factors[:10], factors[1:11], strict=True)]
    assert steps == pytest.approx([0.003] * 10)
    assert slowdown(10, drift=0.03, drift_launches=10) == pytest.approx(1 / 0.97)


def test_a_negative_drift_speeds_up_and_the_default_span_is_twenty() -> None:
    assert throughput_factor(20, drift=-0.04) == pytest.approx(1.04)
    assert throughput_factor(10, drift=-0.04) == pytest.approx(1.02)
    assert DEFAULT_DRIFT_LAUNCHES == 20
    assert slowdown(20, drift=-0.04) < 1.0


def test_cold_and_drift_never_compound() -> None:
    both = dict(cold_first=0.05, drift=0.03, drift_launches=10)
    assert throughput_factor(0, **both) == pytest.approx(0.95)  # the drift is 0 at launch 0
    assert throughput_factor(1, **both) == pytest.approx(0.997)  # the cold cache is gone


@pytest.mark.parametrize(("index", "span"), [(-1, 10), (0, 0)])
def test_a_bad_index_or_span_is_refused(index: int, span: int) -> None:
    with pytest.raises(ValueError):
        throughput_factor(index, drift=0.01, drift_launches=span)


# -- the flags -------------------------------------------------------------------------------
def test_the_flags_parse_and_are_off_by_default(tmp_path: Path) -> None:
    plain = parse_settings([], {})
    assert (plain.launch_index_file, plain.cold_first_launch, plain.drift) == (None, 0.0, 0.0)
    assert plain.drift_launches == DEFAULT_DRIFT_LAUNCHES
    counter = str(tmp_path / "n")
    s = parse_settings(
        ["--launch-index-file", counter, "--cold-first-launch", "0.05", "--drift", "-0.03"]
        + ["--drift-launches", "10"],
        {},
    )
    assert (s.launch_index_file, s.cold_first_launch, s.drift, s.drift_launches) == (
        counter,
        0.05,
        -0.03,
        10,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cold-first-launch", "5"], "a fraction in 0..0.5 \\(0.05 is 5%\\), got 5"),
        (["--cold-first-launch", "-0.01"], "--cold-first-launch is a fraction in 0..0.5"),
        (["--drift", "3"], "--drift is a fraction in -0.5..0.5"),
        (["--drift", "-0.6"], "--drift is a fraction in -0.5..0.5"),
        (["--drift", "nan"], "--drift is a fraction"),
        (["--drift-launches", "0"], "--drift-launches must be positive"),
    ],
)
def test_bad_fault_values_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(ArgError, match=message):
        parse_settings(["--launch-index-file", "/nonexistent/n", *argv], {})


@pytest.mark.parametrize("flag", ["--cold-first-launch", "--drift"])
def test_a_fault_without_a_counter_is_a_usage_error(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ArgError, match="need --launch-index-file PATH"):
        parse_settings([flag, "0.05"], {})
    assert main(["--port", "1", flag, "0.05"]) == 2
    assert "need --launch-index-file" in capsys.readouterr().err


def test_help_and_the_docs_list_the_fault_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    docs = (Path(__file__).resolve().parents[2] / "docs" / "simulator.md").read_text()
    for flag in ("--launch-index-file PATH", "--cold-first-launch F", "--drift D"):
        assert flag in out
        assert f"| `{flag}" in docs  # a row of the simulator-only flags' table
    assert "--drift-launches N" in out and "`--drift-launches N`" in docs


# -- the counter file ------------------------------------------------------------------------
def test_the_counter_counts_from_zero_across_starts(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sim-launches"  # the folder is made too
    assert [next_launch_index(path) for _ in range(3)] == [0, 1, 2]
    assert path.read_text() == "3\n"


def test_an_empty_counter_is_launch_zero_and_garbage_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "n"
    path.write_text("")
    assert next_launch_index(path) == 0
    path.write_text("seven\n")
    with pytest.raises(LaunchIndexError, match="holds 'seven', not a count of launches"):
        next_launch_index(path)
    path.write_text("-2")
    with pytest.raises(LaunchIndexError, match="not a count"):
        next_launch_index(path)
    assert path.read_text() == "-2"  # left as it was


def test_an_unwritable_counter_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LaunchIndexError, match="--launch-index-file"):
        next_launch_index(blocker / "n")  # its folder is a file


def test_concurrent_threads_never_share_an_index(tmp_path: Path) -> None:
    path = tmp_path / "n"
    got: list[int] = []
    lock = threading.Lock()

    def take(count: int) -> None:
        for _ in range(count):
            index = next_launch_index(path)  # a fresh open file each time: flock conflicts
            with lock:
                got.append(index)

    threads = [threading.Thread(target=take, args=(40,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(160))


def _take_many(path: str, count: int, out: Any) -> None:
    out.put([next_launch_index(path) for _ in range(count)])


def test_concurrent_processes_never_share_an_index(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    path = str(tmp_path / "n")
    procs = [ctx.Process(target=_take_many, args=(path, 30, out)) for _ in range(2)]
    for p in procs:
        p.start()
    got = sorted(out.get(timeout=30) + out.get(timeout=30))
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert got == list(range(60))


# -- the server reads it once per start ------------------------------------------------------
def _server(*argv: str) -> SimServer:
    return SimServer(parse_settings(["--port", "1", "--seed", "1", *argv], {}), argv, {})


def test_each_server_start_takes_the_next_index_and_its_slowdown(tmp_path: Path) -> None:
    counter = str(tmp_path / "n")
    argv = ("--launch-index-file", counter, "--cold-first-launch", "0.05", "--drift", "0.02")
    first, second = _server(*argv, "--drift-launches", "4"), _server(*argv, "--drift-launches", "4")
    assert first._count_launch(counter) and second._count_launch(counter)
    assert (first.launch_index, second.launch_index) == (0, 1)
    assert first.fault_slowdown == pytest.approx(1 / 0.95)
    assert second.fault_slowdown == pytest.approx(1 / 0.995)
    assert first.speed_factor == second.speed_factor  # the seed's noise is left as it was
    assert first.engine_speed_factor == pytest.approx(first.speed_factor / 0.95)
    cfg = second.config_json(1)
    assert (cfg["launch_index"], cfg["fault_slowdown"]) == (1, second.fault_slowdown)


def test_without_a_counter_the_server_has_no_index(tmp_path: Path) -> None:
    cfg = _server().config_json(1)
    assert (cfg["launch_index"], cfg["fault_slowdown"]) == (None, 1.0)


def test_a_bad_counter_fails_the_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    counter = tmp_path / "n"
    counter.write_text("x")
    server = _server("--launch-index-file", str(counter))
    assert not server._count_launch(str(counter))
    assert "not a count of launches" in capsys.readouterr().err


# -- FakeRunner ------------------------------------------------------------------------------
class _NoStore:
    """What FakeRunner writes to, kept nowhere."""

    def add_launch(self, **fields: Any) -> int:
        return 1

    def update_launch(self, launch_id: int, **fields: Any) -> None:
        pass


def _means(runner: FakeRunner, launches: int) -> list[float]:
    settings = SimpleNamespace(changed={}, params={}, config_hash="c", env={})
    out = []
    for n in range(launches):
        outcome = runner.run(trial_id=n, trial_number=n, role="baseline", settings=settings)
        out.append(sum(outcome.round_values) / len(outcome.round_values))
    return out


def _fake(**faults: Any) -> FakeRunner:
    return FakeRunner(_NoStore(), "f", speed=lambda p: 100.0, between=0, within=0, **faults)


def test_fake_runner_drift_makes_the_eleventh_launch_three_percent_slower() -> None:
    means = _means(_fake(drift=0.03, drift_launches=10), 12)
    assert means[0] == pytest.approx(100.0)
    assert means[10] / means[0] == pytest.approx(0.97)
    assert means[11] == pytest.approx(means[10])  # it stays after drift_launches
    assert means[5] == pytest.approx(98.5)


def test_fake_runner_cold_first_slows_only_the_first_launch() -> None:
    means = _means(_fake(cold_first=0.05), 4)
    assert means == pytest.approx([95.0, 100.0, 100.0, 100.0])


def test_fake_runner_applies_the_fault_before_the_noise() -> None:
    plain = FakeRunner(_NoStore(), "f", speed=lambda p: 100.0, seed=3, between=0.02)
    drifted = FakeRunner(
        _NoStore(), "f", speed=lambda p: 100.0, seed=3, between=0.02, drift=0.1, drift_launches=2
    )
    a, b = _means(plain, 3), _means(drifted, 3)
    assert [y / x for x, y in zip(a, b, strict=True)] == pytest.approx([1.0, 0.95, 0.9])


def test_fake_runner_counts_a_failed_launch_too() -> None:
    from tuner.errors import LaunchError

    calls = iter([True, False, False])
    runner = FakeRunner(
        _NoStore(),
        "f",
        speed=lambda p: 100.0,
        between=0,
        within=0,
        cold_first=0.05,
        fail=lambda p: "boom" if next(calls) else None,
    )
    with pytest.raises(LaunchError):
        _means(runner, 1)
    assert _means(runner, 2) == pytest.approx([100.0, 100.0])  # launch 0 was the failed one
