"""check_space as a whole: what the report holds, says, and skips when asked."""

from __future__ import annotations

from pathlib import Path

from tests.unit.check.helpers import FakeHelp, run_check, space_file
from tuner.check import check_space
from tuner.space.spec import load_space


def test_a_good_space_is_ok_and_says_what_it_checked(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        params={
            "seqs": {"args": ["--max-num-seqs", "{value}"], "int": [4, 64]},
            "eager": {"args": ["--enforce-eager"], "choices": ["default", True]},
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
        },
    )
    assert report.ok, report.summary()
    keys = {i.key for i in report.items}
    assert {"server.command", "params", "server.port", "storage"} <= keys
    assert report.to_dict()["ok"] is True
    assert "0 error(s)" in report.summary()


def test_flags_can_be_left_unchecked(tmp_path: Path) -> None:
    reader = FakeHelp()
    space = load_space(space_file(tmp_path))
    check_space(space, storage=f"sqlite:///{tmp_path}/c.db", read_help=reader, check_flags=False)
    assert reader.calls == []


def test_the_report_as_text_puts_errors_first(tmp_path: Path) -> None:
    report = run_check(tmp_path, env={"NCCL_ALOG": "ring"})
    lines = report.lines()
    assert lines[0].startswith("ERROR server.env.NCCL_ALOG")
    assert lines[-1].endswith("fix the errors above before running")
    assert run_check(tmp_path).lines()[-1].endswith("ready to run")
