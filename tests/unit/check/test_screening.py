"""tuner.check.screening: what screening launches judge, and a screening: section refused."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.unit.check.helpers import VLLM_HELP, FakeHelp, messages, run_check, space_file
from tuner.check import CheckReport, check_space
from tuner.space.spec import SHIPPED_SPACES, load_space

LOAD_HELP = (
    VLLM_HELP
    + """  --load-format {auto,pt,safetensors,dummy}
                        The format of the model weights to load.
  --num-speculative-tokens NUM_SPECULATIVE_TOKENS
"""
)
"""vLLM's help with the flags screening reads: --load-format (its choices) and a draft's."""
DRAFT_HELP = VLLM_HELP + "  --num-speculative-tokens NUM_SPECULATIVE_TOKENS\n"
"""A server without --load-format."""

DUMMY = {"args": ["--load-format", "dummy"]}

PARAMS = {
    "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
    "seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 64]},
    "drafts": {"args": ["--num-speculative-tokens", "{value}"], "choices": ["default", 2]},
    "eager": {"args": ["--enforce-eager"], "choices": ["default", True], "screen": False},
}


def test_without_the_section_nothing_is_screened(tmp_path: Path) -> None:
    report = run_check(tmp_path, FakeHelp(LOAD_HELP), params=PARAMS)
    assert report.ok, report.summary()
    assert (
        "ok    screening: no screening: section: nothing is screened, every launch loads the "
        "real weights (docs/space-file.md, screening)"
    ) in report.lines()
    assert "not screened" not in messages(report, "ok")


def test_the_screened_params_and_each_other_with_its_reason(tmp_path: Path) -> None:
    report = run_check(tmp_path, FakeHelp(LOAD_HELP), params=PARAMS, screening=DUMMY)
    assert report.ok, report.summary()
    lines = report.lines()
    assert (
        "ok    screening: screening launches add --load-format dummy; 2 of 4 param(s) "
        "screened: NCCL_PROTO, seqs; the rest (below) at full fidelity only"
    ) in lines
    assert (
        "ok    params.drafts: not screened (--num-speculative-tokens acts through the "
        "weights): launched at full fidelity only"
    ) in lines
    assert "ok    params.eager: not screened (screen: false): launched at full fidelity only" in (
        lines
    )
    assert "every flag the space can produce is in the server's --help" in messages(report, "ok")


def test_a_shorter_screening_benchmark_is_said_beside_the_full_one(tmp_path: Path) -> None:
    shorter = {**DUMMY, "benchmark": {"rounds": 1}}
    report = run_check(tmp_path, FakeHelp(LOAD_HELP), params=PARAMS, screening=shorter)
    assert report.ok, report.summary()
    said = [line for line in report.lines() if "screening.benchmark" in line]
    assert said == [
        "ok    screening.benchmark: screening launches run 1 round(s) of 16 request(s) a "
        "level, full ones 3 of 16: the search compares screening launches among "
        "themselves, the answer rests on full ones"
    ]
    plain = run_check(tmp_path, FakeHelp(LOAD_HELP), params=PARAMS, screening=DUMMY)
    assert not [line for line in plain.lines() if "screening.benchmark" in line]


def test_no_param_left_to_screen_is_a_warning(tmp_path: Path) -> None:
    params = {"drafts": PARAMS["drafts"], "eager": PARAMS["eager"]}
    report = run_check(tmp_path, FakeHelp(LOAD_HELP), params=params, screening=DUMMY)
    assert report.ok
    assert "no param can be screened" in messages(report, "warning")
    assert "leave the screening: section out" in messages(report, "warning")


def test_a_flag_the_server_does_not_know_is_refused_with_the_fix(tmp_path: Path) -> None:
    report = run_check(tmp_path, FakeHelp(DRAFT_HELP), params=PARAMS, screening=DUMMY)
    assert not report.ok
    errors = [i for i in report.errors if i.key == "screening.args"]
    assert [str(i) for i in errors] == [
        "error: screening.args: the server does not accept '--load-format' (not in its "
        "--help); every screening launch adds it and would fail at start: correct or remove "
        "it in screening.args (vLLM: [--load-format, dummy]), or leave the screening: "
        "section out (every launch is then a full one)"
    ]
    # What the sweep's pre-flight raises with, and tuner check's last line: the file.
    assert f"{tmp_path / 'space.yaml'}: 1 error(s)" in report.summary()
    assert "first: error: screening.args: the server does not accept '--load-format'" in (
        report.summary()
    )


def test_a_misspelt_flag_gets_the_close_match(tmp_path: Path) -> None:
    report = run_check(
        tmp_path, FakeHelp(LOAD_HELP), screening={"args": ["--load-formats", "dummy"]}
    )
    assert "did you mean --load-format?" in messages(report, "error")


def test_a_value_outside_the_servers_choices_is_refused(tmp_path: Path) -> None:
    report = run_check(tmp_path, FakeHelp(LOAD_HELP), screening={"args": ["--load-format=dumy"]})
    errors = messages(report, "error")
    assert (
        "screening.args: --load-format 'dumy' is not one of the server's choices: auto, "
        "dummy, pt, safetensors"
    ) in errors
    assert "correct or remove it in screening.args" in errors
    ok = run_check(tmp_path, FakeHelp(LOAD_HELP), screening={"args": ["--load-format=dummy"]})
    assert ok.ok, ok.summary()


def test_screening_env_names_are_checked_as_nccls(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        FakeHelp(LOAD_HELP),
        screening={"args": ["--load-format", "dummy"], "env": {"NCCL_ALOG": "allreduce:ring"}},
    )
    assert "screening.env.NCCL_ALOG" in messages(report, "error")
    assert "did you mean NCCL_ALGO?" in messages(report, "error")
    fine = run_check(
        tmp_path,
        FakeHelp(LOAD_HELP),
        params=PARAMS,
        screening={**DUMMY, "env": {"VLLM_SKIP_WARMUP": "1"}},
    )
    assert fine.ok, fine.summary()
    assert "screening launches add --load-format dummy, VLLM_SKIP_WARMUP=1;" in messages(fine, "ok")


def test_a_flag_a_param_sets_too_is_refused_naming_both(tmp_path: Path) -> None:
    params = {"fmt": {"args": ["--load_format={value}"], "choices": ["default", "safetensors"]}}
    report = run_check(tmp_path, FakeHelp(LOAD_HELP), params=params, screening=DUMMY)
    errors = [str(i) for i in report.errors]
    assert (
        "error: screening.args: --load-format is set by params.fmt too: a screening launch "
        "adds screening.args last, so it would override params.fmt and never judge it; "
        "remove --load-format from screening.args, or params.fmt from the space"
    ) in errors
    assert "params.fmt: not screened (--load-format acts through the weights)" in messages(
        report, "ok"
    )


def test_a_variable_a_param_sets_too_is_refused_naming_both(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        FakeHelp(LOAD_HELP),
        params=PARAMS,
        screening={"args": ["--load-format", "dummy"], "env": {"NCCL_PROTO": "Simple"}},
    )
    errors = messages(report, "error")
    assert "screening.env.NCCL_PROTO: NCCL_PROTO is set by params.NCCL_PROTO too" in errors
    assert "remove NCCL_PROTO from screening.env" in errors


def test_a_secret_in_the_screening_env_is_never_printed(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        FakeHelp(LOAD_HELP),
        params=PARAMS,
        screening={"env": {"HF_TOKEN": "hf_abcdefghijkl"}},
    )
    assert "hf_abcdefghijkl" not in "\n".join(report.lines())
    assert "screening launches add HF_TOKEN=***" in messages(report, "ok")


SERVER = """import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--port")
parser.add_argument("--max-num-seqs")
{more}parser.parse_args()
"""


def _check_script(tmp_path: Path, more: str, screening: dict[str, object]) -> CheckReport:
    """check_space against a fake server script's real --help (run, then cached)."""
    script = tmp_path / "server.py"
    script.write_text(SERVER.format(more=more))
    path = space_file(
        tmp_path,
        command=["{python}", str(script), "--port", "{port}"],
        params={"seqs": PARAMS["seqs"]},
        screening=screening,
    )
    return check_space(
        load_space(path), storage=f"sqlite:///{tmp_path}/c.db", help_cache_dir=tmp_path / "cache"
    )


