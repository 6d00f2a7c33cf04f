"""`tuner report` end to end: a short sweep on `tuner sim`, the HTML file it writes, that file
in a real browser (no console error, every chart drawn, no label over another, no network
request), and optuna-dashboard serving the study, its trials' attrs and the report.

The browser test needs chromium (Debian's ``chromium``; CI installs it, .ci/run) and skips
without it. Its screenshot and the report go to ``$TUNER_ARTIFACTS_DIR`` (default
``ci-artifacts/`` in the checkout), kept as CI artifacts.
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from tests.browser import find_chromium, load_page
from tests.integration.sweep_helpers import run_tuner, write_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.views.report import artifact_dir, report_artifacts, write_report

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ARTIFACTS = Path(
    os.environ.get("TUNER_ARTIFACTS_DIR") or Path(__file__).parents[2] / "ci-artifacts"
)
EXPECTED_CHARTS = {"history", "effects", "throughput", "ttft", "tpot", "telemetry-0", "timing"}

# Run in the page after its load: every chart's size, drawn marks, text boxes that overlap
# each other or cross the chart's edge (1 px of slack), the sections, and the verdict.
DOM_CHECK = """(() => {
  const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 &&
                        a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const charts = [...document.querySelectorAll('svg.chart')].map(svg => {
    const box = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')]
      .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
    const overlaps = [];
    for (const [text, b] of texts)  // a label cut off at the chart's edge
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 ||
          b.bottom > box.bottom + 1) overlaps.push(text + ' / the edge');
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (hit(texts[i][1], texts[j][1])) overlaps.push(texts[i][0] + ' / ' + texts[j][0]);
    return {name: svg.dataset.chart, width: box.width, height: box.height,
            marks: svg.querySelectorAll('.mark').length, labels: texts.length, overlaps};
  });
  return {title: document.title, charts,
          sections: [...document.querySelectorAll('section')].map(s => s.id),
          verdict: (document.getElementById('verdict') || {}).textContent || ''};
})()"""


def _tuner(*args: str, cwd: Path, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return run_tuner(*args, cwd=cwd, timeout=timeout, env={"TUNER_CACHE_DIR": str(cwd / "cache")})


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short study: the defaults twice, then search trials, three concurrency levels."""
    folder = tmp_path_factory.mktemp("report")
    space = write_space(
        folder,
        benchmark={"concurrency": [1, 4, 16], "requests": 4, "rounds": 2},
        stop={"baseline_launches": 2, "patience": 20},
    )
    done = _tuner("run", "--space", space.name, "--trials", "5", "--seed", "1", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


@pytest.fixture(scope="module")
def report(study_dir: Path) -> Path:
    done = _tuner("report", "--out", "out/report.html", cwd=study_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    return study_dir / "out" / "report.html"


class _References(HTMLParser):
    """Everything in a page that could make the browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        for name, value in attributes:
            fetches = name in ("src", "href", "xlink:href", "srcset", "poster", "action", "data")
            if fetches and value and not value.startswith(("#", "data:")):
                self.found.append(f"<{tag} {name}={value}>")
        if tag == "link":
            self.found.append(f"<link {attributes}>")


def external_references(page: str) -> list[str]:
    """What in ``page`` would load from elsewhere: src/href attributes, <link>, CSS url()
    and @import (data: and #fragment references are in the file itself)."""
    parser = _References()
    parser.feed(page)
    found = parser.found
    found += [m for m in re.findall(r"url\(\s*['\"]?([^'\")]*)", page) if not m.startswith("#")]
    found += re.findall(r"@import[^;]*", page)
    return found


def test_report_writes_one_self_contained_file_with_every_section(report: Path) -> None:
    page = report.read_text()
    assert stat.S_IMODE(report.stat().st_mode) == 0o600  # it names settings and failures
    assert external_references(page) == []
    assert "<script" not in page  # no code at all: nothing to fail or to fetch
    for section in ("answer", "history", "effects", "concurrency", "telemetry", "timing", "plan"):
        assert f'<section id="{section}">' in page
    assert "what would lower them:" in page  # the whole cost plan, not the sweep's summary
    assert 'id="pareto"' not in page  # one objective: no front to draw (docs/report.md)
    assert "Host CPU and memory" in page  # no GPU here: the host's telemetry instead
    assert len(page) < 200_000, len(page)  # small: SVG drawn by hand, nothing inlined


def test_the_static_check_finds_a_fetch() -> None:
    """The check above is not vacuous: each way of fetching is caught."""
    for bad in (
        '<img src="https://example.com/a.png">',
        '<script src="/x.js"></script>',
        '<link rel="stylesheet" href="x.css">',
        "<style>body{background:url(http://example.com/a.png)}</style>",
        "<style>@import 'x.css';</style>",
    ):
        assert external_references(f"<html><body>{bad}</body></html>"), bad


def test_the_report_renders_in_chromium_without_errors_or_requests(
    report: Path, tmp_path: Path
) -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium; CI installs it)")
    loaded = load_page(chromium, report.resolve().as_uri(), check=DOM_CHECK, profile=tmp_path / "p")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "report.png").write_bytes(loaded.screenshot)
    (ARTIFACTS / "report.html").write_text(report.read_text())

    assert loaded.console == [] and loaded.exceptions == [], (loaded.console, loaded.exceptions)
    assert [e for e in loaded.log if e[0] in ("error", "warning")] == []
    assert loaded.requests == [report.resolve().as_uri()]  # the file itself, nothing else
    assert loaded.failed == []
    dom = loaded.dom
    assert dom["title"] == "tuner report: fast"
    assert "keep the defaults" in dom["verdict"].lower() or "deploy" in dom["verdict"].lower()
    names = {c["name"] for c in dom["charts"]}
    assert names >= EXPECTED_CHARTS, names
    for chart in dom["charts"]:
        assert chart["width"] > 400 and chart["height"] > 100, chart
        assert chart["marks"] > 0, chart  # something drawn, not only axes
        assert chart["labels"] > 2, chart  # ticks and titles
        assert chart["overlaps"] == [], chart
    assert loaded.screenshot.startswith(b"\x89PNG")


def test_gpu_telemetry_renders_as_power_clock_and_utilisation_charts(
    study_dir: Path, tmp_path: Path
) -> None:
    """No GPU here: the study's copy gets two GPUs' samples as NVML would give them."""
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium; CI installs it)")
    with (
        sqlite3.connect(study_dir / "experiments.db") as source,
        sqlite3.connect(tmp_path / "gpu.db") as copy,
    ):
        source.backup(copy)  # the WAL's pages too, unlike a file copy
    storage = f"sqlite:///{tmp_path}/gpu.db"
    store = Store(storage)
    for launch in store.launches("fast"):
        store.add_samples(
            launch.id,
            [
                {
                    "kind": "gpu",
                    "time_s": 1000.0 + t * 0.5,
                    "gpu_index": gpu,
                    "data": {
                        "power_w": 250.0 + 100 * (t % 7) / 7 + 10 * gpu,
                        "sm_clock_mhz": 1980.0 - 5 * (t % 3),
                        "util_pct": 95.0 if t > 4 else 10.0,
                    },
                }
                for t in range(60)
                for gpu in (0, 1)
            ],
        )
    page = write_report(storage, "fast", tmp_path / "gpu.html")
    text = page.read_text()
    assert "GPU power, clocks and utilisation" in text and "Host CPU" not in text
    loaded = load_page(chromium, page.as_uri(), check=DOM_CHECK, profile=tmp_path / "p")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "report-gpu.png").write_bytes(loaded.screenshot)
    assert loaded.console == [] and loaded.exceptions == [] and loaded.failed == []
    charts = {c["name"]: c for c in loaded.dom["charts"]}
    for name in ("telemetry-0", "telemetry-1", "telemetry-2"):
        assert charts[name]["marks"] > 0 and charts[name]["overlaps"] == [], charts[name]


