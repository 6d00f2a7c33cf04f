"""`tuner compare-studies` on hand-made studies: which configuration each column takes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
import pytest
from rich.console import Console

from tests.unit.views_helpers import hand_study
from tuner.errors import ConfigError, StoreError
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage.store import Store
from tuner.study.attrs import LABEL
from tuner.views.compare_studies import compare_studies, print_comparison

X = {"NCCL_PROTO": "LL"}
Y = {"compilation": 3}


def _launch(
    store: Store,
    tmp_path: Path,
    trial: int,
    params: Mapping[str, Any],
    levels: Mapping[int, Sequence[float]],
    *,
    status: str = "complete",
    healthy_s: float | None = 10.0,
    ttft_p99_ms: float = 50.0,
    j_per_token: Sequence[float | None] = (),
) -> None:
    """A launch of study 'hand' with these rounds of output throughput per level."""
    settings = settings_from_params(load_space(tmp_path / "hand.yaml").spec, params)
    launch_id = store.add_launch(
        study="hand",
        trial_number=trial,
        role="search",
        config_hash=settings.config_hash,
        params=dict(settings.params),
        env=settings.env,
        argv=["srv"],
    )
    store.update_launch(launch_id, status=status, seconds_to_healthy=healthy_s)
    for concurrency, rounds in levels.items():
        for i, value in enumerate(rounds):
            energy = j_per_token[i] if i < len(j_per_token) else None
            store.add_level(
                launch_id,
                round_index=i,
                summary={
                    "concurrency": concurrency,
                    "completed": 4,
                    "errors": 0,
                    "output_throughput": value,
                    "ttft_ms": {"p99": ttft_p99_ms},
                },
                requests=[],
                gpu_summary={"j_per_token": energy} if energy is not None else None,
            )


def _study(tmp_path: Path) -> str:
    storage = hand_study(tmp_path, [])
    store = Store(storage)
    base = {1: [100.0, 101.0, 99.0], 8: [400.0, 402.0, 398.0]}
    _launch(store, tmp_path, 0, {}, base, healthy_s=10, ttft_p99_ms=80, j_per_token=[2.0, None])
    again = {1: [100.5, 99.5, 100.0], 8: [401.0, 399.0, 400.0]}
    _launch(store, tmp_path, 1, {}, again, healthy_s=12)
    # X: confirmed, best single-stream; worse at 8 streams.
    x1, x2 = [110.0, 111.0, 109.0], [110.5, 109.5, 110.0]
    _launch(store, tmp_path, 2, X, {1: x1, 8: [380.0, 381.0, 379.0]}, healthy_s=14)
    _launch(store, tmp_path, 3, X, {1: x2, 8: [381.0, 379.0, 380.0]}, healthy_s=16)
    # Y: far ahead but launched once, so not trusted.
    y = {1: [150.0, 151.0, 149.0], 8: [600.0, 601.0, 599.0]}
    _launch(store, tmp_path, 4, Y, y, healthy_s=18)
    _launch(store, tmp_path, 5, Y, {}, status="failed", healthy_s=50.0)
    return storage


def test_each_column_takes_the_best_trusted_configuration_at_its_level(tmp_path: Path) -> None:
    line = compare_studies(_study(tmp_path), ["hand"]).studies[0]
    assert line.label == "hand" and line.levels == (1, 8) and line.launches == 5
    single, high = line.single_stream, line.high_concurrency
    assert single is not None and high is not None
    assert (single.trial, single.launches) == (2, 2)
    assert single.output_throughput == pytest.approx(110.0)
    assert single.interval is not None and single.interval[0] < 110.0 < single.interval[1]
    assert (high.trial, high.concurrency) == (0, 8)  # the defaults win at 8 streams
    assert high.output_throughput == pytest.approx(400.0)
    assert high.ttft_p99_ms == pytest.approx((80 * 3 + 50 * 3) / 6)
    assert high.j_per_token == pytest.approx(2.0)  # the only round with GPU energy
    assert single.j_per_token is None  # X has no GPU telemetry
    # The median over every launch that got healthy, the failed one included.
    assert line.seconds_to_healthy == pytest.approx(15.0)


def test_a_study_without_single_stream_shows_a_dash_and_a_label(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [])
    store = Store(storage)
    _launch(store, tmp_path, 0, {}, {4: [200.0, 201.0]}, healthy_s=None)
    optuna.load_study(study_name="hand", storage=storage).set_user_attr(LABEL, "PCIe box")
    line = compare_studies(storage, ["hand"]).studies[0]
    assert line.label == "PCIe box" and line.single_stream is None
    assert line.high_concurrency is not None and line.high_concurrency.concurrency == 4
    assert line.high_concurrency.interval is not None  # the prior noise bounds one launch
    assert line.seconds_to_healthy is None
    console = Console(record=True, width=200)
    print_comparison(compare_studies(storage, ["hand"]), "table", console)
    row = next(r for r in console.export_text().splitlines() if "PCIe box" in r)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[0] == "PCIe box" and cells[1] == "-" and cells[2].startswith("200.5 [")
    assert cells[4:6] == ["-", "-"]


def test_json_has_every_figure_and_errors_name_the_fix(tmp_path: Path) -> None:
    storage = _study(tmp_path)
    console = Console(record=True, width=200)
    print_comparison(compare_studies(storage, ["hand", "hand"]), "json", console)
    document = json.loads(console.export_text())
    assert document["metric"] == "output_throughput" and len(document["studies"]) == 2
    single = document["studies"][0]["single_stream"]
    assert list(single) == [
        "concurrency",
        "output_throughput",
        "stderr",
        "interval",
        "trial",
        "launches",
        "ttft_p99_ms",
        "j_per_token",
    ]
    assert len(single["interval"]) == 2
    with pytest.raises(ConfigError, match="name at least one study"):
        compare_studies(storage, [])
    with pytest.raises(StoreError, match="no study named 'nope'"):
        compare_studies(storage, ["nope"])
    with pytest.raises(ConfigError, match="--format 'xml'"):
        print_comparison(compare_studies(storage, ["hand"]), "xml", console)
