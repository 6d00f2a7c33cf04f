"""tuner.sim.settings and tuner.sim.nccl: the command line and NCCL environment, parsed as the
real stack parses them, with the real stack's refusals (the NCCL_ALGO / NCCL_PROTO grammar
itself is NCCL's vocabulary: tests/unit/test_nccl.py)."""

from __future__ import annotations

import json

import pytest

from tuner.nccl import NcclEnvError
from tuner.sim.cli import main
from tuner.sim.nccl import parse_nccl_env, warmup_failure
from tuner.sim.settings import ArgError, SimSettings, non_default_args, parse_settings


def parse(*argv: str, **env: str) -> SimSettings:
    return parse_settings(list(argv), env)


# -- argv ------------------------------------------------------------------------------------
def test_defaults() -> None:
    s = parse()
    assert s.profile == "kimi-k2.5-int4-tp8"
    assert s.compilation_level is None
    assert s.tensor_parallel_size is None
    assert s.time_scale == 1.0
    assert s.unknown_args == ()
    assert non_default_args(s) == {}


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["-O0"], 0),
        (["-O3"], 3),
        (["-O", "2"], 2),
        (["--compilation-config", '{"level": 1}'], 1),
        (["--compilation-config", '{"mode": 0}'], 0),
        (["-O", '{"level": 3, "cudagraph_mode": "FULL"}'], 3),
        (['--compilation-config={"level": 2}'], 2),
        (["--compilation-config", '{"cudagraph_mode": "FULL"}'], None),
    ],
)
def test_compilation_forms(argv: list[str], level: int | None) -> None:
    assert parse(*argv).compilation_level == level


@pytest.mark.parametrize("bad", ["-O7", "-Oabc", "--compilation-config=[1]"])
def test_bad_compilation_level(bad: str) -> None:
    with pytest.raises(ArgError):
        parse(bad)


def test_vllm_flags() -> None:
    s = parse(
        "--port",
        "8000",
        "-tp",
        "8",
        "--max-num-seqs",
        "64",
        "--max-num-batched-tokens",
        "4096",
        "--disable-custom-all-reduce",
        "--enforce-eager",
        "--served-model-name",
        "a",
        "b",
        "--enable-expert-parallel",
    )
    assert s.port == 8000
    assert s.tensor_parallel_size == 8
    assert s.max_num_seqs == 64
    assert s.max_num_batched_tokens == 4096
    assert s.disable_custom_all_reduce and s.enforce_eager and s.enable_expert_parallel
    assert s.served_model_names == ("a", "b")
    assert parse("--tensor-parallel-size=4").tensor_parallel_size == 4


def test_positional_model_and_unknown_flags() -> None:
    s = parse(
        "moonshotai/Kimi-K2.5",
        "--trust-remote-code",
        "--kv-cache-dtype",
        "fp8",
        "--port",
        "9000",
        "--swap-space=4",
        "--some-offset",
        "-1",
        "--block-size",
        "16",
    )
    assert s.model == "moonshotai/Kimi-K2.5"
    assert s.port == 9000
    assert s.unknown_args == (
        "--trust-remote-code",
        "--kv-cache-dtype",
        "fp8",
        "--swap-space=4",
        "--some-offset",
        "-1",
        "--block-size",
        "16",
    )


def test_unknown_flag_value_is_not_taken_for_the_model() -> None:
    s = parse("--kv-cache-dtype", "fp8", "--model", "m")
    assert s.model == "m"
    assert s.unknown_args == ("--kv-cache-dtype", "fp8")


def test_no_abbreviations() -> None:
    # "--max-num" must not silently become --max-num-seqs
    assert parse("--max-num", "5").max_num_seqs is None


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-num-seqs", "0"],
        ["-tp", "-2"],
        ["--time-scale", "0"],
        ["--load-seconds", "-1"],
        ["--gpu-memory-utilization", "1.5"],
        ["--profile", "nope"],
        ["--port", "x"],
    ],
)
def test_bad_values_raise_argerror(argv: list[str]) -> None:
    with pytest.raises(ArgError):
        parse(*argv)


def test_sim_flags() -> None:
    s = parse(
        "--profile",
        "flat",
        "--load-seconds",
        "0.2",
        "--seed",
        "7",
        "--time-scale",
        "0.01",
        "--leave-orphan",
        "--flood-log",
        "--shm-prefix",
        "t",
        "--fail-after-load",
    )
    assert (s.profile, s.load_seconds, s.seed, s.time_scale) == ("flat", 0.2, 7, 0.01)
    assert s.leave_orphan and s.flood_log and s.shm_prefix == "t"
    assert s.fail_after_load == "simulated failure after load"
    assert parse("--fail-at-start", "boom").fail_at_start == "boom"


def test_as_json_is_plain() -> None:
    s = parse("-O0", NCCL_PROTO="LL")
    data = json.loads(json.dumps(s.as_json()))  # JSON-ready, and round-trips
    assert data["compilation_level"] == 0
    assert data["nccl"]["proto"]["default"] == ["ll"]
    assert data["unknown_args"] == []


def test_strict_false_keeps_the_nccl_error_for_later() -> None:
    with pytest.raises(NcclEnvError):
        parse_settings([], {"NCCL_PROTO": "Foo"})
    s = parse_settings([], {"NCCL_PROTO": "Foo"}, strict=False)
    assert s.nccl_error is not None and 'Invalid NCCL_PROTO "Foo"' in s.nccl_error


