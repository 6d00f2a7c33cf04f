"""tuner.check: NCCL's P2P and SHM knobs, alone (values NCCL reads) and together (overlaps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.check.helpers import messages, run_check
from tuner.check import check_nccl_variable


@pytest.mark.parametrize(
    ("name", "value", "level", "words"),
    [
        *[("NCCL_P2P_LEVEL", name, None, "") for name in ("LOC", "PIX", "PXB", "PHB", "SYS")],
        ("NCCL_P2P_LEVEL", "0", "warning", "reads 0 as LOC"),
        ("NCCL_P2P_LEVEL", "2", "warning", "reads 2 as PXB"),  # not NVL's new numbering
        ("NCCL_P2P_LEVEL", "5", "warning", "reads 5 as SYS"),
        ("NCCL_P2P_LEVEL", "pix", "error", "case-sensitively"),
        ("NCCL_P2P_LEVEL", "PXI", "error", "did you mean PXB?"),
        ("NCCL_P2P_LEVEL", "NVB", "warning", "does not document"),
        ("NCCL_P2P_LEVEL", "-1", "error", "ignores anything else"),
        ("NCCL_NET_GDR_LEVEL", "phb", "error", "write PHB"),
        ("NCCL_P2P_PXN_LEVEL", "2", None, ""),  # a number, not a path level
        ("NCCL_P2P_PXN_LEVEL", "PXB", "error", "0, 1, 2"),
        ("NCCL_P2P_DISABLE", "1", None, ""),
        ("NCCL_P2P_DISABLE", "true", "error", "0 or 1"),
        ("NCCL_SHM_DISABLE", "2", "error", "0 or 1"),
        ("NCCL_BUFFSIZE", "1048576", None, ""),
        ("NCCL_BUFFSIZE", "4M", "error", "4 bytes"),
        ("NCCL_BUFFSIZE", "0", "error", "positive number of bytes"),
        ("NCCL_BUFFSIZE", "-4194304", "error", "positive number of bytes"),
        ("NCCL_BUFFSIZE", "big", "error", "positive number of bytes"),
        ("NCCL_BUFFSIZE", "524288", "warning", "below 1 MiB"),
    ],
)
def test_transport_and_buffer_values(name: str, value: str, level: str | None, words: str) -> None:
    found = check_nccl_variable(name, value)
    if level is None:
        assert found == []
    else:
        assert [f[0] for f in found] == [level], found
        assert words in found[0][1]


def _env_param(name: str, *choices: object) -> dict[str, object]:
    return {"env": name, "choices": ["default", *choices]}


def test_p2p_disable_and_p2p_level_together_overlap(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        params={
            "NCCL_P2P_DISABLE": _env_param("NCCL_P2P_DISABLE", 1),
            "NCCL_P2P_LEVEL": _env_param("NCCL_P2P_LEVEL", "PHB"),
        },
    )
    warnings = messages(report, "warning")
    assert "params.NCCL_P2P_LEVEL: NCCL_P2P_DISABLE=1 (params.NCCL_P2P_DISABLE)" in warnings
    assert "keep one of the two" in warnings


def test_either_p2p_knob_alone_is_no_overlap(tmp_path: Path) -> None:
    for params in (
        {"NCCL_P2P_LEVEL": _env_param("NCCL_P2P_LEVEL", "LOC", "SYS")},
        {"NCCL_P2P_DISABLE": _env_param("NCCL_P2P_DISABLE", 0, 1)},
    ):
        report = run_check(tmp_path, params=params)
        assert "P2P" not in messages(report, "warning") + messages(report, "error")


def test_p2p_disable_0_does_not_overlap(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        env={"NCCL_P2P_DISABLE": "0"},
        params={"NCCL_P2P_LEVEL": _env_param("NCCL_P2P_LEVEL", "SYS")},
    )
    assert "overrides" not in messages(report, "warning")


@pytest.mark.parametrize(
    ("env", "params", "words"),
    [
        ({"NCCL_P2P_DISABLE": "1"}, {}, "server.env.NCCL_P2P_DISABLE"),
        ({}, {"NCCL_P2P_LEVEL": _env_param("NCCL_P2P_LEVEL", "LOC")}, "NCCL_P2P_LEVEL=LOC"),
        ({}, {"NCCL_P2P_LEVEL": _env_param("NCCL_P2P_LEVEL", "0")}, "NCCL_P2P_LEVEL=0"),
    ],
)
def test_shm_disable_with_p2p_off_leaves_the_network(
    tmp_path: Path, env: dict[str, str], params: dict[str, object], words: str
) -> None:
    params = {**params, "NCCL_SHM_DISABLE": _env_param("NCCL_SHM_DISABLE", 1)}
    report = run_check(tmp_path, env=env, params=params)
    warnings = messages(report, "warning")
    assert "params.NCCL_SHM_DISABLE: NCCL_SHM_DISABLE=1 with P2P off" in warnings
    assert words in warnings and "network transport" in warnings


def test_shm_disable_alone_says_where_it_matters(tmp_path: Path) -> None:
    params = {"NCCL_SHM_DISABLE": _env_param("NCCL_SHM_DISABLE", 1)}
    warnings = messages(run_check(tmp_path, params=params), "warning")
    assert "only matters where NCCL does not use P2P" in warnings
    assert "with P2P off" not in warnings


def test_shm_disable_0_is_quiet(tmp_path: Path) -> None:
    report = run_check(tmp_path, env={"NCCL_SHM_DISABLE": "0", "NCCL_P2P_DISABLE": "1"})
    assert "SHM" not in messages(report, "warning")
