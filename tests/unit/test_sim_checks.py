"""tuner.sim.checks: which configurations the simulated stack refuses, when, and with what text."""

from __future__ import annotations

import pytest

from tuner.sim.checks import PHASES, first_failure, startup_failures
from tuner.sim.profiles import PROFILES
from tuner.sim.settings import parse_settings

KIMI = "kimi-k2.5-int4-tp8"
MINIMAX = "minimax-m2.5-fp8-tp4"


def failure(profile: str, *argv: str, **env: str):  # noqa: ANN201 - Failure | None
    s = parse_settings(["--profile", profile, *argv], env, strict=False)
    return first_failure(PROFILES[profile], s)


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_defaults_start(profile: str) -> None:
    assert failure(profile) is None


@pytest.mark.parametrize(
    ("profile", "argv", "phase", "text"),
    [
        (
            KIMI,
            ["-tp", "6"],
            "start",
            "ValueError: Total number of attention heads (64) must be divisible by tensor "
            "parallel size (6).",
        ),
        (KIMI, ["-tp", "16"], "start", "cannot be larger than the number of available GPUs"),
        (
            KIMI,
            ["--max-num-batched-tokens", "512"],
            "start",
            "max_num_batched_tokens (512) must be greater than or equal to max_num_seqs (1024)",
        ),
        (KIMI, ["--max-model-len", "999999"], "start", "User-specified max_model_len"),
        (KIMI, ["--fail-at-start", "nope"], "start", "RuntimeError: nope"),
        (KIMI, ["-tp", "4"], "load", "torch.OutOfMemoryError: CUDA out of memory."),
        (
            KIMI,
            ["--gpu-memory-utilization", "0.8"],
            "warmup",
            "To serve at least one request with the models's max seq len (262144)",
        ),
        (KIMI, ["--fail-after-load"], "warmup", "RuntimeError: simulated failure after load"),
        (
            MINIMAX,
            ["-tp", "8"],
            "init",
            "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
            "weight quantization block_n = 128.",
        ),
        (
            MINIMAX,
            ["-tp", "6"],
            "init",
            "Total number of KV heads (8) must be divisible by tensor parallel size (6)",
        ),
        (MINIMAX, ["-tp", "2"], "load", "CUDA out of memory"),
    ],
)
def test_refusals(profile: str, argv: list[str], phase: str, text: str) -> None:
    f = failure(profile, *argv)
    assert f is not None
    assert f.phase == phase
    assert text in f.exception
    lines = f.traceback_lines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == f.exception


def test_minimax_tp8_with_expert_parallel_starts() -> None:
    assert failure(MINIMAX, "-tp", "8", "--enable-expert-parallel") is None


def test_small_max_model_len_rescues_low_memory_utilization() -> None:
    assert failure(KIMI, "--gpu-memory-utilization", "0.8", "--max-model-len", "65536") is None


def test_oom_happens_part_way_through_the_load() -> None:
    f = failure(KIMI, "-tp", "4")
    assert f is not None and 0.0 < f.load_fraction < 1.0


@pytest.mark.parametrize(
    ("env", "phase", "warn"),
    [
        ({"NCCL_PROTO": "Foo"}, "init", 'Invalid NCCL_PROTO "Foo"'),
        ({"NCCL_ALGO": "Foo"}, "init", 'Invalid NCCL_ALGO "Foo"'),
        ({"NCCL_MIN_NCHANNELS": "9", "NCCL_MAX_NCHANNELS": "4"}, "init", "is larger than"),
        ({"NCCL_ALGO": "Ring"}, "warmup", "no algorithm/protocol available"),
    ],
)
def test_nccl_refusals_print_an_nccl_warning(env: dict[str, str], phase: str, warn: str) -> None:
    f = failure(KIMI, **env)
    assert f is not None and f.phase == phase
    assert f.exception.startswith("RuntimeError: NCCL error:")
    (line,) = f.warn_lines("host", 42)
    assert line.startswith("host:42:42 [0] NCCL WARN ")
    assert warn in line


def test_failures_come_in_phase_order() -> None:
    s = parse_settings(["-tp", "6", "--fail-after-load"], {"NCCL_PROTO": "Foo"}, strict=False)
    phases = [f.phase for f in startup_failures(PROFILES[KIMI], s)]
    assert phases == sorted(phases, key=PHASES.index)
    assert phases[0] == "start" and "init" in phases and phases[-1] == "warmup"


# -- memory-tight: out of memory after the load ------------------------------------------------
MEMORY = "memory-tight"
SEQS = (None, "64", "128", "512", "1024")
BATCHED = (None, "4096", "16384")
UTILIZATION = (None, "0.8", "0.92")


def memory_failure(seqs: str | None, batched: str | None, util: str | None):  # noqa: ANN201
    argv = []
    for flag, value in (
        ("--max-num-seqs", seqs),
        ("--max-num-batched-tokens", batched),
        ("--gpu-memory-utilization", util),
    ):
        if value is not None:
            argv += [flag, value]
    return failure(MEMORY, *argv)


def test_memory_tight_fails_in_two_seqs_values_and_one_pair_only() -> None:
    # search_spaces/memory-sim.yaml's grid: every combination, and what fails.
    failed = {
        (seqs, batched, util)
        for seqs in SEQS
        for batched in BATCHED
        for util in UTILIZATION
        if memory_failure(seqs, batched, util) is not None
    }
    expected = {(s, b, u) for s in ("512", "1024") for b in BATCHED for u in UTILIZATION} | {
        (s, "16384", "0.8") for s in SEQS
    }
    assert failed == expected


@pytest.mark.parametrize(
    ("seqs", "batched", "util", "phase", "text"),
    [
        ("512", None, None, "capture", "torch.OutOfMemoryError: CUDA out of memory."),
        ("1024", None, "0.92", "capture", "allocated in private pools (e.g., CUDA Graphs)"),
        ("512", None, "0.8", "warmup", "ValueError: To serve at least one request"),
        (
            "1024",
            None,
            "0.8",
            "warmup",
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/",
        ),
        (None, "16384", "0.8", "warmup", "max seq len (65536), (4.29 GiB KV cache is needed"),
    ],
)
def test_memory_tight_fails_after_the_load_with_vllms_words(
    seqs: str | None, batched: str | None, util: str | None, phase: str, text: str
) -> None:
    f = memory_failure(seqs, batched, util)
    assert f is not None and f.phase == phase
    assert text in f.exception
    frames = "\n".join(f.frames)
    # the frames a reader of the log tells the moment by
    assert ("capture_model" in frames) == (phase == "capture")
    assert ("_initialize_kv_caches" in frames) == (phase == "warmup")


def test_without_cuda_graphs_the_graphs_cannot_run_out() -> None:
    assert memory_failure("512", None, None) is not None
    assert failure(MEMORY, "--max-num-seqs", "512", "--enforce-eager") is None
    assert failure(MEMORY, "--max-num-seqs", "512", "-O0") is None


def test_the_other_profiles_keep_their_memory() -> None:
    # Without memory figures the scheduler's limits cost nothing: Kimi starts at 1024 seqs.
    assert failure(KIMI, "--max-num-seqs", "1024", "--max-num-batched-tokens", "16384") is None
