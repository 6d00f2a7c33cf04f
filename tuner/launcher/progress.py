"""Reading a server log line by line: load progress, phase, and why it died.

Pure text functions. vLLM (through tqdm) writes progress such as
``Loading safetensors checkpoint shards:  56% Completed | 36/64 [00:20<00:16, 1.80it/s]``
or ``Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████| 67/67 [...]``;
every other line is a phase description. When a server dies, the reason is the
most telling line of its log tail: the root exception, not the wrapper that says
"see root cause above".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE = 300
"""Characters kept of a progress or reason line (the log file keeps everything)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")
# "(EngineCore_DP0 pid=123) ", "(VllmWorker TP0 pid=9) ", Ray's "(RayWorkerWrapper pid=2,
# ip=10.0.0.2) ", "[rank0]: ". One space after each is the prefix's: a traceback's indentation
# after it is the message's (it tells a frame from the exception line).
_PROC_PREFIX = re.compile(r"^(?:\([^()]*\bpid=\d+(?:,\s*ip=[^()\s]+)?\) ?|\[rank\d+\]: ?)+")
# "INFO 11-29 11:10:00 [loader.py:12] " (vLLM 0.8 on), "INFO 08-23 08:25:25 worker.py:132] "
# (vLLM before 0.8: the file without its opening bracket) and "INFO 2025-11-29 11:10:00,123 ".
_LOG_PREFIX = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\s+"
    r"(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+"
    r"(?:\[[^\]]*\] ?|[\w.-]+\.py:\d+\] ?)?"
)
# uvicorn's own lines, which vLLM's API server prints as they are: "INFO:     Started server
# process [593]", "ERROR:    [Errno 98] error while attempting to bind on address ...".
_UVICORN_PREFIX = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
# NCCL's own lines with NCCL_DEBUG set, "host:pid:tid [cuda device] NCCL INFO ...": NCCL stays.
_NCCL_PREFIX = re.compile(r"^[\w.-]+:\d+:\d+ \[\d+\] (?=NCCL )")
# Ray's deduplication of a line that several workers printed: it says nothing of the line.
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]$")
_ERROR_LEVELS = ("ERROR", "CRITICAL", "FATAL")
_PERCENT = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d+)?)%")
_COUNT = re.compile(r"(?<![\w/.])(\d+)/(\d+)(?![\w/])")
_COUNT_THEN_TIMES = re.compile(r"(?<![\w/.])\d+/\d+\s*\[")
_PHASE_WORD = re.compile(
    r"\b(loading|capturing|compiling|downloading|processing|fetching|profiling|warming)\b",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)"
    r"(?::\s?.*)?$"
)
# Exceptions that only say that something else failed: the root cause is earlier.
_WRAPPER = re.compile(
    r"see root cause above|initialization failed|engine process failed|"
    r"^(?:SystemExit|KeyboardInterrupt|\w*CancelledError)\b|"
    r"worker\w* (?:died|failed|exited)|subprocess\.CalledProcessError|"
    # V1's "EngineCore failed to start." and "Worker proc VllmWorker-0 died unexpectedly (exit
    # code: None), shutting down executor.": that something failed, not why
    r"\bfailed to start\b|\bdied unexpectedly\b",
    re.IGNORECASE,
)
# A line that names the failure itself even when it is no Python exception: a CUDA or NCCL error
# from C++ ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'"),
# an allocation that failed inside a log line ("Failed to create unquantized linear weights: CUDA
# out of memory. ..."), NCCL's "NCCL WARN", a port taken.
_TELLING = re.compile(
    r"out of memory|\bOutOfMemory|\bcuda error\b|\bnccl (?:warn|error)\b|illegal memory access|"
    r"address already in use|\bEADDRINUSE\b|\bnot divisible\b|must be divisible|"
    r"segmentation fault|core dumped",
    re.IGNORECASE,
)
# pydantic's config errors (vLLM 0.10 on: ModelConfig, VllmConfig...) say why on the next line:
# "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig" then
# "  Value error, Expecting value: line 1 column 1 (char 0) [type=value_error, input_value=...]".
_VALIDATION = re.compile(r"ValidationError: \d+ validation errors? for \w+$")
_PYDANTIC_TAIL = re.compile(r"\s*\[type=.*$")
_TROUBLE = re.compile(
    r"\b(?:error|failed|failure|fatal|out of memory|oom|cannot|could not|not divisible|"
    r"refused|abort(?:ed)?|segmentation fault|core dumped)\b",
    re.IGNORECASE,
)
_LINE_BREAK = re.compile(r"[\r\n]+")
_ACCESS_LOG = re.compile(r'"(?:GET|POST|HEAD|PUT|DELETE|OPTIONS|PATCH) \S* HTTP/[\d.]+" \d{3}')


@dataclass(frozen=True)
class LoadProgress:
    """Where a loading server is: a progress count when the line has one, and the line."""

    percent: float | None
    done: int | None
    total: int | None
    line: str

    @property
    def phase(self) -> str:
        """The description before the numbers, e.g. 'Loading safetensors checkpoint shards'."""
        if self.percent is None and self.done is None:
            return self.line
        match = _PERCENT.search(self.line) or _COUNT.search(self.line)
        head = self.line[: match.start()] if match else self.line
        return head.strip().rstrip(":|").strip() or self.line


