"""Capacity and goodput as the objective of a study on `tuner sim`, where both are known.

The sim runs at most ``--max-num-seqs`` requests at once (8 in the command); a request
beyond that waits for a whole request (about 60 ms at --time-scale 0.1) before its first
token, while one with a free slot answers in a few ms. Under ``ttft_ms.p99 <= 30`` the
true capacity is therefore the configuration's --max-num-seqs (tests/integration/
test_bench_capacity.py shows it for `tuner bench --capacity`), and at 16 streams the
goodput within a 30 ms TTFT is higher with 16 slots than with 8.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.sweep_helpers import FAST_SIM, tuner_in_process, write_space
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep

pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(150)]

SIM_8_SLOTS = [*FAST_SIM[:-4], "--max-num-seqs", "8", *FAST_SIM[-4:]]
SEQS = {"max_num_seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 4, 12]}}
TRUE_CAPACITY = {"default": 8, 4: 4, 12: 12}


def _sweep(
    tmp_path: Path, trials: int, params: dict[str, Any], **sections: dict[str, Any]
) -> tuple[str, Store]:
    """A study of ``params`` alone (write_space's other params left out)."""
    path = write_space(
        tmp_path,
        "cap",
        server={"command": SIM_8_SLOTS, "startup_timeout_s": 30, "stop_timeout_s": 5},
        **sections,
    )
    space = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**space, "params": params}, sort_keys=False))
    storage = f"sqlite:///{tmp_path}/e.db"
    run_sweep(load_space(path), RunRequest(storage, trials, seed=0, preflight=False))
    return storage, Store(storage)


def test_each_launchs_capacity_is_within_one_bisection_step_of_the_truth(tmp_path: Path) -> None:
    storage, store = _sweep(
        tmp_path,
        8,  # 4 to find 12, then the final comparison's 4 before it is the answer
        params=SEQS,
        benchmark={"max_tokens": 32, "requests": 16, "rounds": 1,
                   "capacity": {"limits": ["ttft_ms.p99 <= 30"], "max_concurrency": 16}},
        objective={"metric": "capacity", "concurrency": None},
        stop={"baseline_launches": 1, "patience": 10, "min_gain": 0.05},
    )  # fmt: skip
    launches = [r for r in store.launches("cap") if r.status == "complete"]
    assert len(launches) >= 3 and {r.params["max_num_seqs"] for r in launches} >= {"default", 12}
    for row in launches:
        truth = TRUE_CAPACITY[row.params["max_num_seqs"]]
        (search,) = row.capacity or []
        assert abs(search["capacity"] - truth) <= 1, (row.params, search)
        assert row.objective_rounds == [float(search["capacity"])]
        assert search["first_broken"] == search["capacity"] + 1  # resolved to one stream
        # The search's levels are stored, flagged: the fixed level alone is read as one.
        assert [lv.concurrency for lv in store.levels(row.id)] == [1]
        searched = [lv.concurrency for lv in store.levels(row.id, capacity_search=True)]
        assert searched[:4] == [1, 2, 4, 8] and search["capacity"] in searched  # doubling first
    done = tuner_in_process("best", "--storage", storage, "--study", "cap", "--format", "json",
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["metric"] == "capacity" and answer["recommended"]["params"]["max_num_seqs"] == 12
    capacity = answer["capacity"]
    assert capacity["limits"] == ["ttft_ms.p99 <= 30"]
    assert abs(capacity["recommended"]["capacity"] - 12) <= 1
    assert capacity["recommended"]["at_capacity"]["ttft_ms_p99"] <= 30
    assert capacity["recommended"]["at_capacity"]["output_throughput"] > 0
    table = tuner_in_process("best", "--storage", storage, "--study", "cap", cwd=tmp_path)
    assert "Capacity within ttft_ms.p99 <= 30:" in table.stdout


def test_goodput_as_the_objective_counts_requests_within_the_slo(tmp_path: Path) -> None:
    storage, store = _sweep(
        tmp_path,
        4,  # the baseline, 16 slots, 16 slots again to confirm it, the simpler form
        params={"max_num_seqs": {**SEQS["max_num_seqs"], "choices": ["default", 16]}},
        benchmark={"max_tokens": 32, "requests": 32, "concurrency": [16], "rounds": 2,
                   "goodput": {"ttft_ms": 30}},
        objective={"metric": "goodput", "concurrency": 16},
        stop={"baseline_launches": 1, "patience": 10},
    )  # fmt: skip
    by_seqs: dict[Any, list[float]] = {}
    for row in store.launches("cap"):
        assert row.status == "complete", row.reason
        levels = store.levels(row.id)
        assert all(lv.summary["goodput_slos"] == {"ttft_ms": 30.0} for lv in levels)
        assert row.objective_rounds == [lv.summary["goodput"] for lv in levels]
        by_seqs.setdefault(row.params["max_num_seqs"], []).extend(row.objective_rounds or [])
    # 8 slots: half of 16 streams wait a whole request for their first token, past 30 ms.
    assert min(by_seqs[16]) > 1.5 * max(by_seqs["default"]) > 0
    done = tuner_in_process("best", "--storage", storage, "--study", "cap", "--format", "json",
                     cwd=tmp_path)  # fmt: skip
    answer = json.loads(done.stdout)
    assert answer["metric"] == "goodput" and answer["direction"] == "maximize"
    assert answer["best"]["params"]["max_num_seqs"] == 16