def test_main_help_lists_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in (
        "--port",
        "--profile",
        "--load-seconds",
        "--seed",
        "--time-scale",
        "--leave-orphan",
        "--flood-log",
        "--shm-prefix",
        "--max-num-seqs",
        "--tensor-parallel-size",
        "--disable-custom-all-reduce",
        "--enforce-eager",
        "--compilation-config",
        "--fail-after-load",
        "--fail-at-start",
    ):
        assert flag in out


def test_main_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "--port" in capsys.readouterr().err
    assert main(["--port", "1", "--max-num-seqs", "0"]) == 2


# -- NCCL ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "protos"),
    [
        ("LL", {"ll"}),
        ("ll128", {"ll128"}),
        ("Simple,LL", {"simple", "ll"}),
        ("^LL128", {"ll", "simple"}),
        ("allreduce:LL128", {"ll128"}),
    ],
)
def test_proto_grammar(raw: str, protos: set[str]) -> None:
    nccl, _ = parse_nccl_env({"NCCL_PROTO": raw})
    assert nccl.allreduce_protos() == frozenset(protos)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"NCCL_PROTO": "Foo"}, 'Invalid NCCL_PROTO "Foo"'),
        ({"NCCL_PROTO": ""}, "Invalid NCCL_PROTO"),
        ({"NCCL_ALGO": "Foo"}, 'Invalid NCCL_ALGO "Foo"'),
        ({"NCCL_ALGO": "allreduce:foo"}, 'unknown value "foo"'),
        ({"NCCL_ALGO": "bogus:ring"}, 'unknown collective "bogus"'),
        ({"NCCL_MIN_NCHANNELS": "four"}, 'Invalid NCCL_MIN_NCHANNELS "four"'),
        ({"NCCL_MAX_NCHANNELS": "x"}, "Invalid NCCL_MAX_NCHANNELS"),
        ({"NCCL_MAX_NCHANNELS": "0"}, "between 1 and 64"),
        ({"NCCL_MIN_NCHANNELS": "16", "NCCL_MAX_NCHANNELS": "8"}, "is larger than"),
        ({"NCCL_NTHREADS": "100"}, "multiple of 64"),
        ({"NCCL_NTHREADS": "1024"}, "multiple of 64"),
        ({"NCCL_NTHREADS": "0"}, "multiple of 64"),
        ({"NCCL_BUFFSIZE": "0"}, "Invalid NCCL_BUFFSIZE"),
        ({"NCCL_BUFFSIZE": "lots"}, "Invalid NCCL_BUFFSIZE"),
    ],
)
def test_nccl_refusals(env: dict[str, str], message: str) -> None:
    with pytest.raises(NcclEnvError) as info:
        parse_nccl_env(env)
    assert message in info.value.warn


def test_valid_nccl_values() -> None:
    nccl, warnings = parse_nccl_env(
        {
            "NCCL_MIN_NCHANNELS": "4",
            "NCCL_MAX_NCHANNELS": "16",
            "NCCL_BUFFSIZE": "16777216",
            "NCCL_NTHREADS": "512",
            "CUDA_DEVICE_MAX_CONNECTIONS": "1",
            "NCCL_DEBUG": "INFO",
        }
    )
    assert (nccl.min_nchannels, nccl.max_nchannels, nccl.buffsize, nccl.nthreads) == (
        4,
        16,
        16777216,
        512,
    )
    assert nccl.cuda_device_max_connections == 1
    assert warnings == []


@pytest.mark.parametrize(("raw", "value"), [("64", 32), ("0", 1), ("many", None)])
def test_cuda_device_max_connections_is_clamped_not_fatal(raw: str, value: int | None) -> None:
    nccl, warnings = parse_nccl_env({"CUDA_DEVICE_MAX_CONNECTIONS": raw})
    assert nccl.cuda_device_max_connections == value
    assert len(warnings) == 1


@pytest.mark.parametrize(
    ("algo", "version", "fails"),
    [
        (None, "2.31.0", False),
        ("allreduce:ring", "2.31.0", False),
        ("allreduce:tree", "2.31.0", False),
        ("allreduce:ring;allgather:ring", "2.31.0", False),
        ("Ring", "2.31.0", True),  # a bare value disables the collectives it does not name
        ("Ring", "2.27.3", False),  # before 2.31 a bare Ring applies to every collective
        ("Tree", "2.27.3", True),  # AllGather has no Tree implementation
        ("allreduce:nvls", "2.27.3", True),  # no NVLink SHARP on a PCIe box
        ("allgather:tree", "2.27.3", True),
    ],
)
def test_warmup_failure(algo: str | None, version: str, fails: bool) -> None:
    env = {"NCCL_ALGO": algo} if algo else {}
    nccl, _ = parse_nccl_env(env)
    warn = warmup_failure(nccl, version)
    assert (warn is not None) is fails
    if warn:
        assert "no algorithm/protocol available" in warn


def test_the_api_key_comes_from_the_flag_or_vllm_api_key_and_prints_hidden() -> None:
    assert parse_settings(["--api-key", "k1"], {"VLLM_API_KEY": "sk-env-key"}).api_key == "k1"
    s = parse_settings([], {"VLLM_API_KEY": "sk-env-key"})
    assert s.api_key == "sk-env-key"
    assert non_default_args(s) == {"api_key": "***"}
    assert s.as_json()["api_key"] == "***"
    assert "sk-env-key" not in repr(s)
    assert parse_settings([], {}).api_key is None
    assert "--api-key" not in parse_settings(["--api-key", "k1"], {}).unknown_args
