"""Space-file parsing: what loads, and that every mistake names the file, the key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.space.spec import ConfigError, load_space, parse_space, resolve_space_path

GOOD = {
    "server": {"command": ["vllm", "serve", "m", "--port", "{port}"], "env": {"A": 1}},
    "params": {
        "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
        "NCCL_MIN_NCHANNELS": {"env": "NCCL_MIN_NCHANNELS", "choices": ["default", 2, 4]},
        "NCCL_MAX_NCHANNELS": {"env": "NCCL_MAX_NCHANNELS", "choices": ["default", 4, 8]},
        "max_num_seqs": {"args": ["--max-num-seqs", "{value}"], "int": [16, 512], "log": True},
    },
    "constraints": ["NCCL_MIN_NCHANNELS <= NCCL_MAX_NCHANNELS"],
    "benchmark": {"concurrency": [1, 8]},
    "objective": {"metric": "ttft_ms_p50", "concurrency": 8},
}


def _with(**changes: object) -> dict:
    raw = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    for dotted, value in changes.items():
        node = raw
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return raw


def _error(raw: dict) -> str:
    with pytest.raises(ConfigError) as info:
        parse_space(raw, Path("space.yaml"))
    return str(info.value)


def test_good_space_loads_with_defaults_filled() -> None:
    space = parse_space(GOOD, Path("kimi.yaml"))
    assert space.study_name == "kimi"
    assert space.spec.server.env == {"A": "1"}
    assert space.spec.direction == "minimize"  # a latency metric
    assert space.spec.objective_concurrency == 8
    assert str(space.spec.constraints[0]) == "NCCL_MIN_NCHANNELS <= NCCL_MAX_NCHANNELS"
    assert space.spec.stop.baseline_launches == 2


def test_unknown_key_is_named_with_file_and_fix() -> None:
    msg = _error(_with(benchmark={"concurency": [1]}))
    assert "space.yaml: benchmark.concurency: unknown key" in msg
    assert "spelling" in msg


def test_param_without_env_or_args() -> None:
    msg = _error(_with(params__NCCL_PROTO={"choices": ["default", "LL"]}))
    assert "params.NCCL_PROTO" in msg and "env:" in msg and "args:" in msg


def test_empty_choices() -> None:
    msg = _error(_with(params__NCCL_PROTO={"env": "NCCL_PROTO", "choices": []}))
    assert "params.NCCL_PROTO" in msg and "empty" in msg


def test_port_placeholder_missing_when_auto() -> None:
    msg = _error(_with(server={"command": ["vllm", "serve", "m"]}))
    assert "server" in msg and "{port}" in msg and "server.port" in msg


def test_fixed_port_needs_no_placeholder() -> None:
    space = parse_space(_with(server={"command": ["srv"], "port": 8000}), Path("s.yaml"))
    assert space.spec.server.port == 8000


def test_shell_string_command_is_refused() -> None:
    msg = _error(_with(server={"command": "vllm serve m --port {port}"}))
    assert "server.command" in msg and "list of arguments" in msg
    assert "[vllm, serve, MODEL" in msg  # the example is the server's, not the probe's


def test_shell_string_probe_command_is_refused_with_a_probe_example() -> None:
    msg = _error(_with(probe={"command": "python -m tuner probe allreduce"}))
    assert "probe.command" in msg and "not a shell string" in msg
    assert "probe, allreduce" in msg


def test_command_values_become_text() -> None:
    space = parse_space(
        _with(server={"command": ["vllm", 8, True, "--port", "{port}"]}), Path("space.yaml")
    )
    assert space.spec.server.command == ["vllm", "8", "1", "--port", "{port}"]


def test_unknown_objective_metric_lists_the_known_ones() -> None:
    msg = _error(_with(objective={"metric": "tokens_per_second"}))
    assert "objective.metric" in msg and "output_throughput" in msg


def test_objective_level_not_benchmarked() -> None:
    msg = _error(_with(objective={"metric": "output_throughput", "concurrency": 4}))
    assert "objective.concurrency is 4" in msg and "[1, 8]" in msg


def test_constraint_naming_an_unknown_param() -> None:
    msg = _error(_with(constraints=["NCCL_MIN_NCHANNELS <= MAXCH"]))
    assert "MAXCH" in msg and "not a param" in msg


def test_constraint_that_is_not_a_comparison_is_refused_without_eval() -> None:
    msg = _error(_with(constraints=["__import__('os').system('true')"]))
    assert "cannot read constraint" in msg


def test_range_checks() -> None:
    assert "low <= high" in _error(
        _with(params__max_num_seqs={"args": ["--x", "{value}"], "int": [9, 2]})
    )
    assert "above 0" in _error(
        _with(params__max_num_seqs={"args": ["--x", "{value}"], "int": [0, 8], "log": True})
    )


def test_search_and_confirmation_settings() -> None:
    spec = parse_space(GOOD, Path("s.yaml")).spec
    assert spec.search.method == "local" and spec.search.max_changes == 3
    assert spec.stop.confirmation_cap == 3  # confirmations (1) + 2

    def parsed(**changes: object):  # type: ignore[no-untyped-def]
        return parse_space(_with(**changes), Path("s.yaml")).spec

    assert parsed(stop={"confirmations": 2, "max_confirmations": 2}).stop.confirmation_cap == 2
    assert parsed(stop={"confirmations": 0}).stop.confirmation_cap == 0
    assert parsed(search={"method": "tpe"}).search.method == "tpe"
    msg = _error(_with(search={"method": "grid"}))
    assert "space.yaml: search.method" in msg and "local" in msg and "tpe" in msg
    msg = _error(_with(stop={"confirmations": 3, "max_confirmations": 1}))
    assert "space.yaml: stop" in msg and "max_confirmations (1) is below confirmations (3)" in msg


def test_load_space_reports_yaml_errors_and_missing_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("server: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_space(bad)
    with pytest.raises(ConfigError, match="no such space file; shipped spaces are: .*sim.yaml"):
        load_space(tmp_path / "nope.yaml")


def test_shipped_space_found_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_space_path("nccl.yaml").name == "nccl.yaml"
    assert resolve_space_path("sim").name == "sim.yaml"


@pytest.mark.parametrize(
    "name",
    [
        "sim.yaml",
        "nccl.yaml",
        "vllm-cpu.yaml",
        "slo-sim.yaml",
        "slo-vllm-cpu.yaml",
        "memory-sim.yaml",
    ],
)
def test_shipped_spaces_are_valid(name: str) -> None:
    space = load_space(name)
    assert space.spec.params
