"""Parsing a server log: progress lines, phases, and the reason a server died."""

from __future__ import annotations

import pytest

from tuner.launcher.progress import (
    LoadProgress,
    clean_line,
    describe_line,
    error_line,
    parse_progress,
    split_lines,
)


def test_vllm_checkpoint_shards_line() -> None:
    line = "Loading safetensors checkpoint shards:  56% Completed | 36/64 [00:20<00:16,  1.80it/s]"
    progress = parse_progress(line)
    assert progress == LoadProgress(percent=56.0, done=36, total=64, line=line)
    assert progress.phase == "Loading safetensors checkpoint shards"


def test_tqdm_bar_with_process_prefix_and_escapes() -> None:
    raw = (
        "\x1b[1;36m(EngineCore_DP0 pid=812)\x1b[0;0m Capturing CUDA graphs (mixed prefill-decode,"
        " PIECEWISE): 100%|██████████| 67/67 [00:03<00:00, 18.50it/s]"
    )
    progress = parse_progress(raw)
    assert progress is not None
    assert (progress.percent, progress.done, progress.total) == (100.0, 67, 67)
    assert progress.line.startswith("Capturing CUDA graphs")
    assert progress.phase == "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)"


@pytest.mark.parametrize(
    ("raw", "percent", "done", "total"),
    [
        ("Loading weights 12/67", pytest.approx(100 * 12 / 67), 12, 67),
        ("Capturing CUDA graphs ... 12/67 [00:01<00:05]", pytest.approx(100 * 12 / 67), 12, 67),
        ("Processed prompts:   0%|          | 0/8 [00:00<?, ?it/s]", 0.0, 0, 8),
        ("Downloading shards: 3/0", None, 3, 0),
    ],
)
def test_count_only_lines(raw: str, percent: object, done: int, total: int) -> None:
    progress = parse_progress(raw)
    assert progress is not None
    assert progress.percent == percent
    assert (progress.done, progress.total) == (done, total)


@pytest.mark.parametrize(
    "raw",
    [
        "INFO 11-29 11:10:00 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000",
        "gpu_memory_utilization=90% of total",
        "date 2025/11/29 and 3/4 of the way",
        "",
    ],
)
def test_not_progress(raw: str) -> None:
    assert parse_progress(raw) is None


def test_phase_line_strips_the_log_prefix() -> None:
    state = describe_line(
        "(APIServer pid=1) INFO 11-29 11:10:00 [loader.py:12] Loading weights took 12.3 seconds"
    )
    assert state == LoadProgress(None, None, None, "Loading weights took 12.3 seconds")
    assert state.phase == state.line
    assert describe_line("   \x1b[0m  ") is None


def test_clean_line_is_bounded() -> None:
    assert len(clean_line("x" * 10_000)) == 300


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        # vLLM before 0.8: the file without its opening bracket
        (
            "(VllmWorkerProcess pid=9) INFO 08-17 23:29:21 model_runner.py:266] Loading model "
            "weights took 1.5874 GB",
            "Loading model weights took 1.5874 GB",
        ),
        # Ray's prefix with the worker's address, and its deduplication suffix
        (
            "(RayWorkerWrapper pid=2, ip=10.0.0.2) INFO 10-08 13:12:26 [gpu_model_runner.py:2007] "
            "Model loading took 7.3272 GiB and 10.485893 seconds [repeated 4x across cluster]",
            "Model loading took 7.3272 GiB and 10.485893 seconds",
        ),
        # uvicorn's own level prefix
        ("INFO:     Application startup complete.", "Application startup complete."),
        # NCCL's host:pid:tid [device] prefix (NCCL_DEBUG=INFO)
        (
            "udc-an26-1:652693:652693 [0] NCCL INFO Bootstrap : Using ib4:10.155.48.47<0>",
            "NCCL INFO Bootstrap : Using ib4:10.155.48.47<0>",
        ),
    ],
)
def test_clean_line_knows_each_prefix(raw: str, clean: str) -> None:
    assert clean_line(raw) == clean


def test_split_lines_breaks_on_carriage_returns() -> None:
    assert split_lines("a\r b\n\nc\r\n") == ["a", " b", "c"]


