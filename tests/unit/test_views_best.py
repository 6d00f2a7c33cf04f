"""`tuner best` on a hand-made study: keep the defaults, or a real gain; and its JSON contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, final_block, hand_study
from tuner.errors import ConfigError, NoAnswerError, StoreError
from tuner.study.facts import analysis
from tuner.views.best import best_report
from tuner.views.best_print import print_best
from tuner.views.deploy import deployment_text
from tuner.views.study_access import open_study

FAST = {"NCCL_PROTO": "LL", "compilation": 3}
GAIN = [
    BASELINE,
    BASELINE_AGAIN,
    (FAST, [88.0, 88.3, 88.1]),
    (FAST, [87.9, 88.2, 88.4]),
    *final_block(FAST, [88.1, 88.2, 88.0]),
]
"""A confirmed 8% gain, and its final comparison on fresh launches."""


def _json(console: Console) -> dict[str, Any]:
    """What a recording console printed, parsed as one JSON object."""
    return dict(json.loads(console.export_text()))


def test_noise_sized_gain_means_keep_the_defaults(tmp_path: Path) -> None:
    # 81.9 vs 81.4: the published NCCL tuning that was noise.
    tuned = {"NCCL_PROTO": "LL"}
    storage = hand_study(
        tmp_path,
        [BASELINE, BASELINE_AGAIN, (tuned, [81.9, 82.0, 81.8]), (tuned, [81.6, 81.8, 81.9])],
    )
    answer = best_report(storage, "hand")
    assert answer.keep_defaults is True
    assert answer.recommended is not None and answer.baseline is not None
    assert answer.recommended.params == {"NCCL_PROTO": "default", "compilation": "default"}
    assert answer.recommended.env == {} and answer.recommended.args == ()
    assert "keep the defaults" in (answer.recommended.reason or "")
    assert answer.baseline.launches == 2
    assert answer.gain_vs_baseline is None
    assert answer.trials.to_json() == {"complete": 4, "failed": 0, "pruned": 0, "running": 0}


def test_a_confirmed_real_gain_is_recommended_with_its_deployment(tmp_path: Path) -> None:
    answer = best_report(hand_study(tmp_path, GAIN), "hand")
    assert answer.keep_defaults is False
    rec = answer.recommended
    assert rec is not None
    assert rec.env == {"NCCL_PROTO": "LL"} and rec.args == ("-O3",)
    assert rec.value == pytest.approx(88.15, abs=0.01)
    assert answer.gain_vs_baseline is not None and answer.gain_vs_baseline.verdict == "better"
    assert deployment_text(rec, "env").splitlines() == [
        f"# tuner: trial {rec.trial} (recommended): an EnvironmentFile= for systemd, "
        "or `set -a; . FILE` in a shell",
        "NCCL_PROTO=LL",
    ]
    assert deployment_text(rec, "systemd").splitlines()[1:] == [
        "[Service]",
        'Environment="NCCL_PROTO=LL"',
        "# the space's server command with the settings appended; {port} is 8000 here "
        "(the sweep chose a free port per launch): check it",
        "ExecStart=",
        "ExecStart=srv --port 8000 -O3",
    ]
    assert deployment_text(rec, "args") == "-O3"
    assert deployment_text(rec, "docker") == "-e NCCL_PROTO=LL"
    assert deployment_text(rec, "vllm-config").splitlines()[-1] == "optimization-level: 3"

    console = Console(record=True, width=200)
    print_best(answer, "json", console)
    assert _json(console)["recommended"]["trial"] == rec.trial

    console = Console(record=True, width=200)
    print_best(answer, "systemd", console)
    assert console.export_text().splitlines()[2] == 'Environment="NCCL_PROTO=LL"'


def test_simplest_equivalent_configuration_is_recommended(tmp_path: Path) -> None:
    two_changes = {"NCCL_PROTO": "LL", "compilation": 3}
    one_change = {"compilation": 3}
    storage = hand_study(
        tmp_path,
        [
            BASELINE,
            BASELINE_AGAIN,
            (two_changes, [88.2, 88.4, 88.3]),
            (two_changes, [88.1, 88.3, 88.2]),
            (one_change, [88.0, 88.1, 88.2]),
            (one_change, [88.1, 87.9, 88.0]),
            *final_block(one_change, [88.0, 88.1, 87.9]),
        ],
    )
    answer = best_report(storage, "hand")
    assert answer.best is not None and answer.best.params["NCCL_PROTO"] == "LL"
    assert answer.recommended is not None
    assert answer.recommended.params == {"NCCL_PROTO": "default", "compilation": 3}


def test_the_json_keeps_its_keys_their_order_and_the_reason_on_recommended_only(
    tmp_path: Path,
) -> None:
    console = Console(record=True, width=200)
    print_best(best_report(hand_study(tmp_path, GAIN), "hand"), "json", console)
    answer = _json(console)
    assert list(answer) == [
        "study",
        "metric",
        "direction",
        "concurrency",
        "confidence",
        "best",
        "recommended",
        "baseline",
        "noise",
        "stop_reason",
        "stop_detail",
        "trials",
        "verdict",  # confirmed, no_gain or not_settled (tests/unit/test_best_verdicts.py)
        "keep_defaults",
        "gain_vs_baseline",
        "hosts",  # "fingerprint" too when launches record one (tests/unit/test_views_hosts.py)
        "objectives",
        "constraints",
        "final",
        "screening",
        "topology",  # the GPUs' as `tuner run` read them (tests/unit/test_views_topology.py)
        "failures",  # by cause, and what they taught (tests/unit/test_best_failures.py)
        "load",  # why a full load takes that long, its lever (tests/unit/test_load_explained.py)
        "deploy",
    ]
    assert answer["objectives"] == [
        {"metric": "output_throughput", "concurrency": 1, "direction": "maximize"}
    ]
    assert answer["constraints"]["limits"] == [] and answer["constraints"]["best"] == []
    entry_keys = ["trial", "trials", "config", "params", "env", "args", "value", "stderr"]
    entry_keys += ["interval", "launches"]
    assert list(answer["best"]) == entry_keys == list(answer["baseline"])
    assert list(answer["recommended"]) == [*entry_keys, "reason"]
    assert answer["recommended"]["args"] == ["-O3"] and answer["best"]["trials"] == [2, 3]
    low, high = answer["recommended"]["interval"]
    assert low < answer["recommended"]["value"] < high
    assert answer["baseline"]["params"] == {"NCCL_PROTO": "default", "compilation": "default"}
    assert list(answer["trials"]) == ["complete", "failed", "pruned", "running"]
    assert list(answer["gain_vs_baseline"]) == ["rel_diff", "ci_low", "ci_high", "verdict"]
    assert {"n_configs", "rel_sd", "text"} <= set(answer["noise"])
    assert answer["noise"]["n_configs"] == 2  # the search's noise: the final launches apart
    final = answer["final"]
    assert final["passed"] is True and final["comparisons"] == 1 and final["trial"] == 2
    assert final["candidate_launches"] == final["baseline_launches"] == 2
    assert final["ci_low"] > final["bar"] == 0.01  # the guarantee: the interval clears min_gain
    # The gain printed is the final comparison's, with its interval, not the search's.
    gain = answer["gain_vs_baseline"]
    assert gain["ci_low"] == pytest.approx(final["ci_low"])
    assert gain["rel_diff"] == pytest.approx(final["gain"])
    assert set(final["drift"]) == {
        "rel_diff", "ci_low", "ci_high", "significant", "undecidable_below", "text"
    }  # fmt: skip


def test_without_a_completed_trial_there_is_no_answer_in_any_format(tmp_path: Path) -> None:
    answer = best_report(hand_study(tmp_path, [({}, None)]), "hand")
    assert answer.best is answer.recommended is answer.baseline is None
    assert answer.trials.failed == 1
    as_json = answer.to_json()
    assert "keep_defaults" not in as_json and "gain_vs_baseline" not in as_json
    sentence = (
        "study 'hand' has no completed trial yet (0 complete, 1 failed, 0 pruned, 0 running); "
        "see why with: tuner trials --study hand"
    )
    for fmt in ("env", "table"):
        console = Console(record=True, width=200)
        with pytest.raises(NoAnswerError) as caught:
            print_best(answer, fmt, console)
        assert str(caught.value) == sentence
        assert console.export_text() == ""
    console = Console(record=True, width=200)
    with pytest.raises(NoAnswerError):
        print_best(answer, "json", console)
    assert _json(console)["best"] is None  # the document first: its nulls are the contract


def test_trials_that_completed_without_the_defaults_are_no_answer_either(tmp_path: Path) -> None:
    answer = best_report(hand_study(tmp_path, [({}, None), (FAST, [88.0, 88.3, 88.1])]), "hand")
    assert answer.best is None and answer.trials.complete == 1
    with pytest.raises(NoAnswerError, match="the defaults \\(the baseline\\) have no completed"):
        print_best(answer, "table", Console())


def test_the_table_names_each_entry_and_the_recommendation(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    print_best(best_report(hand_study(tmp_path, GAIN), "hand"), "table", console)
    text = console.export_text()
    assert "hand: output_throughput at concurrency 1 (maximize)" in text
    assert "95% interval" in text
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    assert "NCCL_PROTO=LL compilation=3" in rows["best, recommended"]  # one row: same trial
    assert "(defaults)" in rows["baseline"]
    assert "Deploy with:  tuner best --format env | systemd | args | docker | vllm-config" in text
    # The answer's interval is the final comparison's, and the noise it used is said.
    text = " ".join(text.split())  # long sentences wrap at the console's width
    assert "on 2 fresh launches of it and 2 of the defaults, interleaved" in text
    assert "the interval clears the 1.0% minimum gain" in text
    assert "in the search; ±" in text and "in the final comparison" in text
    assert "Drift: the defaults moved" in text and "within the noise" in text


def test_unknown_study_and_format_errors_are_clear(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    with pytest.raises(StoreError, match="no study named 'other'"):
        best_report(storage, "other")
    with pytest.raises(ConfigError, match="--format 'xml'"):
        print_best(best_report(storage, "hand"), "xml", Console())


def test_keep_the_defaults_says_what_it_could_have_missed(tmp_path: Path) -> None:
    tuned = {"NCCL_PROTO": "LL"}
    other = {"compilation": 3}
    storage = hand_study(
        tmp_path,
        [
            BASELINE,
            BASELINE_AGAIN,
            # slower than the defaults, every interval below the 1% minimum gain: no gain
            # (one that still reached it would be not settled: study/facts/final.py)
            (tuned, [79.3, 79.2, 79.1]),
            (tuned, [79.0, 79.2, 79.3]),
            (other, [79.0, 79.2, 79.1]),
        ],
    )
    answer = best_report(storage, "hand")
    assert answer.keep_defaults is True and answer.baseline is not None
    missed = answer.could_have_missed
    assert missed is not None and missed.gain_upper is not None
    # The bound is the upper end of the largest interval of a gain over the defaults.
    result = analysis.analyze(open_study(storage, "hand").store, open_study(storage, "hand").space)
    base = result.baseline
    assert base is not None
    uppers = {
        c.trials[0]: result.compare(c, base).ci_high
        for c in result.configs.values()
        if c is not base
    }
    assert missed.trial == max(uppers, key=uppers.__getitem__)
    assert missed.gain_upper == pytest.approx(max(uppers.values()))
    assert missed.configurations == 2
    assert missed.text.startswith(
        "keep the defaults: no configuration tried beats them by more than "
        f"{max(0.0, missed.gain_upper):.1%}"  # an upper end below 0 reads 0.0%
    )
    console = Console(record=True, width=1000)  # the answer's sentence on one line
    print_best(answer, "table", console)
    text = console.export_text()
    assert missed.clause in text and text.count("keep the defaults") == 1  # one sentence
    console = Console(record=True, width=300)
    print_best(answer, "json", console)
    out = _json(console)
    assert out["could_have_missed"]["gain_upper"] == pytest.approx(missed.gain_upper)
    assert out["keep_defaults"] is True and "noise" in out  # the old keys stay


def test_a_recommended_gain_has_no_could_have_missed(tmp_path: Path) -> None:
    answer = best_report(hand_study(tmp_path, GAIN), "hand")
    assert answer.keep_defaults is False and answer.could_have_missed is None
    assert "could_have_missed" not in answer.to_json()
