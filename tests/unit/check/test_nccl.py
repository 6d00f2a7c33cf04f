"""tuner.check.nccl: NCCL variables spelled and valued as NCCL accepts them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.check.helpers import messages, run_check
from tuner.check import check_nccl_variable


def test_nccl_spelling_and_values_in_the_space(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        env={"NCCL_ALOG": "allreduce:ring", "NCCL_DEBUG": "INFO"},
        params={
            "NCCL_ALGO": {"env": "NCCL_ALGO", "choices": ["default", "Ring", "allreduce:tree"]},
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL129"]},
        },
    )
    errors, warnings = messages(report, "error"), messages(report, "warning")
    assert "server.env.NCCL_ALOG" in errors and "did you mean NCCL_ALGO?" in errors
    assert "LL129" in errors
    assert "params.NCCL_ALGO: bare NCCL_ALGO='Ring'" in warnings
    assert "'allreduce:ring'" in warnings
    assert "allreduce:tree" not in errors + warnings


@pytest.mark.parametrize(
    ("name", "value", "level", "words"),
    [
        ("NCCL_ALGO", "Tree", "warning", "allreduce:tree"),
        ("NCCL_ALGO", "allreduce:tree;allgather:ring", None, ""),
        ("NCCL_ALGO", "^tree", "warning", "per-collective"),
        ("NCCL_ALGO", "allreduce:rnig", "error", "unknown value"),
        ("NCCL_ALGO", "allreduc:ring", "error", "unknown collective"),
        ("NCCL_PROTO", "^LL128", None, ""),
        ("NCCL_PROTO", "LL256", "error", "NCCL accepts LL, LL128, Simple"),
        ("NCCL_MIN_NCHANNELS", "4", None, ""),
        ("NCCL_MAX_NCHANNELS", "0", "error", "outside 1..64"),
        ("NCCL_MAX_NCHANNELS", "eight", "error", "not an integer"),
        ("NCCL_BUFFSIZE", "8388608", None, ""),
        ("NCCL_BUFFSIZE", "3000000", "warning", "power of two"),
        ("NCCL_NTHREADS", "256", None, ""),
        ("NCCL_NTHREADS", "300", "error", "64, 128, 256 or 512"),
        ("NCCL_P2P_LEVEL", "NVL", None, ""),
        ("NCCL_P2P_LEVEL", "3", "warning", "deprecated"),
        ("NCCL_P2P_LEVEL", "FAST", "error", "LOC, NVL"),
        ("NCCL_IB_DISABLE", "1", None, ""),
        ("NCCL_IB_DISABLE", "yes", "error", "0 or 1"),
        ("CUDA_DEVICE_MAX_CONNECTIONS", "1", None, ""),
        ("CUDA_DEVICE_MAX_CONNECTIONS", "64", "warning", "clamps"),
        ("CUDA_DEVICE_MAX_CONNECTIONS", "many", "error", "not an integer"),
        ("NCCL_MAX_NCHANELS", "8", "error", "did you mean NCCL_MAX_NCHANNELS?"),
        ("NCLL_PROTO", "LL", "error", "misspelling of NCCL_PROTO"),
        ("NCCL_SOMETHING_NEW_IN_3_0", "1", "warning", "not an NCCL variable tuner knows"),
        ("VLLM_CPU_KVCACHE_SPACE", "4", None, ""),
        ("TORCH_NCCL_BLOCKING_WAIT", "1", None, ""),
    ],
)
def test_nccl_variable_table(name: str, value: str, level: str | None, words: str) -> None:
    found = check_nccl_variable(name, value)
    if level is None:
        assert found == []
    else:
        assert [f[0] for f in found] == [level]
        assert words in found[0][1]


def test_a_misspelt_variable_is_one_error_for_all_its_values(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        params={
            "NCCL_PROTO": {"env": "NCCL_PRTO", "choices": ["default", "LL", "LL128", "Simple"]}
        },
    )
    errors = messages(report, "error").splitlines()
    assert errors == [
        "params.NCCL_PROTO: NCCL_PRTO is not an NCCL variable (NCCL ignores unknown names "
        "silently); did you mean NCCL_PROTO?"
    ]


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("NCCL_ALGO", "allreduce:rnig", "; did you mean ring?"),
        ("NCCL_ALGO", "allreduc:ring", "; did you mean allreduce?"),
        ("NCCL_PROTO", "Simpel", "; did you mean Simple?"),
        ("NCCL_PROTO", "^LL12", "; did you mean LL128?"),
        ("NCCL_DEBUG", "INFOO", "; did you mean INFO?"),
    ],
)
def test_a_misspelt_value_gets_a_did_you_mean_as_written(name: str, value: str, words: str) -> None:
    ((level, message),) = check_nccl_variable(name, value)
    assert level == "error" and message.endswith(words)


def test_a_value_far_from_any_gets_no_guess() -> None:
    ((_, message),) = check_nccl_variable("NCCL_PROTO", "fastest")
    assert "did you mean" not in message and "NCCL accepts LL, LL128, Simple" in message
