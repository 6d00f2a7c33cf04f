"""Limits on a study (objective.subject_to): the space file, the statuses, the answer."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from rich.console import Console

from tuner.errors import ConfigError, NoAnswerError
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage.store import Store
from tuner.study.attrs import PARAMS as PARAMS_ATTR
from tuner.study.facts import analysis
from tuner.study.facts.feasibility import optuna_values
from tuner.study.facts.metrics import metric_estimate, summary_metric
from tuner.study.policy.confirmations import needs_confirmation
from tuner.views.best import best_report
from tuner.views.best_print import print_best

LIMIT = "ttft_ms.p99@64 <= 100"
SPACE: dict[str, Any] = {
    "study": "slo",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "batched": {"args": ["--max-num-batched-tokens", "{value}"], "choices": ["default", 16384]},
        "seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 256]},
    },
    "benchmark": {"concurrency": [1, 64]},
    "objective": {"metric": "output_throughput", "concurrency": 64, "subject_to": [LIMIT]},
    "stop": {"min_gain": 0.01, "confidence": 0.95, "confirmations": 1},
}

# (changed params, per launch: per round (throughput at 64, TTFT p99 at 64 in ms)), and
# the role when it is a final comparison's launch ("final")
Launches = Sequence[
    tuple[Mapping[str, Any], Sequence[tuple[float, float]]]
    | tuple[Mapping[str, Any], Sequence[tuple[float, float]], str]
]
BASE = [(5000.0, 60.0), (5010.0, 62.0), (4990.0, 61.0)]
BASE2 = [(5005.0, 61.0), (4995.0, 60.0), (5000.0, 62.0)]
FAST_BUT_SLOW_TO_START = [(5600.0, 160.0), (5610.0, 158.0), (5590.0, 162.0)]
FAST_BUT_SLOW_AGAIN = [(5605.0, 161.0), (5595.0, 159.0), (5600.0, 160.0)]
SMALL_GAIN = [(5200.0, 63.0), (5210.0, 62.0), (5190.0, 64.0)]
SMALL_GAIN_AGAIN = [(5205.0, 62.0), (5195.0, 63.0), (5200.0, 61.0)]


def _space_file(tmp_path: Path, **objective: Any) -> Path:
    raw = {**SPACE, "objective": {**SPACE["objective"], **objective}}
    path = tmp_path / "slo.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _level(concurrency: int, throughput: float, ttft_p99: float) -> dict[str, Any]:
    dist = {"mean": ttft_p99 / 2, "p50": ttft_p99 / 2, "p90": ttft_p99 * 0.9, "p99": ttft_p99}
    return {
        "concurrency": concurrency,
        "completed": 64,
        "errors": 0,
        "error_rate": 0.0,
        "output_throughput": throughput,
        "ttft_ms": dist,
    }


def _study(tmp_path: Path, launches: Launches, **objective: Any) -> tuple[str, Store]:
    path = _space_file(tmp_path, **objective)
    space = load_space(path)
    storage = f"sqlite:///{tmp_path}/e.db"
    store = Store(storage)
    store.ensure_study("slo", space_path=str(path), space_text=path.read_text())
    study = optuna.create_study(storage=storage, study_name="slo", direction="maximize")
    for entry in launches:
        params, rounds = entry[0], entry[1]
        settings = settings_from_params(space.spec, params)
        trial = study.ask()
        trial.set_user_attr(PARAMS_ATTR, dict(settings.params))
        launch_id = store.add_launch(
            study="slo",
            trial_number=trial.number,
            role=entry[2] if len(entry) > 2 else "search",
            config_hash=settings.config_hash,
            params=dict(settings.params),
            env=settings.env,
            argv=["srv"],
        )
        for i, (throughput, ttft) in enumerate(rounds):
            store.add_level(launch_id, round_index=i, summary=_level(1, 100.0, 5.0), requests=[])
            store.add_level(
                launch_id, round_index=i, summary=_level(64, throughput, ttft), requests=[]
            )
        values = [r[0] for r in rounds]
        store.update_launch(
            launch_id,
            status="complete",
            objective_rounds=values,
            objective_mean=sum(values) / len(values),
        )
        study.tell(trial, sum(values) / len(values))
    return storage, store


BATCHED = {"batched": 16384}
SEQS = {"seqs": 256}
STUDY: Launches = [
    ({}, BASE),
    ({}, BASE2),
    (BATCHED, FAST_BUT_SLOW_TO_START),
    (BATCHED, FAST_BUT_SLOW_AGAIN),
    (SEQS, SMALL_GAIN),
    (SEQS, SMALL_GAIN_AGAIN),
]


def _final(changed: Mapping[str, Any], rounds: Sequence[tuple[float, float]]) -> Launches:
    """The final comparison of ``changed`` (C B B C): fresh launches at these rounds."""
    return [(changed, rounds, "final"), ({}, BASE2, "final"), ({}, BASE, "final")] + [
        (changed, rounds, "final")
    ]


def _analysis(tmp_path: Path, launches: Launches, **objective: Any) -> analysis.StudyAnalysis:
    storage, store = _study(tmp_path, launches, **objective)
    return analysis.analyze(store, load_space(tmp_path / "slo.yaml"))


def _config(result: analysis.StudyAnalysis, changed: Mapping[str, Any]) -> analysis.ConfigResult:
    return next(c for c in result.configs.values() if c.changed == dict(changed))


# --- the space file ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "says"),
    [
        ("ttft_ms.p99@32 <= 100", "names concurrency 32 but benchmark.concurrency runs [1, 64]"),
        ("latency@64 <= 100", "unknown metric 'latency'"),
        ("ttft_ms.p99 <= 100", "name the level"),
        ("ttft_ms.p99@64 == 100", "use <= or >="),
    ],
)
def test_a_bad_limit_names_the_file_the_key_and_the_fix(
    tmp_path: Path, limit: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_space(_space_file(tmp_path, subject_to=[limit]))
    text = str(caught.value)
    assert "slo.yaml" in text and "subject_to" in text and says in text


def test_limits_at_a_level_and_at_every_level_load(tmp_path: Path) -> None:
    limits = ["ttft_ms.p99@64 <= 2000", "error_rate@* <= 0.01"]
    space = load_space(_space_file(tmp_path, subject_to=limits))
    assert space.spec.objective.subject_to == limits


# --- statuses ---------------------------------------------------------------------------


def test_statuses_feasible_infeasible_and_uncertain(tmp_path: Path) -> None:
    close = [(5300.0, 97.0), (5310.0, 103.0), (5290.0, 99.0)]  # mean 99.7: at the limit
    result = _analysis(tmp_path, [*STUDY, ({"batched": 16384, "seqs": 256}, close)])
    statuses = {
        json.dumps(c.changed, sort_keys=True): result.limit_checks[c.config_hash]
        for c in result.configs.values()
    }
    assert statuses["{}"].status == "feasible"
    assert statuses[json.dumps(SEQS)].status == "feasible"
    slow = statuses[json.dumps(BATCHED)]
    assert slow.status == "infeasible"
    (check,) = slow.broken
    assert check.mean == pytest.approx(160.0)
    assert check.excess == pytest.approx(0.6)
    assert check.bounds is not None and check.bounds[0] > 100  # even the lower bound
    both = statuses[json.dumps({"batched": 16384, "seqs": 256}, sort_keys=True)]
    assert both.status == "uncertain"
    assert both.checks[0].bounds is not None
    low, high = both.checks[0].bounds
    assert low < 100 < high
    # Uncertain, and faster than the best: launched again before it may be recommended.
    uncertain = _config(result, {"batched": 16384, "seqs": 256})
    assert result.best is _config(result, SEQS)
    assert uncertain in needs_confirmation(result, None)
    rec = result.recommendation()
    assert rec is not None and uncertain.config_hash not in (rec.best, rec.recommended)


def test_an_every_level_limit_takes_the_worst_level(tmp_path: Path) -> None:
    result = _analysis(tmp_path, STUDY, subject_to=["ttft_ms.p99@* <= 100"])
    base = result.baseline
    assert base is not None
    # Level 1 has a TTFT p99 of 5 ms, level 64 about 61 ms: the limit reads 61.
    assert result.limit_checks[base.config_hash].checks[0].mean == pytest.approx(61.0)


def test_a_level_without_a_successful_request_breaks_the_limit() -> None:
    nan_level = {"ttft_ms": {"p99": None}, "output_throughput": 0.0}
    assert math.isnan(summary_metric(nan_level, "ttft_ms_p99"))
    assert summary_metric({"error_rate": 0.5}, "error_rate") == 0.5


# --- the answer -------------------------------------------------------------------------


def test_the_configuration_that_breaks_the_limit_is_never_best_nor_recommended(
    tmp_path: Path,
) -> None:
    result = _analysis(tmp_path, [*STUDY, *_final(SEQS, SMALL_GAIN_AGAIN)])
    rec = result.recommendation()
    assert rec is not None
    small = _config(result, SEQS)
    assert result.best is small
    assert rec.best == rec.recommended == small.config_hash
    # The infeasible one beats it on the objective, yet is not even worth confirming.
    assert small not in needs_confirmation(result, None) and all(
        c.changed != BATCHED for c in needs_confirmation(result, None)
    )


def test_without_the_limit_the_fast_configuration_is_recommended(tmp_path: Path) -> None:
    result = _analysis(tmp_path, [*STUDY, *_final(BATCHED, FAST_BUT_SLOW_AGAIN)], subject_to=[])
    rec = result.recommendation()
    assert rec is not None and rec.recommended == _config(result, BATCHED).config_hash


def test_defaults_that_break_the_limit_are_said_plainly(tmp_path: Path) -> None:
    both = {"batched": 16384, "seqs": 256}
    quick = [(5100.0, 45.0), (5110.0, 44.0), (5090.0, 46.0)]
    quick_again = [(5105.0, 45.0), (5095.0, 46.0), (5100.0, 44.0)]
    launches = [*STUDY, (both, quick), (both, quick_again)]
    result = _analysis(tmp_path, launches, subject_to=["ttft_ms.p99@64 <= 55"])
    rec = result.recommendation()
    assert rec is not None and rec.recommended == _config(result, both).config_hash
    assert rec.reason.startswith(
        "the defaults break ttft_ms.p99@64 <= 55: 61 (+10.9% over), infeasible; so "
    )


def test_no_configuration_meeting_the_limits_is_no_answer(tmp_path: Path) -> None:
    storage, store = _study(tmp_path, STUDY, subject_to=["ttft_ms.p99@64 <= 40"])
    result = analysis.analyze(store, load_space(tmp_path / "slo.yaml"))
    assert result.recommendation() is None and result.best is None
    console = Console(record=True, width=200)
    with pytest.raises(NoAnswerError, match="no configuration tried meets the limits"):
        print_best(best_report(storage, "slo"), "table", console)


def test_tuner_best_json_carries_each_candidates_limits_and_what_they_left_out(
    tmp_path: Path,
) -> None:
    storage, _ = _study(tmp_path, [*STUDY, *_final(SEQS, SMALL_GAIN_AGAIN)])
    console = Console(record=True, width=200)
    print_best(best_report(storage, "slo"), "json", console)
    answer = json.loads(console.export_text())
    assert answer["objectives"] == [
        {"metric": "output_throughput", "concurrency": 64, "direction": "maximize"}
    ]
    limits = answer["constraints"]
    assert limits["limits"] == [LIMIT]
    (check,) = limits["recommended"]
    assert list(check) == [
        "limit",
        "metric",
        "level",
        "value",
        "interval",
        "verdict",
        "excess",
        "launches",
    ]
    assert check["verdict"] == "feasible" and check["excess"] == 0.0
    assert check["limit"] == LIMIT and check["level"] == 64
    (left_out,) = limits["left_out"]
    assert left_out["changed"] == BATCHED and left_out["verdict"] == "infeasible"
    assert left_out["constraints"][0]["excess"] == pytest.approx(0.6)
    assert answer["recommended"]["params"]["seqs"] == 256


def test_tuner_best_table_says_which_limit_a_configuration_broke(tmp_path: Path) -> None:
    storage, _ = _study(tmp_path, STUDY)
    console = Console(record=True, width=200)
    print_best(best_report(storage, "slo"), "table", console)
    text = console.export_text()
    assert f"Limits: {LIMIT}." in text
    assert "left out: trial 2 [batched=16384]: ttft_ms.p99@64 <= 100: 160 (+60.0% over)" in text


def test_optuna_reads_each_launchs_value_minus_the_limit(tmp_path: Path) -> None:
    storage, store = _study(tmp_path, STUDY)
    space = load_space(tmp_path / "slo.yaml")
    launches = store.launches("slo")
    assert optuna_values(store, space, launches[0].id) == [pytest.approx(61.0 - 100)]
    assert optuna_values(store, space, launches[2].id) == [pytest.approx(160.0 - 100)]


def test_metric_estimate_reads_one_level_or_the_worst_of_every_level() -> None:
    rounds = [
        {1: {"ttft_ms": {"p99": 10.0}}, 4: {"ttft_ms": {"p99": 30.0}}},
        {1: {"ttft_ms": {"p99": 12.0}}, 4: {"ttft_ms": {"p99": 34.0}}},
    ]
    one = metric_estimate(rounds, "ttft_ms_p99", 1)
    assert one is not None and one.mean == pytest.approx(11.0)
    worst = metric_estimate(rounds, "ttft_ms_p99", "*")
    assert worst is not None and worst.mean == pytest.approx(32.0)
    best = metric_estimate(rounds, "ttft_ms_p99", "*", worst=min)
    assert best is not None and best.mean == pytest.approx(11.0)
    # A round without the level, or without the metric, is no value at all.
    assert metric_estimate([*rounds, {1: {"ttft_ms": {"p99": 9.0}}}], "ttft_ms_p99", 4) is None
    assert metric_estimate(rounds, "tpot_ms_p99", 1) is None
