"""`tuner probe allreduce` and `tuner probe nccl-tests` without running a probe."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from tuner.cli import app
from tuner.probe.allreduce import AllreduceOptions, import_torch, parse_sizes, resolve
from tuner.probe.run import ProbeError


def test_sizes_take_k_m_and_g_suffixes() -> None:
    assert parse_sizes("14336, 128K,1M,1g") == (14336, 131072, 1 << 20, 1 << 30)
    for bad in ("", "big", "0", "-3"):
        with pytest.raises(ProbeError, match="--sizes"):
            parse_sizes(bad)


def test_without_torch_the_command_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(ProbeError, match="pip install torch"):
        import_torch()
    result = CliRunner().invoke(app, ["probe", "allreduce", "--sizes", "8"])
    assert result.exit_code == 1
    assert "pip install torch" in result.output and "nccl-tests" in result.output


def _torch(gpus: int, nccl: bool = True, gloo: bool = True) -> SimpleNamespace:
    return SimpleNamespace(
        cuda=SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus),
        distributed=SimpleNamespace(is_nccl_available=lambda: nccl, is_gloo_available=lambda: gloo),
    )


def test_auto_is_nccl_on_every_visible_gpu_and_gloo_without_one() -> None:
    assert resolve(AllreduceOptions(sizes=(8,)), _torch(8)) == ("nccl", 8)
    assert resolve(AllreduceOptions(sizes=(8,), world_size=2), _torch(8)) == ("nccl", 2)
    assert resolve(AllreduceOptions(sizes=(8,)), _torch(0, nccl=False)) == ("gloo", 2)
    assert resolve(AllreduceOptions(sizes=(8,), world_size=4), _torch(0)) == ("gloo", 4)


def test_a_request_the_machine_cannot_meet_is_explained() -> None:
    with pytest.raises(ProbeError, match="needs a CUDA build of torch and a visible GPU"):
        resolve(AllreduceOptions(sizes=(8,), backend="nccl"), _torch(0))
    with pytest.raises(ProbeError, match="needs 4 GPUs, one per rank; 1 are visible"):
        resolve(AllreduceOptions(sizes=(8,), backend="nccl", world_size=4), _torch(1))
    with pytest.raises(ProbeError, match="without gloo"):
        resolve(AllreduceOptions(sizes=(8,), backend="gloo"), _torch(0, gloo=False))


def test_the_cli_checks_its_backend_and_the_nccl_tests_command() -> None:
    result = CliRunner().invoke(app, ["probe", "allreduce", "--sizes", "8", "--backend", "mpi"])
    assert result.exit_code == 2 and "use auto, nccl or gloo" in result.output
    result = CliRunner().invoke(app, ["probe", "nccl-tests"])
    assert result.exit_code == 1 and "give the nccl-tests command after --" in result.output
