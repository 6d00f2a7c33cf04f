"""`tuner init`'s rules, one test each: the params that can act, what is left out and why,
the probe, screening, the startup limit, the command's host and port, and the notes said
where the host or the model could not be read. The server's --help is given as text
(tests/unit/check/helpers.FakeHelp, cached per test), the GPUs as a topology."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.unit.check.helpers import FakeHelp
from tuner import exit_codes
from tuner.cli import app
from tuner.errors import ConfigError
from tuner.init import GOALS, InitResult, init_space
from tuner.init.command import base_name, served_command
from tuner.init.startup import startup_timeout_s, weights_on_disk
from tuner.space.spec import SHIPPED_SPACES, SpaceSpec, load_space
from tuner.telemetry.topology import PairLink, Topology, TopologyRead

# What the simulator's and vLLM's --help list of the flags init asks about.
FULL_HELP = """usage: server [-h] [--host HOST] [--port PORT] [--model MODEL] [-O LEVEL]
  [--enforce-eager] [--max-num-seqs N] [--max-num-batched-tokens N]
  [-tp TENSOR_PARALLEL_SIZE] [-pp PIPELINE_PARALLEL_SIZE]
  [--disable-custom-all-reduce] [--load-format {auto,dummy}] [--profile P]
  [--tensor-parallel-size N] [--pipeline-parallel-size N]
"""
BARE_HELP = """usage: server [-h] [--host HOST] [--port PORT] [--model MODEL]
  [--tensor-parallel-size N] [--pipeline-parallel-size N]
