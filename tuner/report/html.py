"""The report page: one self-contained HTML file, its charts inline SVG, its style inline CSS.

No script, no font, no image or stylesheet from anywhere: the file opens offline and
makes no request (tests/integration/test_report_browser.py loads it in chromium with
every connection refused). Sections without data say so instead of drawing an empty
chart; the Pareto front appears only for a study with several objectives.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.launcher.failure_cause import words
from tuner.report import charts
from tuner.report.data import ConfigCurve, Effect, Failure, LaunchTiming, ReportData
from tuner.report.load_section import load_section
from tuner.report.svg import esc
from tuner.views.best import ConfigEntry
from tuner.views.best_pareto import ParetoView
from tuner.views.best_print import probe_lines
from tuner.views.compare_studies import LevelBest, StudiesComparison
from tuner.views.deploy import deployment_text

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
 margin:0 auto;max-width:1120px;padding:16px 24px 48px;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6em;margin:0.2em 0}h2{font-size:1.25em;margin:1.6em 0 0.4em;
 border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555;font-size:0.92em}
.verdict{font-size:1.12em;background:#f2f7fb;border-left:5px solid #0072B2;
 padding:10px 14px;margin:12px 0}
.badge{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:4px;
 color:#fff;background:#0072B2}.badge.no_gain{background:#555}
.badge.not_settled{background:#D55E00}
.grid2{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start}
.grid2>figure.chart-box{width:520px}
figure.chart-box{margin:8px 0 16px;max-width:100%}
figcaption{font-weight:600;margin-bottom:4px}
svg.chart{max-width:100%;height:auto;font-size:12px;display:block}
svg .tick{fill:#333;font-size:12px}svg .axis-title{fill:#222;font-size:12px;font-weight:600}
svg .grid{stroke:#e3e3e3}svg .axis{stroke:#666}svg .zero{stroke:#333;stroke-dasharray:3 3}
svg .plot-bg{fill:#fcfcfc}
ul.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:2px 16px;
 font-size:0.88em}
ul.legend li{display:flex;align-items:center;gap:4px}
p.note,p.empty{color:#555;font-size:0.88em;margin:2px 0}
table{border-collapse:collapse;font-size:0.9em;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f6f6;padding:8px 12px;overflow-x:auto;font-size:0.88em}
pre.plan{white-space:pre-wrap}
"""


def render(data: ReportData) -> str:
    """The whole report as one HTML document."""
    answer = data.answer
    sections = [
        _answer_section(data),
        _section(
            "history",
            "Optimization history",
            charts.history_chart(data.history, data.band, answer.metric, answer.direction)
            if data.history
            else "",
            "No launch was measured yet.",
        ),
        _section(
            "effects",
            "What each setting did",
            (
                charts.effects_chart(data.effects, answer.confidence, answer.metric)
                + _effects_table(data.effects)
            )
            if data.effects
            else "",
            "No launch was measured yet: no setting's effect can be estimated.",
        ),
        _section(
            "concurrency",
            "Throughput and latency against concurrency",
            '<div class="grid2">'
            + "".join(charts.concurrency_charts(data.curves))
            + "</div>"
            + _curves_table(data.curves)
            if data.curves
            else "",
            "No level of the baseline, best or recommended configuration was stored.",
        ),
    ]
    front = data.answer.pareto
    if data.pareto is not None or front is not None:
        body = charts.pareto_chart(data.pareto) if data.pareto is not None else ""
        if front is not None:
            body += _front_table(front, data.answer.confidence)
        sections.append(_section("pareto", "Pareto front", body, ""))
    telemetry_title = {
        "gpu": "GPU power, clocks and utilisation",
        "host": "Host CPU and memory (no GPU telemetry was recorded)",
    }.get(data.telemetry_kind, "Telemetry")
    sections += [
        _section(
            "telemetry",
            telemetry_title,
            '<div class="grid2">'
            + "".join(charts.telemetry_chart_html(c, i) for i, c in enumerate(data.telemetry))
            + "</div>"
            if data.telemetry
            else "",
            "No telemetry sample was stored for the baseline, best or recommended launch.",
        ),
        _section(
            "timing",
            "Time per launch",
            charts.timing_chart(data.timings) + _timing_totals(data.timings)
            if data.timings
            else "",
            "No launch has finished yet.",
        ),
    ]
    if any(cost.with_phases for cost in data.load_costs.measured):
        sections.append(
            _section(
                "load-costs",
                "What a launch costs",
                load_section(data.load_costs, data.load),
                "",
            )
        )
    sections += [
        _section(
            "plan",
            "The cost plan, as said after the baseline",
            _plan(data.plan),
            "The study has not said its cost plan: its baseline launches are not all measured.",
        ),
        _section(
            "failures",
            "Failures and pruned trials",
            _failures(data) if data.failures else "",
            "No trial failed or was pruned.",
        ),
    ]
    if data.studies is not None:
        sections.append(
            _section("studies", "Studies side by side", _studies_table(data.studies), "")
        )
    title = f"tuner report: {answer.study}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # Nothing may be fetched: the policy forbids it even if a value slipped in.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{esc(title)}</h1>" + "".join(sections) + "</body></html>\n"
    )


