"""tuner.check: the tables NCCL_TUNER_CONFIG_FILE points the tuner plugin at.

The plugin never fails a server: a missing file, a row it cannot read or no plugin at all
leave NCCL's own choice, so a launch with such a table is the defaults under another
name. `tuner check` reads each table by the writer's rules (tuner/probe/plugin_table.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.unit.check.helpers import messages, run_check, space_file
from tuner import exit_codes
from tuner.probe.plugin_table import read_table

GOOD = """\
# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
allreduce,0,28672,ring,ll,-1,1,8,-1,-1
allreduce,28673,4294967295,ring,ll128,-1,1,8,-1,-1
"""
PLUGIN = "/opt/nccl/libnccl-tuner-example.so"


@pytest.fixture(autouse=True)
def _no_inherited_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCCL_TUNER_PLUGIN", raising=False)


def _table(tmp_path: Path, text: str = GOOD, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _check(tmp_path: Path, *tables: str, env: dict[str, str] | None = None, **params: object):  # type: ignore[no-untyped-def]
    table_param = {"env": "NCCL_TUNER_CONFIG_FILE", "choices": ["default", *tables]}
    return run_check(
        tmp_path,
        env={"NCCL_TUNER_PLUGIN": PLUGIN} if env is None else env,
        params={"TABLE": table_param, **params},
    )


def _items(report, level: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [i.message for i in report.items if i.level == level and "NCCL_TUNER" in i.message]


def test_a_table_the_plugin_reads_is_ok(tmp_path: Path) -> None:
    report = _check(tmp_path, str(_table(tmp_path)))
    assert report.ok, report.lines()
    assert _items(report, "warning") == []
    assert "2 row(s), each read as the tuner plugin reads it" in messages(report, "ok")


def test_a_missing_table_is_an_error_naming_the_param_and_the_path(tmp_path: Path) -> None:
    report = _check(tmp_path, str(tmp_path / "absent.csv"))
    assert not report.ok
    (error,) = report.errors
    assert error.key == "params.TABLE"
    assert f"NCCL_TUNER_CONFIG_FILE={tmp_path / 'absent.csv'}: no such file" in error.message
    assert "NCCL's own choice" in error.message


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("allreduce,0,10,Ring,ll,-1,1,8,-1,-1", "algorithm 'Ring' is not one of tree, ring"),
        ("allreduce,0,10,ring,LL,-1,1,8,-1,-1", "protocol 'LL' is not one of ll, ll128, simple"),
        ("all_reduce,0,10,ring,ll,-1,1,8", "collective_type 'all_reduce'"),
        ("allreduce,0,10,ring,ll,-1,1", "7 comma-separated fields, the plugin reads 8 to 10"),
        ("allreduce, 0,10,ring,ll,-1,1,8", "space around '0'"),
        ("allreduce,10,0,ring,ll,-1,1,8", "min_bytes 10 is above max_bytes 0"),
        ("allreduce,0,4294967296,ring,ll,-1,1,8", "max_bytes 4294967296 is out of range"),
        ("allreduce,0,1_000,ring,ll,-1,1,8", "max_bytes '1_000' is not a whole number"),
        ("allreduce,0,10,ring,ll,0,1,8", "channels 0 is out of range: -1 (NCCL's own count)"),
        ("allreduce,0,10,ring,ll,-1,1,8,-1,2", "regBuff 2 is out of range"),
        ("  # an indented comment", "a comment starts with # in the first column"),
        ("# " + "x" * 300, "longer than the plugin's 256-byte line buffer"),
    ],
)
def test_a_row_the_plugin_would_misread_is_an_error_naming_file_line_and_fault(
    tmp_path: Path, line: str, words: str
) -> None:
    table = _table(tmp_path, GOOD + line + "\n")
    report = _check(tmp_path, str(table))
    (error,) = report.errors
    assert error.key == "params.TABLE"
    assert f"NCCL_TUNER_CONFIG_FILE={table}: 1 line(s)" in error.message
    assert "line 4: " in error.message and words in error.message, error.message


def test_the_reader_takes_the_formats_optional_fields_and_every_collective() -> None:
    text = "\r\n".join(["allreduce,0,65536,tree,simple,2,1,-1", "broadcast,0,1,pat,ll,-1,-1,4,1"])
    table = read_table(text)
    assert table.problems == ()
    assert [(r.collective, r.num_pipe_ops, r.reg_buff) for r in table.rows] == [
        ("allreduce", -1, -1),
        ("broadcast", 1, -1),
    ]


def test_many_bad_lines_are_counted_past_the_first_three(tmp_path: Path) -> None:
    table = _table(tmp_path, "ring\n" * 5)
    (error,) = _check(tmp_path, str(table)).errors
    assert "5 line(s)" in error.message and "line 3:" in error.message
    assert "line 4:" not in error.message and "and 2 more" in error.message


def test_a_table_without_the_plugin_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = str(_table(tmp_path))
    for env in ({}, {"NCCL_TUNER_PLUGIN": "none"}):
        (error,) = _check(tmp_path, table, env=env).errors
        assert error.key == "params.TABLE"
        assert "NCCL_TUNER_CONFIG_FILE is set but NCCL_TUNER_PLUGIN is not" in error.message
        assert "set server.env.NCCL_TUNER_PLUGIN" in error.message
    # Set where tuner runs: the server inherits it.
    monkeypatch.setenv("NCCL_TUNER_PLUGIN", PLUGIN)
    assert _check(tmp_path, table, env={}).ok


def test_a_plugin_set_only_by_a_param_is_a_warning(tmp_path: Path) -> None:
    plugin = {"env": "NCCL_TUNER_PLUGIN", "choices": ["default", PLUGIN]}
    report = _check(tmp_path, str(_table(tmp_path)), env={}, PLUGIN=plugin)
    assert report.ok, report.lines()
    (warning,) = _items(report, "warning")
    assert "set only by params.PLUGIN: the launches without it load no tuner plugin" in warning


def test_a_relative_path_is_a_warning_with_the_absolute_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(tmp_path)
    monkeypatch.chdir(tmp_path)
    report = _check(tmp_path, "t.csv")
    assert report.ok, report.lines()
    (warning,) = _items(report, "warning")
    assert "NCCL_TUNER_CONFIG_FILE=t.csv is a relative path" in warning
    assert f"give the absolute path ({tmp_path / 't.csv'})" in warning
    # Not found from here: the error too.
    monkeypatch.chdir(tmp_path.parent)
    report = _check(tmp_path, "t.csv")
    assert [e.key for e in report.errors] == ["params.TABLE"]
    assert "no such file" in report.errors[0].message


def test_a_table_of_comments_only_sets_nothing_and_says_so(tmp_path: Path) -> None:
    report = _check(tmp_path, str(_table(tmp_path, "# keep NCCL's own choice\n")))
    assert report.ok
    (warning,) = _items(report, "warning")
    assert "holds no row (comments only)" in warning


def test_the_fixed_env_and_space_dir_are_read_too(tmp_path: Path) -> None:
    _table(tmp_path, "allreduce,0,10,ring,lll,-1,1,8\n")
    env = {"NCCL_TUNER_PLUGIN": PLUGIN, "NCCL_TUNER_CONFIG_FILE": "{space_dir}/t.csv"}
    report = run_check(tmp_path, env=env)
    (error,) = report.errors
    assert error.key == "server.env.NCCL_TUNER_CONFIG_FILE"
    assert "line 1: protocol 'lll'" in error.message


def test_tuner_check_fails_a_space_whose_table_does_not_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuner import cli

    table = _table(tmp_path, GOOD + "allreduce,0,10,ring,ll,-1,1\n")
    path = space_file(
        tmp_path,
        env={"NCCL_TUNER_PLUGIN": PLUGIN},
        params={"TABLE": {"env": "NCCL_TUNER_CONFIG_FILE", "choices": ["default", str(table)]}},
    )
    monkeypatch.chdir(tmp_path)
    args = ["check", "--space", str(path), "--storage", f"sqlite:///{tmp_path}/c.db"]
    env = {"TUNER_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "400"}
    done = CliRunner().invoke(cli.app, [*args, "--format", "json"], env=env)
    assert done.exit_code == exit_codes.CONFIG, done.output
    report = json.loads(done.stdout)
    errors = [i for i in report["items"] if i["level"] == "error"]
    assert [e["key"] for e in errors] == ["params.TABLE"]
    assert f"{table}: 1 line(s)" in errors[0]["message"]
    assert "line 4: 7 comma-separated fields" in errors[0]["message"]