"""
NO_GPU = TopologyRead(None, "NVML not found (no NVIDIA driver)")
SIM = ["{python}", "-m", "tuner.sim"]
KIMI_CONFIG = SHIPPED_SPACES / "models" / "kimi-k2.5-int4" / "config.json"


def nvlinked(gpus: int) -> TopologyRead:
    pairs = tuple(PairLink(a, b, nvlink=True) for a in range(gpus) for b in range(a + 1, gpus))
    return TopologyRead(Topology(gpus, pairs))


def init(
    tmp_path: Path,
    *args: str,
    help_text: str = FULL_HELP,
    gpus: TopologyRead = NO_GPU,
    **options: Any,
) -> tuple[InitResult, SpaceSpec, str]:
    """``tuner init -- {python} -m tuner.sim ARGS`` with this help and these GPUs: the result,
    the file as `tuner run` loads it, and its text."""
    out = options.pop("out", tmp_path / "space.yaml")
    result = init_space(
        [*SIM, *args],
        storage=f"sqlite:///{tmp_path}/init.db",
        out=out,
        gpus=gpus,
        read_help=FakeHelp(help_text),
        help_cache_dir=tmp_path / "help-cache",
        **options,
    )
    return result, load_space(result.path).spec, result.path.read_text()


def nccl_params(spec: SpaceSpec) -> list[str]:
    return [n for n, p in spec.params.items() if (p.env or "").startswith("NCCL_")]


def test_nccl_params_only_where_more_than_one_gpu_talks(tmp_path: Path) -> None:
    _, one, text = init(tmp_path / "one", "--tensor-parallel-size", "1")
    assert nccl_params(one) == [] and one.probe is None and one.constraints == []
    assert "NCCL variables: one GPU (TP=1 x PP=1): no GPU talks to another" in text

    _, eight, _ = init(tmp_path / "tp8", "--tensor-parallel-size", "8")
    assert "NCCL_ALGO" in nccl_params(eight) and "NCCL_P2P_LEVEL" in nccl_params(eight)
    assert [str(c) for c in eight.constraints] == ["NCCL_MIN_NCHANNELS <= NCCL_MAX_NCHANNELS"]
    assert eight.probe is not None

    # Pipeline stages talk too (TP x PP = 2).
    _, stages, _ = init(tmp_path / "pp2", "--pipeline-parallel-size", "2")
    assert "NCCL_PROTO" in nccl_params(stages)


def test_custom_all_reduce_left_out_at_tp8_without_nvlink_with_the_reason(tmp_path: Path):
    result, spec, text = init(tmp_path, "--tensor-parallel-size", "8")
    assert "disable_custom_all_reduce" not in spec.params
    said = " ".join(line.strip("# ") for line in text.splitlines())
    assert "disable_custom_all_reduce: TP=8 on GPUs 0-7 with no NVLink between GPU 0 and" in said
    assert "vLLM ignores --disable-custom-all-reduce here" in said
    assert (
        "no GPU found (NVML not found (no NVIDIA driver)): assumed 8 GPUs joined by PCIe "
        "without NVLink, as --tensor-parallel-size says"
    ) in result.notes


def test_custom_all_reduce_kept_at_tp2_and_on_full_nvlink(tmp_path: Path) -> None:
    _, two, _ = init(tmp_path / "tp2", "--tensor-parallel-size", "2")
    assert two.params["disable_custom_all_reduce"].args == ["--disable-custom-all-reduce"]

    result, linked, text = init(tmp_path / "nv", "--tensor-parallel-size", "8", gpus=nvlinked(8))
    assert "disable_custom_all_reduce" in linked.params
    # NVLinked GPUs talk over NVLink whatever the PCIe level allows.
    assert "NCCL_P2P_LEVEL" not in linked.params
    assert "NCCL_P2P_LEVEL: every pair of these GPUs is joined by NVLink" in text
    assert "8 GPUs, fully NVLinked" in text.splitlines()[0]
    assert not any("no GPU found" in n for n in result.notes)


def test_flags_the_help_does_not_list_are_left_out(tmp_path: Path) -> None:
    _, spec, text = init(tmp_path, "--tensor-parallel-size", "8", help_text=BARE_HELP)
    for name in ("compilation", "enforce_eager", "max_num_seqs", "max_num_batched_tokens"):
        assert name not in spec.params
    assert "max_num_seqs: the server's --help has no --max-num-seqs" in text
    assert "compilation: the server's --help has no -O" in text
    assert (
        "disable_custom_all_reduce: the server's --help has no --disable-custom-all-reduce" in text
    )
    # The NCCL variables do not depend on the server's flags.
    assert "NCCL_PROTO" in spec.params

    _, full, _ = init(tmp_path / "full", "--tensor-parallel-size", "8")
    assert full.params["compilation"].args == ["-O{value}"]
    assert full.params["enforce_eager"].args == ["--enforce-eager"]
    # max-num-seqs from the benchmark's top level up: none queues the benchmark.
    assert full.params["max_num_seqs"].choices == ["default", 8, 32, 128]


def test_screening_only_where_the_help_has_load_format(tmp_path: Path) -> None:
    _, with_it, _ = init(tmp_path / "yes")
    assert with_it.screening is not None and with_it.screening.args == ["--load-format", "dummy"]

    _, without, text = init(tmp_path / "no", help_text=BARE_HELP)
    assert without.screening is None
    assert "screening: left out: the server's --help has no --load-format" in text

    no_dummy = FULL_HELP.replace("{auto,dummy}", "{auto,safetensors}")
    _, other, text = init(tmp_path / "other", help_text=no_dummy)
    assert other.screening is None
    assert "--load-format lists auto, safetensors, not dummy" in " ".join(text.split())


def test_a_help_that_cannot_be_read_leaves_flags_and_screening_out(tmp_path: Path) -> None:
    result = init_space(
        [*SIM, "--tensor-parallel-size", "2"],
        storage=f"sqlite:///{tmp_path}/init.db",
        out=tmp_path / "space.yaml",
        gpus=NO_GPU,
        read_help=FakeHelp("Traceback: ImportError", code=1),
        help_cache_dir=tmp_path / "cache",
    )
    spec = load_space(result.path).spec
    assert spec.screening is None and "compilation" not in spec.params
    assert "NCCL_ALGO" in spec.params  # what does not rest on the help stays
    assert any(n.startswith("could not read the server's --help (") for n in result.notes)


def test_startup_timeout_from_the_weights_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "Kimi-K2.5"
    model.mkdir()
    shutil.copy(KIMI_CONFIG, model / "config.json")
    for i in range(2):  # sparse: the size without the disk space
        with open(model / f"model-0000{i}.safetensors", "wb") as f:
            f.truncate(273_500_000_000)
    (model / "consolidated.pth").write_bytes(b"x" * 100)  # another format: not read by vLLM
    assert weights_on_disk(model) == 547_000_000_000
    # 10 minutes + 547 GB at 200 MB/s = 3335 s, up to 5 minutes.
    assert startup_timeout_s(547_000_000_000) == 3600
    assert startup_timeout_s(0) == 600 and startup_timeout_s(16_000_000) == 900

    result, spec, text = init(
        tmp_path, "--model", str(model), "--tensor-parallel-size", "8", out=None, gpus=nvlinked(8)
    )
    assert spec.server.startup_timeout_s == 3600
    assert "547.0 GB of weights on disk" in text
    # Named after the model, in the working directory.
    assert spec.study == "Kimi-K2.5" and result.path == Path("Kimi-K2.5.yaml")
    assert (tmp_path / "Kimi-K2.5.yaml").is_file()
    # The probe sized from config.json: hidden_size 7168 x 2 bytes x levels 1 and 8; 61 layers.
    assert spec.probe is not None
    assert spec.probe.sizes == [14336, 114688] and spec.probe.layers == 61
    assert result.notes == ()


def test_weights_in_the_hugging_face_cache_are_read_through_its_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = tmp_path / "hub"
    repo = hub / "models--moonshotai--Kimi-K2.5"
    blobs, snapshot = repo / "blobs", repo / "snapshots" / "abc123"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    shutil.copy(KIMI_CONFIG, blobs / "cfg")
    (snapshot / "config.json").symlink_to(blobs / "cfg")
    with open(blobs / "w", "wb") as f:
        f.truncate(50_000_000_000)
    (snapshot / "model.safetensors").symlink_to(blobs / "w")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))

    _, spec, _ = init(tmp_path, "--model", "moonshotai/Kimi-K2.5", "-tp", "8")
    assert spec.server.startup_timeout_s == 900  # 600 s + 250 s, up to 5 minutes
    assert spec.probe is not None and spec.probe.layers == 61


def test_host_and_port_put_in_and_replaced() -> None:
    command, note = served_command(["vllm", "serve", "m"])
    assert command == ["vllm", "serve", "m", "--host", "127.0.0.1", "--port", "{port}"]
    assert note is None

    command, note = served_command(
        ["vllm", "serve", "m", "--host=0.0.0.0", "--port", "8000", "-tp", "8"]
    )
    assert command == ["vllm", "serve", "m", "-tp", "8", "--host", "127.0.0.1", "--port", "{port}"]
    assert note is not None and note.startswith(
        "replaced --host 0.0.0.0 --port 8000 with --host 127.0.0.1 --port {port}"
    )
    # Already as tuner writes it: kept once, nothing to say.
    command, note = served_command(["x", "--host", "127.0.0.1", "--port", "{port}"])
    assert command == ["x", "--host", "127.0.0.1", "--port", "{port}"] and note is None


def test_names_come_from_the_model_else_the_program() -> None:
    assert base_name(["vllm", "serve", "moonshotai/Kimi-K2.5", "-tp", "8"]) == "Kimi-K2.5"
    assert base_name(["{python}", "-m", "vllm.entrypoints.openai.api_server", "--model",
                      "/models/tiny llama/"]) == "tiny-llama"  # fmt: skip
    assert base_name(["{python}", "-m", "tuner.sim", "--profile", "x"]) == "tuner.sim"


def test_no_gpu_and_no_model_are_each_said_in_one_line(tmp_path: Path) -> None:
    result, spec, text = init(tmp_path, "--model", "/models/nowhere", "-tp", "4")
    notes = "\n".join(result.notes)
    assert "no GPU found (NVML not found (no NVIDIA driver)): assumed 4 GPUs" in notes
    assert "model config.json not found at /models/nowhere nor in the HF cache" in notes
    assert all("\n" not in n for n in result.notes)
    assert spec.server.startup_timeout_s == 3600
    assert spec.probe is not None and spec.probe.sizes == "auto"
    # The notes are in the file's header too.
    assert "assumed 4 GPUs joined by PCIe" in " ".join(text.split())
    # A model path that does not exist is the check's error; the file is written anyway.
    assert not result.report.ok
    assert "the model is a local path that does not exist" in str(result.report.errors[0])


def test_goals_set_the_benchmark_and_objective(tmp_path: Path) -> None:
    _, default, _ = init(tmp_path / "d")
    assert default.objective.metric == "output_throughput"
    assert default.objective_concurrency == 1 and default.direction == "maximize"

    _, latency, _ = init(tmp_path / "l", goal="latency")
    assert latency.objective.metric == "tpot_ms_p50" and latency.direction == "minimize"

    _, busy, _ = init(tmp_path / "t", "-tp", "2", goal="throughput")
    assert busy.objective_concurrency == 64 == max(busy.benchmark.concurrency)
    assert busy.probe is not None and busy.probe.sizes == "auto"

    with pytest.raises(ConfigError, match="--goal 'fast': use one of single-stream"):
        init(tmp_path / "x", goal="fast")
    assert not (tmp_path / "x" / "space.yaml").exists()


def test_the_cli_refuses_to_overwrite_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    existing = tmp_path / "mine.yaml"
    existing.write_text("study: mine\n")
    runner = CliRunner()
    refused = runner.invoke(app, ["init", "--out", "mine.yaml", "--", "vllm", "serve", "m"])
    assert refused.exit_code == exit_codes.CONFIG
    assert "mine.yaml exists: pass --force to overwrite it" in " ".join(refused.output.split())
    assert existing.read_text() == "study: mine\n"

    # No command at all: the fix is the usage.
    empty = runner.invoke(app, ["init"])
    assert empty.exit_code == exit_codes.CONFIG
    assert "give the server command after --" in empty.output


def test_every_goal_is_named_in_the_help() -> None:
    text = " ".join(
        CliRunner().invoke(app, ["init", "--help"], env={"COLUMNS": "200"}).output.split()
    )
    for goal in GOALS:
        assert goal in text


def test_the_written_file_loads_as_yaml_with_its_comments(tmp_path: Path) -> None:
    _, _, text = init(tmp_path, "-tp", "8")
    raw = yaml.safe_load(text)
    assert raw["server"]["command"][-4:] == ["--host", "127.0.0.1", "--port", "{port}"]
    assert raw["server"]["port"] == "auto"
    lines = text.splitlines()
    # Every param line has its comment above it, except the pair's second (max channels).
    for i, line in enumerate(lines):
        if line.startswith("  NCCL_ALGO:") or line.startswith("  compilation:"):
            assert lines[i - 1].startswith("  # ")
    assert max(len(line) for line in lines) <= 100
    assert json.dumps(raw)  # plain data, nothing YAML-only
    assert os.sep not in raw["study"]


def test_screening_says_it_simulates_a_moe_models_routing(tmp_path: Path) -> None:
    model = tmp_path / "Kimi-K2.5"
    model.mkdir()
    shutil.copy(KIMI_CONFIG, model / "config.json")
    _, spec, text = init(tmp_path / "moe", "--model", str(model))
    words = " ".join(text.split())
    assert spec.screening is not None and spec.screening.moe_routing == "auto"
    assert "The model has 384 routed experts" in words
    assert "screening launches add VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random" in words
    _, _, dense = init(tmp_path / "dense")  # no config.json: nothing said of experts
    assert "VLLM_MOE_ROUTING_SIMULATION_STRATEGY" not in dense
