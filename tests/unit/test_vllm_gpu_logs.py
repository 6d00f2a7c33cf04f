"""Real vLLM GPU startup logs (tests/unit/fixtures/vllm_logs/gpu_*.txt, each naming the public
thread it was copied from): the progress the log follower reports, the load's phases and KV
cache as the runner stores them, and for a failed start the reason the launch records, which
`tuner trials` and `tuner show` print.

Several vLLM versions (0.4 to the V1 of 2026), one GPU to eight tensor-parallel ranks; the
failures users hit: CUDA out of memory (at load, for the KV cache, at the CUDA graph capture),
NCCL's "unhandled system error", the custom all-reduce's CUDA error, a port in use, a model whose
heads do not divide by the TP size, a config pydantic refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from rich.console import Console

from tests.unit.views_helpers import BASELINE, hand_study
from tuner.errors import LaunchError, PortTakenError
from tuner.launcher.load_phases import NEEDLES, LoadPhases, load_phases
from tuner.launcher.logfile import LogFollower, matching_lines, read_tail
from tuner.launcher.progress import MAX_LINE, LoadProgress, split_lines
from tuner.launcher.server import REASON_TAIL_LINES, ServerProcess, early_exit_reason
from tuner.launcher.spec import LaunchSpec
from tuner.storage.store import Store
from tuner.storage.tables import LaunchStatus
from tuner.study.attrs import PARAMS as PARAMS_ATTR
from tuner.study.attrs import REASON as REASON_ATTR
from tuner.study.attrs import ROLE as ROLE_ATTR
from tuner.telemetry.inventory import parse_nccl_version
from tuner.trial.runner import read_load_phases
from tuner.views.trials import load_line, print_trial, print_trials, trials_rows

FIXTURES = Path(__file__).parent / "fixtures" / "vllm_logs"
EXITED = "server exited with code 1 before it was healthy: "


@dataclass(frozen=True)
class Log:
    """What one fixture must give. Seconds are vLLM's own numbers, at the slowest process."""

    name: str
    last: str
    """The follower's last state: the newest line that says something (its beginning, for a
    line cut at MAX_LINE)."""
    progress: tuple[str, int, int] | None = None
    """The newest progress line with a count: its phase, done and total."""
    seen: str | None = None
    """A line the follower reported on the way (a phase of its own)."""
    weights_s: float | None = None
    compile_s: float | None = None
    cuda_graphs_s: float | None = None
    processes: int = 0
    compile_cached: bool = False
    kv_cache_tokens: int | None = None
    kv_cache_blocks: int | None = None
    reason: str | None = None
    """For a failed start, the reason's beginning after EXITED (the whole of it, cut at
    MAX_LINE, when shorter)."""


