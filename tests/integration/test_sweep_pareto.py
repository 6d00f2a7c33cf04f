"""A two-objective sweep against `tuner sim --profile slo-trade`, whose front is known.

search_spaces/pareto-sim.yaml: output throughput and TTFT p99, both at 64 streams. In the
sim's model (tuner/sim/profiles.py) --max-num-seqs 256 gives about +5% throughput with TTFT
unchanged, --max-num-batched-tokens 16384 about +14% with TTFT about 4x, and both together
more throughput still with TTFT as high. So the non-dominated set is {--max-num-seqs 256,
both}, and the rule recommends --max-num-seqs 256 (better on one objective, worse on none,
the fewest settings). The test drops NCCL_PROTO (no effect) to keep four configurations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.sweep_helpers import run_tuner, tuner_in_process
from tuner.space.spec import SHIPPED_SPACES

pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(180)]

SEQS = {"max_num_seqs": 256}
BOTH = {"max_num_batched_tokens": 16384, "max_num_seqs": 256}


def _space(tmp_path: Path) -> Path:
    raw = yaml.safe_load((SHIPPED_SPACES / "pareto-sim.yaml").read_text())
    raw["params"].pop("NCCL_PROTO")
    path = tmp_path / "pareto.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_two_objective_front_and_recommendation(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path}/e.db"
    ran = run_tuner(
        "run", "--space", str(_space(tmp_path)), "--trials", "14", "--seed", "3",
        "--storage", storage, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = tuner_in_process(
        "best", "--study", "pareto-sim", "--storage", storage, "--format", "json", cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    answer: dict[str, Any] = json.loads(shown.stdout)

    assert [o["metric"] for o in answer["objectives"]] == ["output_throughput", "ttft_ms_p99"]
    assert answer["constraints"]["limits"] == ["error_rate@* <= 0.01"]
    rows = {json.dumps(r["changed"], sort_keys=True): r for r in answer["pareto"]}
    front = [r["changed"] for r in answer["pareto"] if not r["dominated"]]
    # The known non-dominated configurations are trusted and on the front.
    assert SEQS in front and BOTH in front, json.dumps(answer["pareto"]) + ran.stdout[-5000:]
    for row in answer["pareto"]:
        assert set(row["objectives"]) == {"output_throughput@64", "ttft_ms_p99@64"}
        assert row["dominated"] == bool(row["dominated_by"])
    # --max-num-batched-tokens alone: both together beat it on throughput at equal TTFT,
    # so it is never recommendable (dominated, or a trade).
    batched = rows.get(json.dumps({"max_num_batched_tokens": 16384}))
    assert batched is None or not batched["recommendable"]

    # The rule: the simplest recommendable configuration, which is --max-num-seqs 256.
    recommended = answer["recommended"]
    changed = {k: v for k, v in recommended["params"].items() if v != "default"}
    assert changed == SEQS
    assert answer["keep_defaults"] is False
    mine = rows[json.dumps(SEQS)]
    assert mine["recommended"] and mine["recommendable"] and not mine["dominated"]
    assert not rows[json.dumps(BOTH)]["recommendable"]  # its TTFT is worse than the defaults'
    assert "non-dominated" in recommended["reason"]

    # The deploy formats deploy the recommendation of the front.
    args = tuner_in_process(
        "best", "--study", "pareto-sim", "--storage", storage, "-f", "args", cwd=tmp_path
    )
    assert args.stdout.strip() == "--max-num-seqs 256", args.stdout + args.stderr

    # The report carries the same statistical front and reason as `tuner best`.
    made = tuner_in_process(
        "report", "--study", "pareto-sim", "--storage", storage, "--out", "r.html", cwd=tmp_path
    )
    assert made.returncode == 0, made.stdout + made.stderr
    page = (tmp_path / "r.html").read_text()
    table = page[page.index('id="front-table"') : page.index('id="front-reason"')]
    assert table.count("<tr>") == len(answer["pareto"]) + 1  # a header and one per row
    assert table.count("non-dominated") == len(front)
    assert "recommended" in table and "--max-num-seqs" not in table  # params named, not flags
    assert "max_num_seqs=256" in table
