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