VLLM_REFUSAL = """\
INFO 11-29 11:10:00 [config.py:1] Using max model len 196608
(EngineCore_DP0 pid=812) ERROR 11-29 11:10:05 [core.py:708] EngineCore failed to start.
(EngineCore_DP0 pid=812) ERROR 11-29 11:10:05 [core.py:708] Traceback (most recent call last):
(EngineCore_DP0 pid=812) ERROR 11-29 11:10:05 [core.py:708]   File "core.py", line 699, in run
(EngineCore_DP0 pid=812) ERROR 11-29 11:10:05 [core.py:708] ValueError: The output_size of gate's\
 and up's weight = 192 is not divisible by weight quantization block_n = 128.
Traceback (most recent call last):
  File "/usr/bin/vllm", line 10, in <module>
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_error_line_prefers_the_root_cause() -> None:
    assert error_line(VLLM_REFUSAL) == (
        "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
        "weight quantization block_n = 128."
    )


def test_error_line_takes_a_wrapper_when_it_is_all_there_is() -> None:
    tail = (
        "Traceback (most recent call last):\n"
        "RuntimeError: Engine core initialization failed. See root cause above.\n"
    )
    line = error_line(tail)
    assert line is not None and line.startswith("RuntimeError: Engine core initialization failed")


def test_error_line_dotted_exception() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"
    assert error_line(f"loading\n[rank0]: {oom}\nbye\n") == oom


def test_error_line_skips_frames_and_takes_a_telling_line_over_a_wrapper() -> None:
    # A C++ abort names the failure; the executor's "died" and V1's wrapper only follow it.
    tail = (
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'\n"
        "(EngineCore pid=3) ERROR 09-10 09:37:41 [multiproc_executor.py:314] Worker proc "
        "VllmWorker-0 died unexpectedly (exit code: None), shutting down executor.\n"
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.\n"
    )
    assert error_line(tail) == (
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'"
    )
    # A tail that ends inside a traceback: the frames are never the reason.
    frames = (
        "(EngineCore_DP0 pid=1) ERROR 11-05 12:19:32 [core.py:708] EngineCore failed to start.\n"
        "(EngineCore_DP0 pid=1) ERROR 11-05 12:19:32 [core.py:708] Traceback (most recent call "
        "last):\n"
        '(EngineCore_DP0 pid=1) ERROR 11-05 12:19:32 [core.py:708]   File "linear.py", line 2\n'
        "(EngineCore_DP0 pid=1) ERROR 11-05 12:19:32 [core.py:708]     weight = torch.empty(\n"
    )
    assert error_line(frames) == "EngineCore failed to start."
    # An INFO line that mentions memory is advice, not the failure.
    advice = "INFO 08-19 07:51:12 model_runner.py:1028] If you are running out of memory, ...\n"
    assert error_line(advice + "ERROR 08-19 07:51:13 x.py:1] worker gone\n") == "worker gone"


def test_error_line_adds_pydantics_reason() -> None:
    # The message as vLLM's PR 52535 quotes it, in pydantic's layout of issue 26161 (the
    # fixture gpu_0.10.2_tp1_config_validation_issue26161.txt).
    tail = (
        "(APIServer pid=7) pydantic_core._pydantic_core.ValidationError: 1 validation error for "
        "VllmConfig\n"
        "(APIServer pid=7)   Value error, Total number of attention heads (64) must be divisible "
        "by tensor parallel size (3). [type=value_error, input_value=ArgsKwargs((), {}), "
        "input_type=ArgsKwargs]\n"
        "(APIServer pid=7)     For further information visit https://errors.pydantic.dev/2.12/v\n"
    )
    assert error_line(tail) == (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig: "
        "Value error, Total number of attention heads (64) must be divisible by tensor "
        "parallel size (3)."
    )


def test_error_line_without_an_exception() -> None:
    tail = (
        "INFO 11-29 11:10:00 [x.py:1] fine\n"
        "ERROR 11-29 11:10:01 [x.py:2] NCCL WARN bad\n"
        "INFO 11-29 11:10:02 [x.py:3] shutting down\n"
    )
    assert error_line(tail) == "NCCL WARN bad"
    assert error_line("just\nsome\nlines\n") == "lines"
    assert error_line("could not bind to port 8000\nexiting\n") == "could not bind to port 8000"
    assert error_line("") is None
    assert error_line("\n \r\n") is None


@pytest.mark.parametrize(
    "raw",
    [
        "(APIServer pid=7) DEBUG 11-29 11:21:47 [flood.py:42] line 9 xxxxxxxx",
        'INFO:     127.0.0.1:51022 - "GET /health HTTP/1.1" 200 OK',
        '(APIServer pid=7) INFO 11-29 11:21:47 [api.py:1] 1.2.3.4:1 - "GET /health HTTP/1.1" 200',
    ],
)
def test_noise_is_not_a_phase(raw: str) -> None:
    assert describe_line(raw) is None