def _section(key: str, title: str, body: str, empty: str) -> str:
    content = body or f'<p class="empty">{esc(empty)}</p>'
    return f'<section id="{esc(key)}"><h2>{esc(title)}</h2>{content}</section>'


def _plan(lines: Sequence[str]) -> str:
    """The whole plan (views/plan_text.plan_lines): its indents show what belongs to what."""
    text = "\n".join(lines)
    return f'<pre class="plan">{esc(text)}</pre>' if lines else ""


def _answer_section(data: ReportData) -> str:
    a = data.answer
    t = a.trials
    noise = f"noise between launches ±{a.noise.rel_sd:.2%} (1 s.d.)" if a.noise is not None else ""
    meta = (
        f"Objective: {a.metric}"
        + ("" if a.metric == "capacity" else f" at concurrency {a.concurrency}")
        + f" ({a.direction}); "
        f"{a.confidence:.0%} confidence; {noise}. Trials: {t.complete} complete, {t.failed} "
        f"failed, {t.pruned} pruned. Stopped: {a.stop_reason or 'not yet'}"
        + (f" ({a.stop_detail})" if a.stop_detail else "")
        + f". Generated {data.generated_at}."
    )
    parts = [
        f'<p class="meta">{esc(meta)}</p>',
        f'<p class="verdict" id="verdict">{_badge(data)}{esc(data.verdict)}</p>',
        _answer_table(a.baseline, a.best, a.recommended),
    ]
    if a.screening is not None:  # views/best_screening.py: screening searched, full decided
        lines = a.screening.lines()
        parts.append(f'<p id="screening">{"<br>".join(esc(x) for x in lines)}</p>')
    if a.final is not None and a.final.lines():  # views/best_final.py: the drift
        parts.append(f'<p id="drift">{"<br>".join(esc(x) for x in a.final.lines())}</p>')
    if a.probe is not None:  # views/probe_summary.py: the floor, the share, the finding
        lines = probe_lines(a.probe, a.concurrency)
        parts.append(f'<p id="probe">{"<br>".join(esc(x) for x in lines)}</p>')
    if a.ceiling is not None:  # views/ceiling_summary.py: the bound, the share, the gap
        sentence = a.ceiling.sentence
        parts.append(f'<p id="ceiling">Ceiling: {esc(sentence[:1].upper() + sentence[1:])}.</p>')
    if a.capacity is not None:  # views/best_capacity.py: the capacity searches' figures
        parts.append(f'<p id="capacity">{"<br>".join(esc(x) for x in a.capacity.lines())}</p>')
    if a.topology is not None:  # views/best_topology.py: the GPUs, what was skipped on them
        parts.append(f'<p id="topology">{"<br>".join(esc(x) for x in a.topology.lines())}</p>')
    rec = a.recommended
    if rec is not None and not a.keep_defaults:
        parts.append(
            "<p>The recommended settings to deploy (also "
            "<code>tuner best --format env | systemd | args</code>): environment</p>"
            f"<pre>{esc(deployment_text(rec, 'env'))}</pre>"
        )
        if rec.args:
            parts.append(f"<p>server arguments</p><pre>{esc(deployment_text(rec, 'args'))}</pre>")
    return '<section id="answer"><h2>Answer</h2>' + "".join(parts) + "</section>"