LOGS = [
    Log(
        "gpu_0.4_tp3_heads_not_divisible_ailabrecipes514.txt",
        last="ValueError: Total number of attention heads (32) must be divisible by tensor "
        "parallel size (3).",
        reason="ValueError: Total number of attention heads (32) must be divisible by tensor "
        "parallel size (3).",
    ),
    Log(
        # V0 before 0.8 writes "multiproc_worker_utils.py:226]" without the opening bracket.
        "gpu_0.5.4_tp8_nccl_unhandled_system_error_issue7800.txt",
        last="RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for "
        "details)",
        reason="RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for "
        "details)",
    ),
    Log(
        # weights in gigabytes only (no time), the KV cache in blocks; the excerpt ends before
        # the out-of-memory error, so it is no failure fixture
        "gpu_0.5_tp8_gpu_blocks_issue7593.txt",
        last="CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of "
        "memory, consider decreasing `gpu_memory",
        seen="Capturing the model for CUDA graphs. This may lead to unexpected consequences if "
        "the model is not static. To run the model in eager mode, set 'enforce_eager=True' or "
        "use '--enforce-eager' in the CLI.",
        kv_cache_blocks=22982,
    ),
    Log(
        # uvicorn's "ERROR:    [Errno 98] ...": no exception, the level and the words say it
        "gpu_0.6_pp_port_in_use_issue8791.txt",
        last="Application shutdown complete.",
        seen="Route: /v1/embeddings, Methods: POST",
        reason="[Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
        "address already in use",
    ),
    Log(
        "gpu_0.6_tp4_nccl_version_issue9046.txt",
        last="NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
        seen="vLLM is using nccl==2.21.5",
    ),
    Log(
        "gpu_0.8_tp8_custom_allreduce_disabled_issue15340.txt",
        last="the current vLLM instance can use total_gpu_memory (23.58GiB) x "
        "gpu_memory_utilization (0.94) = 22.29GiB",
        seen="Custom allreduce is disabled because it's not supported on more than two "
        "PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True "
        "explicitly.",
        weights_s=727.899927,
        processes=7,
    ),
    Log(
        # the DEBUG lines in between are noise, not phases
        "gpu_0.8.4_tp1_lora_graph_capture_issue16961.txt",
        last="init engine (profile, create kv cache, warmup model) took 11629.91",
        seen="Graph capturing finished in 11412 secs, took 1.31 GiB",
        cuda_graphs_s=11412.0,
        processes=1,
    ),
    Log(
        "gpu_0.9_tpN_oom_graph_capture_issue19186.txt",
        last="For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        reason="RuntimeError: CUDA error: out of memory",
    ),
    Log(
        # pydantic says why on the line after its exception
        "gpu_0.10.2_tp1_config_validation_issue26161.txt",
        last="For further information visit https://errors.pydantic.dev/2.12/v/value_error",
        reason="pydantic_core._pydantic_core.ValidationError: 1 validation error for "
        "ModelConfig: Value error, Expecting value: line 1 column 1 (char 0)",
    ),
    Log(
        "gpu_0.11_tp8_compile_kv_memory_pr27521.txt",
        last="Available KV cache memory: 6.44 GiB",
        compile_s=94.20,
        processes=6,
    ),
    Log(
        "gpu_0.11_tp2_cached_compile_kv_tokens_issue28228.txt",
        last="CUDAGraphMode.FULL_AND_PIECEWISE is not supported with TritonMLABackend backend "
        "(support: AttentionCGSupport.NEVER); setting cudagraph_mode=PIECEWISE because "
        "attention is compiled piecewise",
        seen="GPU KV cache size: 75,840 tokens",
        compile_s=11.68,  # rank 0's total; rank 1 shows only its 4.027 s cache read
        processes=2,
        compile_cached=True,
        kv_cache_tokens=75840,
    ),
    Log(
        "gpu_0.11_tp4_shards_compile_graphs_issue25848.txt",
        last="Graph capturing finished in 38 secs, took 1.64 GiB",
        progress=("Loading safetensors checkpoint shards", 74, 96),
        compile_s=14.62,
        cuda_graphs_s=38.0,
        processes=3,
        compile_cached=True,
    ),
    Log(
        # one process prints everything: the engine core
        "gpu_v1-2026-01_tp1_compile_kv_tokens_vllm5090_8.txt",
        last="GPU KV cache size: 255,488 tokens",
        weights_s=96.586427,
        compile_s=75.96,
        processes=1,
        kv_cache_tokens=255488,
    ),
    Log(
        "gpu_0.15.2_pp2_kv_cache_too_small_issue34076.txt",
        last="ValueError: To serve at least one request with the models's max seq len (262144)"
        ", (24.0 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(3.18 GiB).",
        reason="ValueError: To serve at least one request with the models's max seq len "
        "(262144), (24.0 GiB KV cache is needed, which is larger than the available KV cache "
        "memory (3.18 GiB).",
    ),
    Log(
        # a C++ abort, no Python exception: the CUDA error, not the executor's "died"
        "gpu_v1-2026-09_tp2_custom_allreduce_invalid_argument_issue56180.txt",
        last="[shutdown] Executor: waiting for worker exit count=2",
        progress=("Capturing CUDA graphs (FULL)", 2, 2),
        reason="Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'",
    ),
    Log(
        # the excerpt ends inside the traceback: the out-of-memory log line, not a frame
        "gpu_0.11_tp1_oom_at_load_issue28143.txt",
        last="weight = ModelWeightParameter(data=torch.empty(",
        reason="Failed to create unquantized linear weights: CUDA out of memory. Tried to "
        "allocate 896.00 MiB. GPU 0 has a total capacity of 93.09 GiB of which 739.81 MiB is "
        "free.",
    ),
    # The GPU fixtures from before, for their progress lines.
    Log(
        "gpu_v1_tp1_issue38820.txt",
        last="Dynamo bytecode transform time: 3.54 s",
        progress=("Loading safetensors checkpoint shards", 9, 9),
        weights_s=31.657031,
        compile_s=3.54,
        processes=1,
    ),
    Log(
        "gpu_v0_ranks_issue14095.txt",
        last="Loading model weights took 8.4050 GB and 81.781383 seconds",
        progress=("Loading safetensors checkpoint shards", 17, 17),
        weights_s=81.786858,
        processes=8,
    ),
    Log(
        "gpu_v0_tp1_pr11349.txt",
        last="Graph capturing finished in 14 secs, took 0.21 GiB",
        progress=("Capturing CUDA graph shapes", 35, 35),
        cuda_graphs_s=14.0,
        processes=1,
    ),
]
FAILED = [log for log in LOGS if log.reason is not None]