def test_a_server_script_that_knows_the_flag_passes(tmp_path: Path) -> None:
    more = 'parser.add_argument("--load-format", choices=["auto", "dummy"])\n'
    report = _check_script(tmp_path, more, DUMMY)
    assert report.ok, report.summary()
    assert "screened: seqs" in messages(report, "ok")
    bad = _check_script(tmp_path, more, {"args": ["--load-format", "random"]})
    assert "--load-format 'random' is not one of the server's choices: auto, dummy" in messages(
        bad, "error"
    )


def test_a_server_script_without_the_flag_is_refused(tmp_path: Path) -> None:
    report = _check_script(tmp_path, "", DUMMY)
    assert "screening.args: the server does not accept '--load-format'" in messages(report, "error")


def test_against_tuner_sims_own_help(tmp_path: Path) -> None:
    # The simulator's real --help (fast: no torch). Its own flag for a cheap load passes,
    # a flag it has no such option for is refused; --load-format is left out so this holds
    # with or without the simulator's version of it.
    def check(screening: dict[str, object]) -> CheckReport:
        path = space_file(tmp_path, params={"seqs": PARAMS["seqs"]}, screening=screening)
        return check_space(
            load_space(path),
            storage=f"sqlite:///{tmp_path}/c.db",
            help_cache_dir=tmp_path / "cache",
        )

    assert check({"args": ["--load-seconds", "0"]}).ok
    refused = check({"args": ["--no-such-load-flag"]})
    assert "screening.args: the server does not accept '--no-such-load-flag'" in messages(
        refused, "error"
    )