def _badge(data: ReportData) -> str:
    """The verdict's badge before its sentence (views/best_verdict.py), or nothing."""
    if not data.badge:
        return ""
    kind = esc(data.answer.verdict or "")
    return f'<strong class="badge {kind}" id="verdict-badge">{esc(data.badge)}</strong> '


def _answer_table(*entries: ConfigEntry | None) -> str:
    rows = []
    for label, entry in zip(("baseline", "best", "recommended"), entries, strict=True):
        if entry is None:
            continue
        low_high = f"{entry.interval[0]:.4g} to {entry.interval[1]:.4g}" if entry.interval else "–"
        changed = " ".join(f"{k}={v}" for k, v in entry.changed.items()) or "(defaults)"
        rows.append(
            f"<tr><td>{esc(label)}</td><td class=num>{esc(entry.trial)}</td>"
            f"<td class=num>{entry.value:.4g}</td><td class=num>{esc(low_high)}</td>"
            f"<td class=num>{entry.launches}</td><td>{esc(changed)}</td></tr>"
        )
    return (
        '<table id="settings"><tr><th></th><th>trial</th><th>value</th><th>interval</th>'
        "<th>launches</th><th>settings (changed from the defaults)</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _front_table(front: ParetoView, confidence: float) -> str:
    """`tuner best`'s front of trusted configurations: pooled estimates with intervals, the
    non-dominated mark and the recommendation (the chart above is one point per launch)."""
    head = "".join(f"<th>{esc(o.name)} ({esc(o.direction)})</th>" for o in front.objectives)
    rows = [
        "<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row.cells("non-dominated")) + "</tr>"
        for row in front.rows
    ]
    return (
        f"<p>The trusted configurations, each objective's mean over its launches "
        f"[{confidence:.0%} interval]; dominated means another is better beyond noise on one "
        f'objective and no worse on any (docs/statistics.md, "Several objectives").</p>'
        f'<table id="front-table"><tr><th></th><th>trial</th>{head}<th>launches</th>'
        f"<th>dominated by</th><th>settings</th></tr>{''.join(rows)}</table>"
        f'<p id="front-reason">{esc(front.reason)}</p>'
    )


def _effects_table(effects: Sequence[Effect]) -> str:
    rows = "".join(
        f"<tr><td>{esc(e.param)}</td><td>{esc(e.value)}</td><td class=num>{e.median:+.2%}</td>"
        f"<td class=num>{e.low:+.2%} to {e.high:+.2%}</td><td class=num>{e.p_effect:.0%}</td>"
        f"<td class=num>{e.launches}</td></tr>"
        for e in effects
    )
    return (
        "<table><tr><th>setting</th><th>value</th><th>median effect</th><th>interval</th>"
        "<th>chance it has any effect</th><th>launches with it</th></tr>" + rows + "</table>"
    )


def _curves_table(curves: Sequence[ConfigCurve]) -> str:
    def cell(value: float | None) -> str:
        return f"<td class=num>{value:.4g}</td>" if value is not None else "<td>–</td>"

    rows = "".join(
        f"<tr><td>{esc(c.label)} (trial {esc(c.trial)})</td><td class=num>{p.concurrency}</td>"
        + cell(p.throughput)
        + cell(p.ttft_p50)
        + cell(p.ttft_p99)
        + cell(p.tpot_p50)
        + cell(p.tpot_p99)
        + "</tr>"
        for c in curves
        for p in c.points
    )
    return (
        "<table><tr><th>configuration</th><th>concurrency</th><th>output tok/s</th>"
        "<th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>TPOT p50 ms</th><th>TPOT p99 ms</th></tr>"
        + rows
        + "</table>"
    )


def _timing_totals(timings: Sequence[LaunchTiming]) -> str:
    totals = {key: sum(getattr(t, key) for t in timings) for key, _ in charts.TIMING_PARTS}
    whole = sum(totals.values()) or 1.0
    cells = "".join(
        f"<tr><td>{esc(label)}</td><td class=num>{totals[key]:.1f}</td>"
        f"<td class=num>{totals[key] / whole:.0%}</td></tr>"
        for key, label in charts.TIMING_PARTS
    )
    return (
        f"<table><tr><th>all {len(timings)} launches</th><th>seconds</th><th>share</th></tr>"
        f"{cells}</table>"
    )


def _failures(data: ReportData) -> str:
    """What the failed launches taught (as `tuner best` says it), then every failed or
    pruned trial with its cause and reason."""
    taught = data.answer.failures
    lines = "".join(f"<li>{esc(line)}</li>" for line in taught.lines()) if taught else ""
    listed = f'<ul id="failures-taught">{lines}</ul>' if lines else ""
    return listed + _failures_table(data.failures)


def _failures_table(failures: Sequence[Failure]) -> str:
    rows = "".join(
        f"<tr><td class=num>{f.trial}</td><td>{esc(f.state)}</td><td>{esc(f.role)}</td>"
        f"<td>{'yes' if f.launched else 'no'}</td><td>{esc(f.changed)}</td>"
        f"<td>{esc(words(f.cause) if f.cause else '-')}</td><td>{esc(f.reason)}</td></tr>"
        for f in failures
    )
    return (
        '<table id="failure-table"><tr><th>trial</th><th>state</th><th>role</th>'
        "<th>launched</th><th>settings</th><th>cause</th><th>reason</th></tr>" + rows + "</table>"
    )


def _studies_table(comparison: StudiesComparison) -> str:
    """`tuner compare-studies`' table: each study's best at one stream and at its highest
    level, with intervals, TTFT p99 and energy there, and the median time to healthy."""

    def throughput(best: LevelBest | None) -> str:
        if best is None:
            return "-"
        interval = "[{:,.1f}, {:,.1f}]".format(*best.interval) if best.interval else "[unbounded]"
        return (
            f"{best.output_throughput:,.1f} {interval}<br><small>at {best.concurrency} "
            f"stream{'s' if best.concurrency != 1 else ''}, trial {best.trial}</small>"
        )

    def number(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    confidences = {line.confidence for line in comparison.studies}
    level = f"{confidences.pop():.0%} interval" if len(confidences) == 1 else "interval"
    rows = [
        "<tr><th>study</th><th>single-stream tok/s</th><th>high-concurrency tok/s</th>"
        "<th>TTFT p99 (ms)</th><th>J/token</th><th>to healthy (s)</th><th>launches</th></tr>"
    ]
    for line in comparison.studies:
        high = line.high_concurrency
        cells = [
            throughput(line.single_stream),
            throughput(high),
            number(high.ttft_p99_ms if high else None, ",.0f"),
            number(high.j_per_token if high else None, ".3g"),
            number(line.seconds_to_healthy, ".3g"),
            str(line.launches),
        ]
        rows.append(
            f"<tr><td>{esc(line.label)}</td>"
            + "".join(f'<td class="num">{c}</td>' for c in cells)
            + "</tr>"
        )
    return (
        f"<p>Each study's best trusted configuration: mean output throughput [{level}].</p>"
        f"<table>{''.join(rows)}</table>"
    )