@dataclass(frozen=True)
class _Line:
    """One log line taken apart: its level (None: no prefix says it) and its message."""

    level: str | None
    text: str
    """The message without escapes, prefixes and surrounding space, cut to MAX_LINE."""
    indented: bool
    """The message began with a space: a traceback's frame, or a continuation line."""

    @property
    def frame(self) -> bool:
        """Part of a traceback that is not its exception: never the reason."""
        return (
            self.indented
            or self.text.startswith("Traceback (most recent call last)")
            or not self.text.strip("^~ ")
        )


def _parse(raw: str) -> _Line:
    text = _ANSI.sub("", raw).rstrip()
    text = _PROC_PREFIX.sub("", text)
    text = _NCCL_PREFIX.sub("", text)
    level = None
    prefix = _LOG_PREFIX.match(text) or _UVICORN_PREFIX.match(text)
    if prefix is not None:
        level = prefix["level"]
        text = text[prefix.end() :]
    indented = text[:1].isspace()
    text = _RAY_REPEATED.sub("", text.strip())
    return _Line(level=level, text=text[:MAX_LINE], indented=indented)


def clean_line(raw: str) -> str:
    """Without terminal escapes, process/log prefixes and surrounding space; cut to MAX_LINE."""
    return _parse(raw).text


def parse_progress(raw: str) -> LoadProgress | None:
    """A LoadProgress with numbers if the line is a progress line, else None."""
    line = clean_line(raw)
    percent_match = _PERCENT.search(line)
    count_match = _COUNT.search(line)
    is_progress = (percent_match is not None and "|" in line) or (
        count_match is not None
        and (_COUNT_THEN_TIMES.search(line) is not None or _PHASE_WORD.search(line) is not None)
    )
    if not is_progress:
        return None
    done = total = None
    if count_match is not None:
        done, total = int(count_match[1]), int(count_match[2])
    if percent_match is not None:
        percent: float | None = float(percent_match[1])
    elif total:
        percent = 100.0 * (done or 0) / total
    else:
        percent = None
    return LoadProgress(percent=percent, done=done, total=total, line=line)


def describe_line(raw: str) -> LoadProgress | None:
    """Progress if the line has numbers, a phase (numbers None) if it says something,
    else None: blank lines, DEBUG lines and HTTP access-log lines (our own health
    probes) are noise, not phases."""
    progress = parse_progress(raw)
    if progress is not None:
        return progress
    line = _parse(raw)
    if line.level == "DEBUG" or not line.text or _ACCESS_LOG.search(line.text):
        return None
    return LoadProgress(percent=None, done=None, total=None, line=line.text)


def split_lines(text: str) -> list[str]:
    """Lines as a terminal would show them: tqdm redraws with '\\r', so it breaks a line too."""
    return [line for line in _LINE_BREAK.split(text) if line.strip()]


def error_line(log_tail: str) -> str | None:
    """The line of a log tail that best says why the server died, or None if it is empty.

    In order: the last exception line that is not a mere wrapper ("RuntimeError: Engine core
    initialization failed. See root cause above"), with pydantic's reason after it; the last
    line that names a failure without being an exception (a CUDA or NCCL error from C++, an
    out-of-memory inside a log line: vLLM's worker may die before its traceback's end is
    written); the last wrapper; the last line at ERROR level or naming trouble; the last line.
    A traceback's frames are never the reason.
    """
    lines = [line for line in (_parse(raw) for raw in split_lines(log_tail)) if line.text]
    if not lines:
        return None
    exceptions = [
        i for i, line in enumerate(lines) if not line.indented and _EXCEPTION.match(line.text)
    ]
    roots = [i for i in exceptions if not _WRAPPER.search(lines[i].text)]
    if roots:
        return _with_reason(lines, roots[-1])
    others = [i for i, line in enumerate(lines) if not line.frame and i not in exceptions]
    telling = [
        i
        for i in others
        if lines[i].level not in ("DEBUG", "INFO") and _TELLING.search(lines[i].text)
    ]
    if telling:
        return lines[telling[-1]].text
    if exceptions:
        return lines[exceptions[-1]].text
    troubled = [
        i
        for i in others
        if (lines[i].level in _ERROR_LEVELS or _TROUBLE.search(lines[i].text))
        and not _WRAPPER.search(lines[i].text)
    ]
    if troubled:
        return lines[troubled[-1]].text
    return lines[(others or [len(lines) - 1])[-1]].text


def _with_reason(lines: list[_Line], index: int) -> str:
    """The exception line, and pydantic's reason when the exception is a ValidationError."""
    text = lines[index].text
    if not _VALIDATION.search(text):
        return text
    for line in lines[index + 1 :]:
        if not line.indented:
            break
        reason = _PYDANTIC_TAIL.sub("", line.text)
        if reason:
            return f"{text}: {reason}"[:MAX_LINE]
    return text
