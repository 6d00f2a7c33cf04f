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
# "(EngineCore_DP0 pid=123) ", "(VllmWorker TP0 pid=9) ", "[rank0]: "
_PROC_PREFIX = re.compile(r"^(?:\([^()]*\bpid=\d+\)\s*|\[rank\d+\]:\s*)+")
# "INFO 11-29 11:10:00 [loader.py:12] " (vLLM) and "INFO 2025-11-29 11:10:00,123 " styles
_LOG_PREFIX = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\s+"
    r"(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+(?:\[[^\]]*\]\s*)?"
)
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
    r"worker\w* (?:died|failed|exited)|subprocess\.CalledProcessError",
    re.IGNORECASE,
)
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


def clean_line(raw: str) -> str:
    """Without terminal escapes, process/log prefixes and surrounding space; cut to MAX_LINE."""
    text = _ANSI.sub("", raw).strip()
    text = _PROC_PREFIX.sub("", text)
    text = _LOG_PREFIX.sub("", text).strip()
    return text[:MAX_LINE]


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
    text = _PROC_PREFIX.sub("", _ANSI.sub("", raw).strip())
    prefix = _LOG_PREFIX.match(text)
    if prefix is not None and prefix["level"] == "DEBUG":
        return None
    line = clean_line(raw)
    if not line or _ACCESS_LOG.search(line):
        return None
    return LoadProgress(percent=None, done=None, total=None, line=line)


def split_lines(text: str) -> list[str]:
    """Lines as a terminal would show them: tqdm redraws with '\\r', so it breaks a line too."""
    return [line for line in _LINE_BREAK.split(text) if line.strip()]


def error_line(log_tail: str) -> str | None:
    """The line of a log tail that best says why the server died, or None if it is empty.

    In order: the last exception line that is not a mere wrapper ("RuntimeError:
    Engine core initialization failed. See root cause above"), the last wrapper,
    the last line at ERROR level or naming trouble, the last line.
    """
    raw_lines = split_lines(log_tail)
    if not raw_lines:
        return None
    cleaned: list[tuple[str, bool]] = []
    for raw in raw_lines:
        text = _ANSI.sub("", raw).strip()
        text = _PROC_PREFIX.sub("", text)
        prefix = _LOG_PREFIX.match(text)
        at_error_level = prefix is not None and prefix["level"] in ("ERROR", "CRITICAL", "FATAL")
        line = clean_line(raw)
        if line:
            cleaned.append((line, at_error_level))
    if not cleaned:
        return None
    exceptions = [line for line, _ in cleaned if _EXCEPTION.match(line)]
    roots = [line for line in exceptions if not _WRAPPER.search(line)]
    if roots:
        return roots[-1]
    if exceptions:
        return exceptions[-1]
    troubled = [line for line, at_error in cleaned if at_error or _TROUBLE.search(line)]
    if troubled:
        return troubled[-1]
    return cleaned[-1][0]