def body(name: str) -> str:
    """The fixture's log lines: its first lines, comments on where it came from, left out."""
    lines = (FIXTURES / name).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("# "))


def server_log(name: str, tmp_path: Path) -> Path:
    log = tmp_path / "server.log"
    log.write_text(body(name))
    return log


def follow(name: str, tmp_path: Path) -> list[LoadProgress]:
    """Every state the launcher's follower reports while the server writes this log."""
    log = tmp_path / "follow.log"
    log.write_text("")
    follower = LogFollower(log)
    states = []
    with log.open("a") as out:
        for line in body(name).splitlines(keepends=True):
            out.write(line)
            out.flush()
            state = follower.poll()
            if state is not None:
                states.append(state)
    return states


def test_every_gpu_fixture_is_in_the_table() -> None:
    assert {log.name for log in LOGS} == {p.name for p in FIXTURES.glob("gpu_*.txt")} - {
        "gpu_v0_tp8_instructlab2092.txt",  # instructlab's waiting lines between vLLM's
        "gpu_v1_tp2_cached_club3090_142.txt",
        "gpu_v1_tp4_issue18136.txt",
    }


@pytest.mark.parametrize("log", LOGS, ids=lambda log: log.name)
def test_the_follower_reports_the_load_as_the_log_tells_it(log: Log, tmp_path: Path) -> None:
    states = follow(log.name, tmp_path)
    assert states and _is(states[-1].line, log.last)
    counted = [s for s in states if s.done is not None]
    if log.progress is None:
        assert counted == []
    else:
        newest = counted[-1]
        assert (newest.phase, newest.done, newest.total) == log.progress
        assert newest.percent == pytest.approx(100.0 * newest.done / newest.total, abs=1.0)
    if log.seen is not None:
        assert any(_is(s.line, log.seen) for s in states)


def _is(line: str, expected: str) -> bool:
    """The line is ``expected``, or it was cut at MAX_LINE and begins with it."""
    return line == expected or (len(line) == MAX_LINE and line.startswith(expected))


@pytest.mark.parametrize("log", LOGS, ids=lambda log: log.name)
def test_the_phases_and_kv_cache_are_vllms_numbers(log: Log, tmp_path: Path) -> None:
    phases = load_phases(split_lines(body(log.name)))
    expected = {
        "weights_s": log.weights_s,
        "compile_s": log.compile_s,
        "cuda_graphs_s": log.cuda_graphs_s,
    }
    assert {k: getattr(phases, k) for k in expected} == pytest.approx(expected)
    assert phases.processes == log.processes
    assert phases.compile_cached == log.compile_cached
    assert (phases.kv_cache_tokens, phases.kv_cache_blocks) == (
        log.kv_cache_tokens,
        log.kv_cache_blocks,
    )
    # As the runner stores them: the log's matching lines, read from the file, as JSON.
    stored = read_load_phases(server_log(log.name, tmp_path), None)
    if not phases.said_anything:
        assert stored is None
        return
    assert matching_lines(tmp_path / "server.log", NEEDLES)
    assert stored == phases.to_json()
    back = LoadPhases.from_json(stored)
    assert back is not None and back.to_json() == stored


@pytest.mark.parametrize("log", FAILED, ids=lambda log: log.name)
def test_a_failed_start_records_the_line_that_says_why(log: Log, tmp_path: Path) -> None:
    tail = read_tail(server_log(log.name, tmp_path), REASON_TAIL_LINES)
    reason = early_exit_reason(1, tail)
    assert log.reason is not None
    assert reason.startswith(EXITED + log.reason)
    assert len(reason) <= len(EXITED) + MAX_LINE


def test_the_server_process_builds_its_error_with_that_reason(tmp_path: Path) -> None:
    log = server_log("gpu_0.9_tpN_oom_graph_capture_issue19186.txt", tmp_path)
    server = ServerProcess(LaunchSpec(argv=["vllm", "serve"], port=8000, log_path=log))
    error = server._early_exit_error(1)
    assert error.reason == EXITED + "RuntimeError: CUDA error: out of memory"
    assert error.exit_code == 1 and error.log_tail.endswith("CUDA_LAUNCH_BLOCKING=1")
    killed = early_exit_reason(-9, read_tail(log, REASON_TAIL_LINES))
    assert killed.startswith("server was killed by SIGKILL before it was healthy (out of host")
    assert killed.endswith(": RuntimeError: CUDA error: out of memory")


