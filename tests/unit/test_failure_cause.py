"""tuner.launcher.failure_cause: a failed launch's cause from its error and its log's tail.

On real vLLM logs (tests/unit/fixtures/vllm_logs, each naming the public thread it was copied
from) through the launcher's own path (ServerProcess builds the error from the log file), on
the simulator's memory-tight failures as it prints them, and on tuner's own reasons (a
timeout, a cancelled start, a taken port).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import sim_startup_error
from tests.unit.test_vllm_gpu_logs import server_log
from tuner.errors import BenchmarkError, LaunchError, PortTakenError, Terminated
from tuner.launcher.failure_cause import (
    BLAME,
    MEMORY,
    WORDS,
    blame,
    cause_of_error,
    cause_of_log,
    moment,
    words,
)
from tuner.launcher.server import ServerProcess
from tuner.launcher.spec import LaunchSpec

EXITED = "server exited with code 1 before it was healthy: "


@pytest.mark.parametrize(
    ("fixture", "cause"),
    [
        ("gpu_0.11_tp1_oom_at_load_issue28143.txt", "oom_load"),
        ("gpu_0.15.2_pp2_kv_cache_too_small_issue34076.txt", "oom_kv_cache"),
        ("gpu_0.9_tpN_oom_graph_capture_issue19186.txt", "oom_graph_capture"),
        ("gpu_0.5.4_tp8_nccl_unhandled_system_error_issue7800.txt", "nccl_error"),
        ("gpu_0.4_tp3_heads_not_divisible_ailabrecipes514.txt", "flag_refused"),
        ("gpu_0.10.2_tp1_config_validation_issue26161.txt", "flag_refused"),
        ("gpu_0.6_pp_port_in_use_issue8791.txt", "port_taken"),
        # a C++ abort in the custom all-reduce right after the graphs: not memory, not
        # plainly the settings' (a driver's bug as much): retried before it counts
        ("gpu_v1-2026-09_tp2_custom_allreduce_invalid_argument_issue56180.txt", "crash"),
    ],
)
def test_real_vllm_logs_name_their_cause(fixture: str, cause: str, tmp_path: Path) -> None:
    path = server_log(fixture, tmp_path)
    error = ServerProcess(LaunchSpec(argv=["vllm", "serve"], port=8000, log_path=path))
    made = error._early_exit_error(1)
    assert made.cause == cause
    assert cause_of_error(made) == cause
    # the error's short tail and reason alone say the same, for an error from elsewhere
    assert cause_of_log(made.reason, made.log_tail, exit_code=1) == cause


@pytest.mark.parametrize(
    ("argv", "cause"),
    [
        (["--max-num-seqs", "512"], "oom_graph_capture"),
        (["--max-num-seqs", "1024", "--gpu-memory-utilization", "0.92"], "oom_graph_capture"),
        (["--max-num-seqs", "1024", "--gpu-memory-utilization", "0.8"], "oom_kv_cache"),
        (["--max-num-batched-tokens", "16384", "--gpu-memory-utilization", "0.8"], "oom_kv_cache"),
        (["--tensor-parallel-size", "4"], "oom_load"),
        (["--max-num-batched-tokens", "128"], "flag_refused"),
    ],
)
def test_the_simulators_failures_name_their_cause(argv: list[str], cause: str) -> None:
    error = sim_startup_error("memory-tight", argv)
    assert error is not None and error.cause == cause
    # from the error's reason and short tail alone, as for an error made elsewhere
    assert cause_of_log(error.reason, error.log_tail, exit_code=1) == cause


def test_the_simulators_nccl_refusal_is_an_nccl_error() -> None:
    error = sim_startup_error("memory-tight", env={"NCCL_PROTO": "Foo"})
    assert error is not None and error.cause == "nccl_error"
    assert sim_startup_error("memory-tight", ["--max-num-seqs", "128"]) is None


def test_an_out_of_memory_takes_its_moment_from_the_tail() -> None:
    oom = EXITED + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    loading = "Loading safetensors checkpoint shards:  56% Completed | 36/64 [00:20<00:16]"
    profiling = '  File "/x/vllm/v1/worker/gpu_worker.py", line 250, in determine_available_memory'
    capturing = "Capturing CUDA graphs (decode, FULL):  10%|█         | 5/51 [00:01<00:09]"
    assert cause_of_log(oom) == "oom_load"  # nothing says later: the weights
    assert cause_of_log(oom, loading) == "oom_load"
    assert cause_of_log(oom, f"{loading}\nModel loading took 63 GiB\n{profiling}") == "oom_kv_cache"
    assert cause_of_log(oom, f"{loading}\n{profiling}\n{capturing}") == "oom_graph_capture"
    assert moment("") == 0 and moment(loading) == 1 and moment(capturing) == 3


def test_vllms_advice_before_a_capture_is_no_out_of_memory() -> None:
    # V0 prints this before every capture; a segfault after it is a crash, not memory.
    tail = (
        "INFO 08-01 10:00:00 model_runner.py:1008] CUDA graphs can take additional 1~3 GiB "
        "memory per GPU. If you are running out of memory, consider decreasing "
        "`gpu_memory_utilization` or enforcing eager mode.\nSegmentation fault (core dumped)"
    )
    reason = "server was killed by SIGSEGV before it was healthy: Segmentation fault (core dumped)"
    assert cause_of_log(reason, tail) == "crash"


def test_a_host_oom_kill_is_a_crash_until_seen_again() -> None:
    # "(out of host memory?)" is tuner's guess at a SIGKILL, not a GPU out-of-memory
    reason = "server was killed by SIGKILL before it was healthy (out of host memory?)"
    assert cause_of_log(reason, "Loading safetensors checkpoint shards: 10% | 6/64") == "crash"
    assert blame("crash") == "retry"


@pytest.mark.parametrize(
    ("reason", "exit_code", "cause"),
    [
        (
            "server not healthy after 60 s (startup_timeout_s); last log line: Loading",
            None,
            "timeout",
        ),
        ("startup cancelled before the server was healthy", None, "interrupted"),
        (
            "server exited with code 2 before it was healthy: vllm serve: error: unrecognized "
            "arguments: --max-num-seq 64",
            2,
            "flag_refused",
        ),
        (
            EXITED + "ValueError: max_num_batched_tokens (512) must be greater than or equal to "
            "max_num_seqs (1024).",
            1,
            "flag_refused",
        ),
        (
            EXITED + "RuntimeError: NCCL error: invalid argument (run with NCCL_DEBUG=WARN for "
            "details)",
            1,
            "nccl_error",
        ),
        ("server exited with code 1 before it was healthy", 1, "crash"),
    ],
)
def test_tuners_own_reasons(reason: str, exit_code: int | None, cause: str) -> None:
    assert cause_of_log(reason, exit_code=exit_code) == cause


def test_errors_from_outside_blame_nobody() -> None:
    assert cause_of_error(KeyboardInterrupt()) == "interrupted"
    assert cause_of_error(Terminated(15)) == "interrupted"
    assert cause_of_error(PortTakenError("port 8000 on 127.0.0.1 is already in use")) == (
        "port_taken"
    )
    assert cause_of_error(BenchmarkError("every request failed")) == "crash"
    # a cause the launcher read wins over the short tail's
    late = LaunchError(EXITED + "RuntimeError: CUDA error: out of memory", cause="oom_kv_cache")
    assert cause_of_error(late) == "oom_kv_cache"
    assert cause_of_error(LaunchError(EXITED + "RuntimeError: CUDA error: out of memory")) == (
        "oom_load"
    )


def test_every_cause_has_words_and_a_blame() -> None:
    assert set(WORDS) == set(BLAME)
    assert {c for c, b in BLAME.items() if b == "settings"} == {
        "oom_load",
        "oom_kv_cache",
        "oom_graph_capture",
        "nccl_error",
        "flag_refused",
    }
    assert {c for c, b in BLAME.items() if b == "outside"} == {"port_taken", "interrupted"}
    assert {c for c, b in BLAME.items() if b == "settings"} >= MEMORY
    assert words("oom_graph_capture") == "CUDA out of memory during graph capture"
    # a cause this tuner does not know (a newer one's, or none recorded) counts for nothing
    assert blame("from_the_future") == "outside" and blame(None) == "outside"
