"""`tuner init` on the simulator (issue 38): a Kimi-like TP=8 command on a host without GPUs
gives search_spaces/nccl.yaml's kind of space, read from the sim's real --help, and a
12-launch study runs on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.sweep_helpers import run_tuner
from tuner.space.spec import SHIPPED_SPACES, load_space
from tuner.storage import Store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

# Kimi K2.5 at TP=8 over PCIe; the sim's clock 500 x faster, so a launch takes seconds.
KIMI = ["{python}", "-m", "tuner.sim", "--profile", "kimi-k2.5-int4-tp8",
        "--tensor-parallel-size", "8", "--load-seconds", "0.05", "--time-scale", "0.002",
        "--port", "8000"]  # fmt: skip


def test_init_writes_nccl_yaml_s_kind_of_space_and_a_study_runs_on_it(tmp_path: Path) -> None:
    env = {"TUNER_CACHE_DIR": str(tmp_path / "cache")}  # the sim's --help read afresh
    init = run_tuner("init", "--", *KIMI, cwd=tmp_path, env=env)
    assert init.returncode == 0, init.stdout + init.stderr
    said = " ".join(init.stdout.split())
    assert said.startswith("Wrote tuner.sim.yaml")
    assert "note: replaced --port 8000 with --host 127.0.0.1 --port {port}" in said
    assert "note: no GPU found (" in said and "assumed 8 GPUs joined by PCIe without NVLink" in said
    assert "note: the command names no model" in said
    assert "tuner.sim.yaml: 0 error(s)" in said
    assert said.endswith("Next: tuner run --space tuner.sim.yaml --trials 20")

    path = tmp_path / "tuner.sim.yaml"
    spec = load_space(path).spec
    shipped = load_space(SHIPPED_SPACES / "nccl.yaml").spec
    # nccl.yaml's NCCL variables and compilation levels, and its screening; the custom
    # all-reduce is left out with vLLM's reason: TP=8 without NVLink builds none.
    env_params = [n for n, p in spec.params.items() if p.env]
    assert env_params == [n for n, p in shipped.params.items() if p.env]
    assert spec.params["compilation"] == shipped.params["compilation"]
    assert "disable_custom_all_reduce" in shipped.params
    assert "disable_custom_all_reduce" not in spec.params
    text = " ".join(line.strip("# ") for line in path.read_text().splitlines())
    assert "disable_custom_all_reduce: TP=8 on GPUs 0-7 with no NVLink" in text
    assert spec.screening is not None and spec.screening.args == shipped.screening.args
    assert spec.constraints == shipped.constraints
    assert spec.server.command[-4:] == ["--host", "127.0.0.1", "--port", "{port}"]
    assert "8000" not in spec.server.command

    # A short study: 12 full loads and at most 4 screening launches (40 by default).
    path.write_text(path.read_text().replace("screening:\n", "screening:\n  max_launches: 4\n", 1))
    assert load_space(path).spec.screening.max_launches == 4
    db = f"sqlite:///{tmp_path}/init.db"
    run = run_tuner(
        "run", "--space", str(path), "--trials", "12", "--storage", db, cwd=tmp_path, timeout=450
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    launches = Store(db).launches("tuner.sim")
    full = [x for x in launches if x.fidelity == "full"]
    assert 2 <= len(full) <= 12  # --trials counts the full loads
    assert any(x.fidelity == "screen" for x in launches)
    assert any(k.startswith("NCCL_") for x in launches for k in x.env)
    assert not any("--disable-custom-all-reduce" in (x.argv or []) for x in launches)


def test_a_check_error_exits_2_and_the_file_is_still_written(tmp_path: Path) -> None:
    env = {"TUNER_CACHE_DIR": str(tmp_path / "cache")}
    init = run_tuner(
        "init", "--out", "mine.yaml", "--", "{python}", "-m", "tuner.sim", "--model", "./nowhere",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert init.returncode == 2, init.stdout + init.stderr
    said = " ".join(init.stdout.split())
    assert "note: model config.json not found at ./nowhere" in said
    assert (
        "ERROR server.command:" in said and "the model is a local path that does not exist" in said
    )
    assert said.endswith("then: tuner run --space mine.yaml --trials 20")
    assert load_space(tmp_path / "mine.yaml").spec.study == "nowhere"