@pytest.mark.parametrize("log", FAILED, ids=lambda log: log.name)
def test_only_a_port_in_use_is_the_hosts_doing(log: Log, tmp_path: Path) -> None:
    # A taken port is retried on another one (tuner/trial/runner.py); every other failure is
    # the settings' and counts against them.
    path = server_log(log.name, tmp_path)
    error = ServerProcess(LaunchSpec(argv=["vllm", "serve"], port=8000, log_path=path))
    made = error._early_exit_error(1)
    assert isinstance(made, LaunchError)
    assert isinstance(made, PortTakenError) == ("port_in_use" in log.name)


def test_the_nccl_version_is_read_from_vllms_line() -> None:
    assert parse_nccl_version(body("gpu_0.6_tp4_nccl_version_issue9046.txt")) == "2.21.5"
    assert (
        parse_nccl_version(body("gpu_0.5.4_tp8_nccl_unhandled_system_error_issue7800.txt")) is None
    )


def _add_failed_launch(storage: str, reason: str, log: Path | None = None) -> int:
    """A trial of the stored study whose launch failed, recorded as the runner and the sweep
    record a LaunchError: the launch's reason, log tail and phases, and the trial's reason."""
    store = Store(storage)
    rdb = optuna.storages.RDBStorage(storage)
    study = optuna.load_study(study_name="hand", storage=rdb)
    trial = study.ask()
    trial_id = rdb.get_trial_id_from_study_id_trial_number(
        rdb.get_study_id_from_name("hand"), trial.number
    )
    trial.set_user_attr(PARAMS_ATTR, {})
    trial.set_user_attr(ROLE_ATTR, "search")
    launch_id = store.add_launch(
        study="hand",
        trial_id=trial_id,
        trial_number=trial.number,
        role="search",
        config_hash="c",
        params={},
        env={},
        argv=["vllm", "serve"],
    )
    store.update_launch(
        launch_id,
        status=LaunchStatus.FAILED,
        reason=reason,
        log_tail=read_tail(log, 60) if log else None,
        load_phases=read_load_phases(log, None) if log else None,
    )
    trial.set_user_attr(REASON_ATTR, reason)
    study.tell(trial, state=TrialState.FAIL)
    return trial.number


def _shown(storage: str, number: int) -> tuple[str, str]:
    """Trial ``number``'s row of `tuner trials` and the first line of `tuner show`."""
    console = Console(record=True, width=2000)
    print_trials(storage, "hand", console)
    rows = [line for line in console.export_text().splitlines() if "│" in line]
    row = next(line for line in rows if line.split("│")[1].strip() == str(number))
    console = Console(record=True, width=2000)
    print_trial(storage, "hand", number, console)
    return row, console.export_text().splitlines()[0]


def test_tuner_trials_and_show_print_the_recorded_reason(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    reasons = {}
    for log in FAILED:
        path = server_log(log.name, tmp_path)
        reason = early_exit_reason(1, read_tail(path, REASON_TAIL_LINES))
        reasons[_add_failed_launch(storage, reason, path)] = reason
    rows = {row.number: row for row in trials_rows(storage, "hand")}
    assert {n: (rows[n].state, rows[n].reason) for n in reasons} == {
        n: ("fail", reason) for n, reason in reasons.items()
    }
    for number, reason in reasons.items():
        row, show = _shown(storage, number)
        assert reason in row
        assert show == f"Trial {number} (search) status failed: {reason}"


def test_a_reason_with_brackets_is_printed_whole(tmp_path: Path) -> None:
    # rich took a reason's "[type=value_error]" or "[red]" for markup and dropped it.
    storage = hand_study(tmp_path, [BASELINE])
    reason = "RuntimeError: x [type=value_error] [red]y[/] [repeated 7x across cluster]"
    number = _add_failed_launch(storage, reason)
    row, show = _shown(storage, number)
    assert reason in row and show.endswith(f"status failed: {reason}")


def test_show_prints_the_kv_cache_the_log_gave(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    store = Store(storage)
    launch = store.launch_for_trial("hand", 0)
    assert launch is not None
    for name, text in (
        ("gpu_0.11_tp2_cached_compile_kv_tokens_issue28228.txt", "KV cache 75,840 tokens"),
        ("gpu_0.5_tp8_gpu_blocks_issue7593.txt", "KV cache 22,982 blocks"),
    ):
        stored = read_load_phases(server_log(name, tmp_path), None)
        store.update_launch(launch.id, load_phases=stored)
        row = store.launch_for_trial("hand", 0)
        assert row is not None and load_line(row).endswith(f"; {text}")
    assert load_line(row).startswith("load (full): the server's log named no phase of it;")
