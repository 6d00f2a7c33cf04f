"""docs/distributed.md: its Slurm script parses, its Job is valid YAML, and every tuner
option they use exists."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import typer.main
import yaml

from tuner.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def _run_options() -> set[str]:
    command = typer.main.get_command(app)
    run = command.commands["run"]  # type: ignore[attr-defined]
    return {opt for param in run.params for opt in param.opts}


def _assert_known(argv: list[str]) -> None:
    assert argv[argv.index("run") - 1].endswith("tuner"), argv
    unknown = {a for a in argv if a.startswith("--")} - _run_options()
    assert not unknown, f"docs/distributed.md uses unknown options {unknown}"


def test_the_slurm_script_parses_and_uses_real_options() -> None:
    (script,) = [b for b in _blocks("bash") if "#SBATCH" in b]
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    line = script[script.index("exec ") :].replace("\\\n", " ")
    _assert_known(shlex.split(line.splitlines()[0])[1:])


def test_the_kubernetes_job_is_one_pod_per_host_and_uses_real_options() -> None:
    (job,) = [yaml.safe_load(b) for b in _blocks("yaml")]
    assert job["kind"] == "Job" and job["spec"]["completions"] == job["spec"]["parallelism"]
    pod = job["spec"]["template"]["spec"]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["topologyKey"] == "kubernetes.io/hostname"
    (container,) = pod["containers"]
    _assert_known(container["command"])
    env = {e["name"] for e in container["env"]}
    assert "TUNER_STORAGE" in env
