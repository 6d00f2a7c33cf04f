"""The parallel layout searched on `tuner sim` (issue 25 point 5): search_spaces/layout.yaml.

The sim's MiniMax profile holds the seeds' figures: TP=4 2,586 tok/s at 256 streams and 84
at one, TP=8 with expert parallelism 3,982 at 256 and (invented) 80 at one. So a study of
the whole server's throughput at 256 streams finds TP=8 with EP, one at a single stream
keeps TP=4, and one per GPU at 256 keeps TP=4 too (646 tok/s a GPU against 498). The
layouts the model's shape or the GPU count rule out are refused before any launch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from tests.integration.sweep_helpers import run_tuner, tuner_in_process
from tuner.space.spec import SHIPPED_SPACES
from tuner.storage import Store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def layout_space(tmp_path: Path, name: str, *, concurrency: int, per_gpu: bool) -> Path:
    """The shipped layout.yaml, its sim's loads fast (0.2 s) and its rounds short and
    its model's config.json named by an absolute path, as a copy elsewhere must."""
    space: dict[str, Any] = yaml.safe_load((SHIPPED_SPACES / "layout.yaml").read_text())
    models = (SHIPPED_SPACES / "models").resolve()
    command = [
        str(models) + arg.removeprefix("{space_dir}/models") if "{space_dir}" in arg else arg
        for arg in space["server"]["command"]
    ]
    at = command.index("--load-seconds")
    # Real time: 256 streams of the sim at 0.3 of it are more SSE events than this 2-core
    # machine's client reads evenly (rounds 10% apart); at 1 they are 2,586 tok/s.
    command[at : at + 2] = ["--load-seconds", "0.2"]
    space["server"]["command"] = command
    space["study"] = name
    space["benchmark"].update(
        concurrency=[concurrency],
        requests=max(2, concurrency),
        prompt_tokens=16,
        max_tokens=16,
        warmup=0,
    )
    space["objective"].update(concurrency=concurrency, per_gpu=per_gpu)
    space["stop"].update(baseline_launches=1, patience=6)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def study(tmp_path: Path, path: Path, trials: int) -> dict[str, Any]:
    run = run_tuner(
        "run", "--space", str(path), "--trials", str(trials), "--seed", "3", cwd=tmp_path
    )
    assert run.returncode == 0, run.stdout + run.stderr
    best = tuner_in_process("best", "--space", str(path), "--format", "json", cwd=tmp_path)
    # 5: "not settled" (the defaults deployed meanwhile): TP=4 stays the answer either way.
    assert best.returncode in (0, 5), best.stdout + best.stderr
    answer: dict[str, Any] = json.loads(best.stdout)
    return answer


def layout(entry: dict[str, Any]) -> tuple[str, str, str]:
    p = entry["params"]
    return (str(p["tensor_parallel"]), str(p["expert_parallel"]), str(p["pipeline_parallel"]))


TP8_EP = ("8", "True", "default")
TP4 = ("default", "default", "default")


# Alone (scripts/test.sh): the sim's 256 streams are timed on the host's cores. The defaults
# were kept in CI at 8c50a45 and at stop 35, and here in 3 of 8 runs beside a busy loop:
# each round used to send the round before's prompts, so the second round hit the prefix
# cache and ran 7-12% faster than the first in every launch, and that spread, taken for
# noise, left +49% on 2 final launches a side at -20% to +118% (99%). With a window's own
# prompts (tests/integration/test_launch_prompts.py): 8 of 8 beside a busy loop, ±3.4%.
@pytest.mark.alone
def test_the_whole_server_at_256_streams_gains_most_at_tp8_with_ep(tmp_path: Path) -> None:
    # 24 launches: the budget keeps the final comparison's sized look (6 a side at this
    # noise) from the plan on; 8 search launches reach TP=8 with EP and confirm it, and the
    # comparison's first look (2 fresh launches a side, +45%) passes.
    answer = study(tmp_path, layout_space(tmp_path, "abs256", concurrency=256, per_gpu=False), 24)
    assert layout(answer["recommended"]) == TP8_EP, answer["recommended"]
    assert answer["final"]["passed"] is True
    assert "per_gpu" not in answer["recommended"]
    rows = Store(f"sqlite:///{tmp_path}/experiments.db").launches("abs256")
    # Refused by the model's shape or the GPU count, before any launch: never started.
    launched = {layout({"params": r.params}) for r in rows}
    assert not any(tp == "6" for tp, _, _ in launched)
    assert ("8", "default", "default") not in launched  # FP8 blocks split without EP


def first_rounds(tmp_path: Path, name: str) -> dict[tuple[str, str, str], float]:
    """Each launched layout's objective in its first round (a pruned launch keeps its own)."""
    rows = Store(f"sqlite:///{tmp_path}/experiments.db").launches(name)
    return {layout({"params": r.params}): r.objective_rounds[0] for r in rows if r.objective_rounds}


def test_one_stream_keeps_tp4(tmp_path: Path) -> None:
    # 12 launches: the last 4 are the final comparison's, kept from the search (which stops
    # before them when nothing beats TP=4); 7 search launches reach TP=8 with EP.
    answer = study(tmp_path, layout_space(tmp_path, "abs1", concurrency=1, per_gpu=False), 12)
    assert layout(answer["recommended"]) == TP4, answer["recommended"]
    measured = first_rounds(tmp_path, "abs1")  # TP=8 with EP tried: 80 tok/s against 84
    assert measured[TP8_EP] < measured[TP4], measured


def test_per_gpu_at_256_streams_keeps_tp4_and_says_both_figures(tmp_path: Path) -> None:
    path = layout_space(tmp_path, "gpu256", concurrency=256, per_gpu=True)
    answer = study(tmp_path, path, 12)  # 7 search launches, as in test_one_stream_keeps_tp4
    rec = answer["recommended"]
    assert layout(rec) == TP4, rec
    assert rec["per_gpu"] is True and rec["gpus"] == 4
    assert rec["value_total"] == pytest.approx(4 * rec["value"])
    # 2,586 tok/s on 4 GPUs: 646 a GPU (the prefill and the client cost a little).
    assert 450 < rec["value"] < 700
    table = tuner_in_process("best", "--space", str(path), cwd=tmp_path).stdout
    assert "per GPU" in table and "on 4 GPUs" in table, table
    named = optuna.load_study(study_name="gpu256", storage=f"sqlite:///{tmp_path}/experiments.db")
    assert named.metric_names == ["output_throughput/GPU"]  # optuna-dashboard's axis
    # TP=8 with EP measured per GPU: below TP=4's, though the server makes half as much again.
    per_gpu = first_rounds(tmp_path, "gpu256")
    assert per_gpu[TP8_EP] < 0.85 * per_gpu[TP4], per_gpu