def test_an_empty_space_has_nothing_to_screen(tmp_path: Path) -> None:
    report = run_check(tmp_path, FakeHelp(LOAD_HELP), screening=DUMMY)
    assert "the space has no params to screen" in messages(report, "warning")


def test_vllms_other_spellings_of_a_weight_flag_are_not_screened(tmp_path: Path) -> None:
    params = {
        **PARAMS,
        "drafts": {
            "args": ["--speculative_config.num_speculative_tokens={value}"],
            "choices": ["default", 2],
        },
    }
    help_text = LOAD_HELP + "  --speculative-config SPECULATIVE_CONFIG\n"
    report = run_check(tmp_path, FakeHelp(help_text), params=params, screening=DUMMY)
    assert "params.drafts: not screened (--speculative-config acts through the weights)" in (
        messages(report, "ok")
    )


NCCL_VLLM_HELP = """usage: vllm serve [model_tag] [options]
  --host HOST  --port PORT  --trust-remote-code
  --tensor-parallel-size TENSOR_PARALLEL_SIZE, -tp TENSOR_PARALLEL_SIZE
  --optimization-level OPTIMIZATION_LEVEL, -O OPTIMIZATION_LEVEL
  --disable-custom-all-reduce
  --load-format LOAD_FORMAT
"""
"""The flags search_spaces/nccl.yaml uses, as vLLM's --help=all lists them."""


def test_the_shipped_nccl_space_screens_every_param(tmp_path: Path) -> None:
    # nccl.yaml as shipped, but for a `vllm` that exists here (its --help faked).
    vllm = tmp_path / "bin" / "vllm"
    vllm.parent.mkdir()
    vllm.write_text("#!/bin/sh\nexit 0\n")
    vllm.chmod(0o755)
    raw = yaml.safe_load((SHIPPED_SPACES / "nccl.yaml").read_text())
    assert raw["screening"] == {"args": ["--load-format", "dummy"]}
    raw["server"]["command"][0] = str(vllm)
    (tmp_path / "nccl.yaml").write_text(yaml.safe_dump(raw))
    reader = FakeHelp(NCCL_VLLM_HELP)
    report = check_space(
        load_space(tmp_path / "nccl.yaml"),
        storage=f"sqlite:///{tmp_path}/c.db",
        help_cache_dir=tmp_path / "cache",
        read_help=reader,
    )
    assert report.ok, report.summary()
    assert [c[-1] for c in reader.calls] == ["--help=all"]
    assert "screening launches add --load-format dummy; 10 of 10 param(s) screened" in messages(
        report, "ok"
    )
    assert "not screened" not in messages(report, "ok")
