"""Shared by the tests of tuner.check: a fake --help, small space files, the report as text."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tuner.check import CheckReport, check_space
from tuner.space.spec import load_space

VLLM_HELP = """usage: api_server.py [-h] [--model MODEL] [--host HOST] [--port PORT]
                     [--dtype {auto,bfloat16,float,float16,float32,half}]
                     [--tokenizer-mode ['auto', 'hf', 'mistral']]
                     [--enforce-eager | --no-enforce-eager]
                     [--max-num-seqs MAX_NUM_SEQS]
                     [--max-num-batched-tokens MAX_NUM_BATCHED_TOKENS]
                     [--compilation-config COMPILATION_CONFIG]
                     [--optimization-level OPTIMIZATION_LEVEL]
  --tensor-parallel-size TENSOR_PARALLEL_SIZE, -tp TENSOR_PARALLEL_SIZE
  --enable-expert-parallel, --no-enable-expert-parallel, -ep
  --optimization-level OPTIMIZATION_LEVEL
                        with -O0 having the best startup time. (default: 2)
"""

PLAIN_HELP = """usage: server [-h] [--port PORT] [--threads N] [-O LEVEL] [--mode {fast,slow}]
"""


class FakeHelp:
    """Answers --help like a server would, and counts the calls."""

    def __init__(self, text: str = VLLM_HELP, code: int | None = 0, grouped: bool = False):
        self.text, self.code, self.grouped = text, code, grouped
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], env: Mapping[str, str], timeout_s: float):
        self.calls.append(argv)
        if self.grouped and argv[-1] == "--help":
            return self.code, "usage: x\n\nConfig Groups:\n  ModelConfig  the model\n  --model"
        return self.code, self.text


SIM = ["{python}", "-m", "tuner.sim", "--host", "127.0.0.1", "--port", "{port}"]


def space_file(tmp_path: Path, **sections: Any) -> Path:
    raw: dict[str, Any] = {"server": {"command": list(SIM)}}
    for key, value in sections.items():
        if key == "command":
            raw["server"]["command"] = value
        elif key in ("env", "port", "cpus", "gpus"):
            raw["server"][key] = value
        else:
            raw[key] = value
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def run_check(tmp_path: Path, reader: FakeHelp | None = None, **sections: Any) -> CheckReport:
    space = load_space(space_file(tmp_path, **sections))
    return check_space(
        space,
        storage=f"sqlite:///{tmp_path}/check.db",
        help_cache_dir=tmp_path / "cache",
        read_help=reader or FakeHelp(),
    )


def messages(report: CheckReport, level: str) -> str:
    return "\n".join(f"{i.key}: {i.message}" for i in report.items if i.level == level)
