"""`tuner trials` and `tuner show N` on a hand-made study with a failed trial."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.unit.views_helpers import BASELINE, FAILED_REASON, hand_study
from tuner.errors import ConfigError, StoreError
from tuner.launcher.load_phases import LoadPhases
from tuner.storage.store import Store
from tuner.views.trials import load_line, print_trial, print_trials, trial_detail, trials_rows

STUDY = [BASELINE, ({"NCCL_PROTO": "LL"}, [82.0, 82.1]), ({"compilation": 0}, None)]


def test_each_trial_is_a_row_with_its_launch_facts_or_its_failure(tmp_path: Path) -> None:
    rows = trials_rows(hand_study(tmp_path, STUDY), "hand")
    assert [(r.number, r.state, r.role) for r in rows] == [
        (0, "complete", "baseline"),
        (1, "complete", "search"),
        (2, "fail", "search"),
    ]
    assert rows[0].changed == {} and rows[1].changed == {"NCCL_PROTO": "LL"}
    assert rows[1].value == pytest.approx(82.05)
    assert rows[2].value is None and rows[2].seconds_to_healthy is None
    assert rows[2].reason == FAILED_REASON
    assert list(rows[2].to_json()) == [
        "number",
        "state",
        "role",
        "changed",
        "value",
        "stderr",
        "seconds_to_healthy",
        "reason",
        "host",
        "fidelity",
        "failure_cause",
    ]


def test_the_trials_table_shows_defaults_values_and_why_a_trial_failed(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    print_trials(hand_study(tmp_path, STUDY), "hand", console)
    lines = {
        line.split("│")[1].strip(): line
        for line in console.export_text().splitlines()
        if "│" in line
    }
    assert "(defaults)" in lines["0"] and "81.37" in lines["0"]
    assert "NCCL_PROTO=LL" in lines["1"] and "82.05" in lines["1"]
    assert "compilation=0" in lines["2"] and FAILED_REASON in lines["2"]


def test_the_trials_table_names_the_hosts_when_several_shared_the_study(
    tmp_path: Path,
) -> None:
    storage = hand_study(tmp_path, STUDY)
    console = Console(record=True, width=200)
    print_trials(storage, "hand", console)
    assert "host" not in console.export_text()  # one host: no column
    store = Store(storage)
    store.update_launch(store.launches("hand")[1].id, host="gpu-b")
    print_trials(storage, "hand", console)
    text = console.export_text()
    header = next(line for line in text.splitlines() if "┃" in line)
    assert [c.strip() for c in header.split("┃")[1:5]] == ["#", "state", "role", "host"]
    lines = [line for line in text.splitlines() if "│" in line]
    assert "gpu-b" in next(line for line in lines if line.split("│")[1].strip() == "1")


def test_show_prints_the_command_env_and_levels_of_one_launch(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, STUDY)
    store = Store(storage)
    launch = store.launch_for_trial("hand", 1)
    assert launch is not None
    summary: dict[str, Any] = {
        "concurrency": 4,
        "completed": 8,
        "errors": 0,
        "output_throughput": 412.5,
    }
    summary |= {"ttft_ms": {"p50": 12.34}}  # the other latency families are missing: "-"
    store.add_level(launch.id, round_index=0, summary=summary, requests=[])

    detail = trial_detail(storage, "hand", 1)
    assert detail.launch.trial_number == 1 and len(detail.levels) == 1
    console = Console(record=True, width=200)
    print_trial(storage, "hand", 1, console)
    text = console.export_text()
    assert "Trial 1 (search) status complete" in text
    assert "command: srv" in text and "env: NCCL_PROTO=LL" in text
    assert "load (full): the server's log named no phase of it" in text
    level = next(line for line in text.splitlines() if "412.5" in line)
    assert [cell.strip() for cell in level.split("│")[1:-1]] == [
        "0", "4", "8", "0", "412.5", "12.3", "-", "-", "-", "",
    ]  # fmt: skip


def test_show_names_an_earlier_launch_whose_port_was_taken(tmp_path: Path) -> None:
    # The runner launches a trial again when its port was taken (tuner/trial/runner.py):
    # the trial's last launch is shown, and the failed one before it named.
    storage = hand_study(tmp_path, STUDY)
    store = Store(storage)
    first = store.launch_for_trial("hand", 1)
    assert first is not None
    taken = "server exited with code 1 before it was healthy: [Errno 98] address already in use"
    store.update_launch(first.id, status="failed", reason=taken, port=41001)
    again = store.add_launch(
        study="hand", trial_number=1, role=first.role, config_hash=first.config_hash,
        params=first.params, env=first.env, argv=first.argv, port=41002, status="complete",
    )  # fmt: skip
    detail = trial_detail(storage, "hand", 1)
    assert detail.launch.id == again and [r.id for r in detail.earlier] == [first.id]
    console = Console(record=True, width=300)
    print_trial(storage, "hand", 1, console)
    text = console.export_text()
    assert "Trial 1 (search) status complete" in text
    assert f"an earlier launch of this trial on port 41001: failed: {taken}" in text


def test_show_of_a_trial_that_never_launched_says_so(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, STUDY)
    with pytest.raises(StoreError, match="trial 2 of 'hand' never launched a server"):
        trial_detail(storage, "hand", 2)


def test_show_prints_the_fidelity_and_the_phases_of_the_load(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, STUDY)
    store = Store(storage)
    launch = store.launch_for_trial("hand", 1)
    assert launch is not None
    phases = LoadPhases(weights_s=2046.0, compile_s=54.0, cuda_graphs_s=24.0, healthy_s=2160.0)
    store.update_launch(
        launch.id, fidelity="screen", load_phases=dict(phases.to_json(), processes=8)
    )
    console = Console(record=True, width=200)
    print_trial(storage, "hand", 1, console)
    assert (
        "load (screen): weights 2046.0 s, torch.compile 54.0 s, CUDA graphs 24.0 s, "
        "the rest 36.0 s (the slowest of 8 processes)"
    ) in console.export_text()
    failed = LoadPhases(weights_s=30.0).to_json()
    store.update_launch(launch.id, fidelity=None, load_phases=failed)
    row = store.launch_for_trial("hand", 1)
    assert row is not None
    assert load_line(row) == "load (full): weights 30.0 s (never healthy)"


def test_show_of_a_trial_number_the_study_does_not_have_says_which_it_has(
    tmp_path: Path,
) -> None:
    storage = hand_study(tmp_path, STUDY)
    with pytest.raises(ConfigError, match=r"'hand' has no trial 99: its trials are 0 to 2"):
        trial_detail(storage, "hand", 99)
    with pytest.raises(ConfigError, match="has no trial -1"):
        trial_detail(storage, "hand", -1)


def test_show_of_a_launch_that_never_became_healthy_says_so_not_nan(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, STUDY)
    store = Store(storage)
    launch = store.launch_for_trial("hand", 1)
    assert launch is not None
    store.update_launch(
        launch.id, status="failed", reason="exited with code 1", seconds_to_healthy=None
    )
    console = Console(record=True, width=200)
    print_trial(storage, "hand", 1, console)
    text = console.export_text()
    assert "never healthy" in text
    assert "nan" not in text.lower().replace("nccl", "")