def test_the_browser_check_sees_a_request_and_a_console_error(tmp_path: Path) -> None:
    """The browser test is not vacuous: a fetch and an error in a page are both seen."""
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium; CI installs it)")
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="http://example.com/a.png">'
        "<script>console.error('bad')</script></body></html>"
    )
    loaded = load_page(chromium, page.as_uri(), check="1", profile=tmp_path / "p")
    assert "http://example.com/a.png" in loaded.requests
    assert loaded.failed  # refused: the proxy listens nowhere
    assert ("error", "bad") in loaded.console


def test_a_second_report_replaces_the_first_artifact(study_dir: Path, report: Path) -> None:
    storage = f"sqlite:///{study_dir}/experiments.db"
    [before] = report_artifacts(storage, "fast")
    done = _tuner("report", "--out", "again.html", cwd=study_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    [after] = report_artifacts(storage, "fast")
    assert after["artifact_id"] != before["artifact_id"]
    assert after["filename"] == "again.html" and after["mimetype"] == "text/html"
    folder = artifact_dir(storage)
    assert sorted(p.name for p in folder.iterdir()) == [after["artifact_id"]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_optuna_dashboard_lists_the_study_its_trials_attrs_and_the_report(
    study_dir: Path, report: Path
) -> None:
    pytest.importorskip("optuna_dashboard")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tuner", "dashboard", "--port", str(port)],
        cwd=study_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        studies = _wait_for_json(f"{base}/api/studies", server)["study_summaries"]
        [study] = [s for s in studies if s["study_name"] == "fast"]
        detail = httpx.get(f"{base}/api/studies/{study['study_id']}", params={"after": 0}).json()
        assert detail["objective_names"] == ["output_throughput"]
        study_attrs = {a["key"]: a["value"] for a in detail["user_attrs"]}
        assert study_attrs[attrs.VERDICT]  # the answer, in a sentence
        assert attrs.VERDICTS in study_attrs
        trials = detail["trials"]
        assert len(trials) >= 5
        for trial in trials:
            keys = {a["key"] for a in trial["user_attrs"]}
            assert {attrs.PARAMS, attrs.ROLE} <= keys, (trial["number"], keys)
            if trial["state"] in ("Complete", "Pruned", "Fail"):
                assert attrs.VERDICT in keys, (trial["number"], keys)
        assert "**Answer:**" in detail["note"]["body"]  # the study's note: answer, verdicts
        [artifact] = detail["artifacts"]
        assert artifact["mimetype"] == "text/html"
        served = httpx.get(f"{base}/artifacts/{study['study_id']}/{artifact['artifact_id']}")
        assert served.status_code == 200
        assert served.text.startswith("<!DOCTYPE html>") and "tuner report: fast" in served.text
    finally:
        server.terminate()
        server.wait(timeout=10)


def _wait_for_json(url: str, server: subprocess.Popen[bytes], timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        assert server.poll() is None, f"tuner dashboard exited with {server.returncode}"
        try:
            response = httpx.get(url, timeout=2)
            if response.status_code == 200:
                return dict(response.json())
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer in {timeout_s:g} s")
        time.sleep(0.2)


def test_report_of_a_study_without_a_completed_trial_exits_3(tmp_path: Path) -> None:
    from tuner.space.spec import load_space
    from tuner.study.run.request import RunRequest
    from tuner.study.run.sweep import run_sweep

    space = write_space(
        tmp_path,
        server={"command": ["{python}", "-c", "import sys; sys.exit(3)", "--port", "{port}"]},
    )
    run_sweep(
        load_space(space),
        RunRequest(
            f"sqlite:///{tmp_path}/experiments.db", 1, preflight=False, runs_dir=tmp_path / "runs"
        ),
    )
    done = _tuner("report", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no completed trial" in done.stderr
    assert not (tmp_path / "report.html").exists()
