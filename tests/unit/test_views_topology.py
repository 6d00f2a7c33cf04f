"""The stored topology and the settings skipped on it: read back by best, trials and the report;
the gate's refusal and the search's frozen params for them."""

from __future__ import annotations

import io
from pathlib import Path

import optuna
from rich.console import Console

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, final_block, hand_study
from tuner.report.data import build_report
from tuner.report.html import render
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.study import attrs, gate
from tuner.study.state import StudyState
from tuner.telemetry.topology import PairLink, Topology, TopologyRead
from tuner.views.best import best_report
from tuner.views.best_print import print_best
from tuner.views.best_topology import topology_answer
from tuner.views.trials import print_trials

PCIE_4 = Topology(4, tuple(PairLink(a, b, smi="SYS") for a in range(4) for b in range(a + 1, 4)))
IGNORED = {
    "car": {"reason": "TP=4 on GPUs 0-3 with no NVLink <between> 0 and 1", "values": ["True"]}
}
FAST = {"NCCL_PROTO": "LL", "compilation": 3}


def stored(tmp_path: Path) -> str:
    storage = hand_study(
        tmp_path,
        [BASELINE, BASELINE_AGAIN, (FAST, [88.0, 88.3]), *final_block(FAST, [88.1, 88.2, 88.0])],
    )
    study = optuna.load_study(study_name="hand", storage=storage)
    study.set_user_attr(attrs.TOPOLOGY, TopologyRead(PCIE_4).to_json())
    study.set_user_attr(attrs.IGNORED, IGNORED)
    return storage


def test_the_answer_reads_what_the_run_stored() -> None:
    answer = topology_answer(
        {attrs.TOPOLOGY: TopologyRead(PCIE_4).to_json(), attrs.IGNORED: IGNORED}
    )
    assert answer is not None
    assert answer.lines() == [
        "Topology: 4 GPUs, PCIe only (SYS between pairs), no NVLink (read from nvml)",
        "car=True skipped, never launched: vLLM ignores it here "
        "(TP=4 on GPUs 0-3 with no NVLink <between> 0 and 1)",
    ]
    unknown = topology_answer({attrs.TOPOLOGY: {"unavailable": "no NVIDIA GPU"}})
    assert unknown is not None and unknown.lines() == ["Topology: topology unknown: no NVIDIA GPU"]
    assert unknown.to_json()["unavailable"] == "no NVIDIA GPU" and unknown.to_json()["pairs"] == []
    assert topology_answer({}) is None  # a study run before the topology was stored


def test_best_report_and_trials_show_it(tmp_path: Path) -> None:
    storage = stored(tmp_path)
    report = best_report(storage, "hand")
    as_json = report.to_json()["topology"]
    assert as_json["gpus"] == 4 and len(as_json["pairs"]) == 6
    assert as_json["skipped"] == [
        {"param": "car", "values": ["True"], "reason": IGNORED["car"]["reason"]}
    ]
    out = io.StringIO()
    print_best(report, "table", Console(file=out, width=200))
    assert "Topology: 4 GPUs, PCIe only (SYS between pairs), no NVLink" in out.getvalue()
    out = io.StringIO()
    print_trials(storage, "hand", Console(file=out, width=200))
    assert "car=True skipped, never launched: vLLM ignores it here (TP=4" in out.getvalue()
    assert "<between>" in out.getvalue()  # printed as text, not taken for markup


def test_the_report_has_a_topology_paragraph_escaped(tmp_path: Path) -> None:
    page = render(build_report(stored(tmp_path), "hand"))
    start = page.index('<p id="topology">')
    paragraph = page[start : page.index("</p>", start)]
    assert "4 GPUs, PCIe only (SYS between pairs), no NVLink" in paragraph
    assert "&lt;between&gt;" in paragraph and "<between>" not in paragraph


def test_the_gate_refuses_an_ignored_setting_and_the_search_freezes_it(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "server:\n  command: [vllm, serve, m, -tp, '4', --port, '{port}']\nparams:\n"
        "  car: {args: [--disable-custom-all-reduce], choices: [default, true]}\n"
        "  seqs: {args: [--max-num-seqs, '{value}'], choices: [default, 8]}\n"
    )
    space = load_space(path)

    def refused(
        params: dict[str, object], role: str = attrs.SEARCH, topo: Topology | None = PCIE_4
    ) -> str | None:
        settings = settings_from_params(space.spec, params)  # type: ignore[arg-type]
        candidate = gate.Candidate(settings, role, None, retry=role != attrs.SEARCH, previous=None)
        return gate.refusal(space, candidate, model_config=None, topology=topo)

    reason = refused({"car": True, "seqs": "default"}, role=attrs.CONFIRM)  # any role
    assert reason is not None
    assert reason.startswith("car=True: vLLM ignores --disable-custom-all-reduce here (TP=4 on")
    assert reason.endswith("the defaults' launch again; skipped, not launched")
    assert refused({"car": "default", "seqs": 8}) is None
    assert refused({"car": True, "seqs": "default"}, topo=None) is None  # unknown: searched
    state = StudyState.from_attrs({attrs.IGNORED: IGNORED})
    assert state.ignored == frozenset({"car"})
