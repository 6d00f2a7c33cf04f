"""`tuner compare-studies` on two short sweeps against `tuner sim`, in one database."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.sweep_helpers import FAST_SIM, run_tuner, tuner_in_process, write_space

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _tuner(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if args[0] != "run":  # the commands that only read run here: no Python start-up each
        return tuner_in_process(*args, cwd=cwd)
    return run_tuner(*args, cwd=cwd, timeout=200)


def test_two_sweeps_side_by_side_as_a_table_and_json(tmp_path: Path) -> None:
    levels = {"concurrency": [1, 2]}
    # beta's server takes one request at a time: no gain from a second stream.
    one_seq = [*FAST_SIM, "--max-num-seqs", "1"]
    for path in (
        write_space(tmp_path, "alpha", benchmark=levels),
        write_space(tmp_path, "beta", benchmark=levels, server={"command": one_seq}),
    ):
        run = _tuner("run", "--space", str(path), "--trials", "3", "--seed", "1", cwd=tmp_path)
        assert run.returncode == 0, run.stderr + run.stdout

    done = _tuner("compare-studies", "alpha", "beta", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [s["study"] for s in document["studies"]] == ["alpha", "beta"]
    for line in document["studies"]:
        assert line["label"] == line["study"] and line["levels"] == [1, 2]
        single, high = line["single_stream"], line["high_concurrency"]
        assert single["concurrency"] == 1 and high["concurrency"] == 2
        for best in (single, high):
            assert best["output_throughput"] > 0 and best["launches"] >= 1
            low, up = best["interval"]
            assert low < best["output_throughput"] < up
            assert best["ttft_p99_ms"] > 0
            assert best["j_per_token"] is None  # no GPU telemetry without a GPU
        assert 0 < line["seconds_to_healthy"] < 30

        # Single-stream is the study's objective: the same figure as `tuner best`.
        best_json = _tuner("best", "--study", line["study"], "-f", "json", cwd=tmp_path)
        answer = json.loads(best_json.stdout)
        assert single["output_throughput"] == pytest.approx(answer["best"]["value"])
        assert single["interval"] == pytest.approx(answer["best"]["interval"])
        assert single["trial"] == answer["best"]["trial"]
    # A second stream lifts alpha's throughput (1.6x here); beta's one-at-a-time server
    # barely moves (1.1x): the two columns are two measurements.
    ratios = [
        s["high_concurrency"]["output_throughput"] / s["single_stream"]["output_throughput"]
        for s in document["studies"]
    ]
    assert ratios[0] > ratios[1], ratios

    table = _tuner("compare-studies", "alpha", "beta", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if "alpha" in line or "beta" in line]
    assert len(rows) == 2
    for row, line in zip(rows, document["studies"], strict=True):
        assert f"{line['single_stream']['output_throughput']:.4g}" in row
        assert f"{line['high_concurrency']['output_throughput']:.4g}" in row
    assert "c=2, trial" in table.stdout and "95% interval" in table.stdout

    missing = _tuner("compare-studies", "alpha", "gamma", cwd=tmp_path)
    assert missing.returncode == 1 and "'gamma'" in missing.stderr

    # The same table in the HTML report of alpha, beside beta.
    page = tmp_path / "report.html"
    done = _tuner(
        "report", "--study", "alpha", "--compare", "beta", "--out", str(page), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    section = html[html.index('<section id="studies">') :]
    section = section[: section.index("</section>")]
    assert "Studies side by side" in section
    for line in document["studies"]:
        assert f"<td>{line['label']}</td>" in section
        assert f"{line['single_stream']['output_throughput']:,.1f}" in section
        assert f"{line['high_concurrency']['output_throughput']:,.1f}" in section
