"""`tuner report`'s data and page on hand-made studies: verdict, history, effects, curves,
telemetry, timings, failures, the Pareto front only with several objectives, escaping."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import optuna
import pytest

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, final_block, hand_study
from tuner.errors import NoAnswerError
from tuner.launcher.load_phases import LoadPhases
from tuner.probe.ceiling import CeilingInputs, ceiling
from tuner.report import svg
from tuner.report.data import Failure, build_report, pareto
from tuner.report.html import render
from tuner.storage import Store

FAST = {"NCCL_PROTO": "LL", "compilation": 3}
GAIN = [
    BASELINE,
    BASELINE_AGAIN,
    (FAST, [88.0, 88.3, 88.1]),
    (FAST, [87.9, 88.2, 88.4]),
    *final_block(FAST, [88.1, 88.2, 88.0]),
]
NOISE = [BASELINE, BASELINE_AGAIN, ({"NCCL_PROTO": "LL"}, [81.9, 82.0, 81.8])]


def _level(concurrency: int, tok_s: float, ttft: float, wall_s: float) -> dict[str, object]:
    return {
        "concurrency": concurrency,
        "completed": 4,
        "errors": 0,
        "duration_s": 2.0,
        "output_throughput": tok_s,
        "ttft_ms": {"p50": ttft, "p99": ttft * 2},
        "tpot_ms": {"p50": 10.0, "p99": None},  # a NaN percentile is stored as null
        "wall_s": wall_s,
    }


def _add_measurements(storage: str) -> Store:
    """Levels, timings and host samples for every launch of the hand study."""
    store = Store(storage)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for row in store.launches("hand"):
        for round_index, tok_s in enumerate((100.0, 110.0)):
            store.add_level(
                row.id, round_index=round_index, summary=_level(1, tok_s, 40, 2.5), requests=[]
            )
            store.add_level(
                row.id, round_index=round_index, summary=_level(8, 4 * tok_s, 80, 2.0), requests=[]
            )
        store.update_launch(
            row.id,
            started_at=start,
            finished_at=start + dt.timedelta(seconds=40),
            seconds_to_healthy=20.0,
            cleanup={"seconds": 1.5},
        )
        store.add_samples(
            row.id,
            [
                {"kind": "host", "time_s": 1000.0 + t, "data": {"tree_cpu_pct": 50.0 + t}}
                for t in range(5)
            ],
        )
    return store


def test_a_real_gain_reads_deploy_with_its_interval(tmp_path: Path) -> None:
    data = build_report(hand_study(tmp_path, GAIN), "hand")
    assert data.verdict.startswith("Deploy the settings of trial 2: +8.")
    against = "output_throughput at concurrency 1 against the defaults (99.75% interval +"
    assert against in data.verdict
    assert "at look 1 (its share of the error rate)" in data.verdict
    assert [p.trial for p in data.history] == list(range(8))  # the final launches too
    assert data.band is not None and data.band.low < 81.3 < data.band.high
    # Both changed values were only ever launched together: the model cannot split the gain,
    # but each may carry it, and nothing it has not seen is listed.
    assert {(e.param, e.value) for e in data.effects} == {
        ("NCCL_PROTO", "LL"),
        ("compilation", "3"),
    }
    assert max(e.high for e in data.effects) > 0.05
    assert all(e.low <= e.median <= e.high for e in data.effects)
    assert data.pareto is None  # one objective


def test_noise_sized_gain_reads_not_settled_with_the_defaults_deployed(tmp_path: Path) -> None:
    # One launch +0.8%: it cannot rule out the 1% minimum gain, and it was never compared
    # on fresh launches: not settled, the defaults deployed meanwhile (never "keep the
    # defaults", which would claim no gain is there).
    data = build_report(hand_study(tmp_path, NOISE), "hand")
    assert data.verdict.startswith("Not settled: deploy the defaults until it is")
    assert "Keep the defaults" not in data.verdict
    assert data.answer.keep_defaults


def test_curves_average_every_launch_and_timings_add_up(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, GAIN)
    _add_measurements(storage)
    data = build_report(storage, "hand")
    labels = [c.label for c in data.curves]
    assert labels == ["baseline", "best = recommended"]
    [low, high] = data.curves[0].points
    assert (low.concurrency, high.concurrency) == (1, 8)
    assert low.throughput == pytest.approx(105.0) and high.throughput == pytest.approx(420.0)
    assert low.ttft_p99 == pytest.approx(80.0) and low.tpot_p99 is None
    assert len(data.timings) == 8
    t = data.timings[0]
    assert (t.load_s, t.benchmark_s, t.stop_s) == (20.0, 8.0, 1.5)
    assert t.warmup_s == pytest.approx(1.0)  # 0.5 s before each of the two c=1 levels
    assert t.other_s == pytest.approx(40 - 20 - 1 - 8 - 1.5)  # the rest of the wall time
    assert data.telemetry_kind == "host"  # no GPU sample: the host's figures
    [cpu] = data.telemetry
    assert cpu.title.startswith("Server CPU")
    assert [s.label for s in cpu.series] == ["baseline", "best = recommended"]
    assert cpu.series[0].points[0] == (0.0, 50.0)


def test_gpu_samples_make_gpu_charts_averaged_over_gpus(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, GAIN)
    store = Store(storage)
    first = store.launches("hand")[0]
    store.add_samples(
        first.id,
        [
            {"kind": "gpu", "time_s": 5.0, "gpu_index": i, "data": {"power_w": p, "util_pct": 90}}
            for i, p in enumerate((300.0, 340.0))
        ],
    )
    data = build_report(storage, "hand")
    assert data.telemetry_kind == "gpu"
    titles = [c.title for c in data.telemetry]
    assert titles == ["GPU power", "GPU utilisation"]  # no clock sampled: no clock chart
    assert data.telemetry[0].series[0].points == ((0.0, 320.0),)


def test_failures_are_listed_with_their_reasons(tmp_path: Path) -> None:
    data = build_report(hand_study(tmp_path, [*GAIN, (FAST, None)]), "hand")
    [failure] = data.failures
    assert (failure.trial, failure.state, failure.launched) == (8, "fail", False)
    assert failure.reason == "refused before launch"


def test_no_completed_trial_is_no_answer(tmp_path: Path) -> None:
    with pytest.raises(NoAnswerError, match="no completed trial"):
        build_report(hand_study(tmp_path, [(FAST, None)]), "hand")


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_the_pareto_front_only_for_several_objectives() -> None:
    single = optuna.create_study()
    single.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    assert pareto(single) is None
    several = optuna.create_study(directions=["maximize", "minimize"])
    for tok_s, ttft in ((100.0, 50.0), (120.0, 60.0), (90.0, 70.0)):  # the last is dominated
        trial = several.ask()
        several.tell(trial, [tok_s, ttft])
    several.set_metric_names(["output_throughput", "ttft_ms_p99"])
    front = pareto(several)
    assert front is not None
    assert front.names == ("output_throughput", "ttft_ms_p99")
    assert front.directions == ("maximize", "minimize")
    assert [(p.trial, p.on_front) for p in front.points] == [(0, True), (1, True), (2, False)]


def test_the_page_escapes_text_and_draws_pareto_only_when_given(tmp_path: Path) -> None:
    data = build_report(hand_study(tmp_path, GAIN), "hand")
    hostile = Failure(5, "fail", "search", True, "x=1", '<script>alert("x")</script>')
    page = render(dataclasses.replace(data, failures=(hostile,)))
    assert "<script" not in page and "&lt;script&gt;alert(&quot;x&quot;)" in page
    assert 'id="pareto"' not in page
    several = optuna.create_study(directions=["maximize", "minimize"])
    several.tell(several.ask(), [1.0, 2.0])
    with_front = render(dataclasses.replace(data, pareto=pareto(several)))
    assert '<section id="pareto">' in with_front and 'data-chart="pareto"' in with_front
    assert 'data-chart="history"' in page and 'data-chart="effects"' in page
    # Without stored levels, timings or samples a section says so instead of an empty chart.
    assert 'data-chart="throughput"' not in page
    assert "No level of the baseline, best or recommended configuration was stored." in page


def test_tick_labels_that_would_overlap_are_dropped() -> None:
    labels = [(float(x), "1000.0") for x in range(0, 200, 10)]  # 10 px apart, ~37 px wide
    kept = svg.thin_labels(labels)
    assert 3 < len(kept) < len(labels)
    for (a, la), (b, _) in zip(kept, kept[1:], strict=False):
        assert b - a >= svg.text_width(la)  # centre to centre: at least one label's width


def test_ticks_are_round_numbers_inside_the_range() -> None:
    values, step = svg.ticks(0.3, 9.7)
    assert step == 2 and values == [2, 4, 6, 8]
    assert svg.number(12345.0) == "12.3k" and svg.number(0.25, 0.05) == "0.25"


def test_confirmations_and_pruned_launches_are_marked_in_the_history() -> None:
    from tuner.report.charts import history_chart
    from tuner.report.data import HistoryPoint, NoiseBand

    points = [
        HistoryPoint(0, "baseline", "complete", 100.0, 0.5, "defaults"),
        HistoryPoint(1, "search", "complete", 108.0, 0.4, "NCCL_PROTO=LL"),
        HistoryPoint(2, "confirm", "complete", 107.5, 0.4, "NCCL_PROTO=LL"),
        HistoryPoint(3, "search", "pruned", 80.0, None, "compilation=0"),
    ]
    page = history_chart(points, NoiseBand(100.0, 98.0, 102.0, 0.01), "output_throughput", "max")
    assert "confirmation (a launch again)" in page and "pruned (fewer rounds)" in page
    chart = page[page.index('<svg class="chart"') : page.index("</svg>")]
    assert chart.count('class="mark"') == 4 and 'fill="white"' in chart  # the pruned one hollow
    assert "±1.0% per launch" in page


def test_axes_end_on_a_labelled_tick() -> None:
    assert svg.nice_range((0.0, 99.75)) == (0.0, 100.0)
    lo, hi = svg.nice_range((57.3, 83.1))
    assert (lo, hi) == (50.0, 90.0)  # steps of 10 for a span of about 26
    assert svg.ticks(lo, hi)[0][-1] == hi  # the top of the axis has its label


def test_what_a_launch_costs_per_fidelity_when_phases_were_stored(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, GAIN)
    data = build_report(storage, "hand")
    assert 'id="load-costs"' not in render(data)  # no phases stored: no section
    store = Store(storage)
    for i, row in enumerate(store.launches("hand")):
        screen = i % 2 == 1
        phases = LoadPhases(
            weights_s=1.0 if screen else 2000.0,
            compile_s=50.0,
            cuda_graphs_s=20.0,
            healthy_s=100.0 if screen else 2100.0,
        )
        store.update_launch(
            row.id,
            fidelity="screen" if screen else "full",
            seconds_to_healthy=phases.healthy_s,
            load_phases=phases.to_json(),
        )
    data = build_report(storage, "hand")
    assert data.load_costs.full is not None and data.load_costs.full.launches == 4
    page = render(data)
    section = page[page.index('<section id="load-costs">') :]
    section = section[: section.index("</section>")]
    assert "What a launch costs" in section
    assert (
        "Full load 35.0 min (weights 33.3, torch.compile 0.8, CUDA graphs 0.3, the rest 0.5); "
        "screening 1.7 min: screening saves 95% of a load." in section
    )
    rows = section.split("<tr>")[2:]
    assert [r.split("</td>")[0].removeprefix("<td>") for r in rows] == ["full", "screening"]
    assert "<td class=num>2000.0</td>" in rows[0] and "<td class=num>1.0</td>" in rows[1]


def test_the_ceiling_is_a_paragraph_of_the_answer_only_with_the_probe(tmp_path: Path) -> None:
    data = build_report(hand_study(tmp_path, GAIN), "hand")
    assert 'id="ceiling"' not in render(data)  # no probe: no ceiling
    c = ceiling(
        CeilingInputs(
            weight_bytes_per_gpu=6e9,
            memory_bandwidth_gbps=1500.0,
            allreduces_per_token=100,
            best_us=60.0,
            own_us=62.0,
            measured_tokens_per_s=80.0,
            other_settings=False,
        )
    )
    page = render(dataclasses.replace(data, answer=dataclasses.replace(data.answer, ceiling=c)))
    assert '<p id="ceiling">Ceiling: Measured 80 tok/s is 80.0% of the bound 100 tok/s' in page
    assert "no launch setting of this study can give more than 1.6%" in page


def test_the_answer_carries_the_probe_s_finding_and_the_drift_as_best_does(
    tmp_path: Path,
) -> None:
    from tuner.views.best_print import probe_lines
    from tuner.views.probe_summary import ProbeSummary

    data = build_report(hand_study(tmp_path, GAIN), "hand")
    assert data.answer.final is not None and data.answer.final.lines()
    page = render(data)
    drift = data.answer.final.lines()[0]
    assert drift.startswith("Drift: ")
    assert f'<p id="drift">{svg.esc(drift)}</p>' in page
    assert 'id="probe"' not in page  # no probe in the space: nothing said of it
    probe = ProbeSummary(
        size=14336,
        allreduces_per_token=122,
        default_us=67.4,
        best_us=67.1,
        best_env={"NCCL_PROTO": "LL"},
        floor_tokens_per_s=122.2,
        measured_tokens_per_s=81.2,
        comm_share=0.67,
        finding="NCCL settings cannot help at these sizes: no setting's probe beats the default's",
        frozen=("NCCL_PROTO",),
        probed=20,
        pruned=0,
    )
    page = render(dataclasses.replace(data, answer=dataclasses.replace(data.answer, probe=probe)))
    for line in probe_lines(probe, 1):  # the lines `tuner best` prints, each of them
        assert svg.esc(line) in page
    assert "Probe finding: NCCL settings cannot help at these sizes" in page


def test_the_effects_write_values_as_the_space_file_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A boolean choice is True in the space file, `tuner best` and the page, never 1."""
    from tests.unit import views_helpers

    car = {"args": ["--disable-custom-all-reduce"], "choices": ["default", True]}
    monkeypatch.setitem(views_helpers.SPACE, "params", {"car": car})
    storage = hand_study(tmp_path, [BASELINE, BASELINE_AGAIN, ({"car": True}, [82.0] * 3)])
    data = build_report(storage, "hand")
    assert [(e.param, e.value) for e in data.effects] == [("car", "True")]
    assert "<td>car</td><td>True</td>" in render(data)
