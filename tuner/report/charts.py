"""The report's charts, one function each, from tuner/report/data.py's types to HTML figures.

Each returns a ``<figure>`` (tuner/report/svg.py): caption, inline SVG, HTML legend.
Every ``<svg>`` carries ``data-chart`` (its name) and draws its data with class
``mark``: the browser test counts them to prove a chart is not empty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from tuner.report import svg
from tuner.report.data import ConfigCurve, Effect, HistoryPoint, LaunchTiming, NoiseBand, Pareto
from tuner.report.svg import LegendItem, esc
from tuner.report.telemetry import TelemetryChart
from tuner.study import attrs

ROLE_SHAPES = {
    attrs.BASELINE: ("square", svg.color(6)),
    attrs.SEARCH: ("circle", svg.color(0)),
    attrs.CONFIRM: ("diamond", svg.color(1)),
    attrs.SIMPLIFY: ("triangle", svg.color(2)),
    attrs.FINAL: ("hollow", svg.color(3)),
}
ROLE_NAMES = {
    attrs.BASELINE: "baseline (the defaults)",
    attrs.SEARCH: "search",
    attrs.CONFIRM: "confirmation (a launch again)",
    attrs.SIMPLIFY: "simplified best",
    attrs.FINAL: "final comparison (fresh: the answer rests on these)",
}


def history_chart(
    points: Sequence[HistoryPoint], band: NoiseBand | None, metric: str, direction: str
) -> str:
    """The objective of every measured launch by trial, ±1 s.e., over the noise band."""
    title = f"Optimization history: {metric} per launch ({direction})"
    values = [p.value for p in points]
    errs = [(p.value - (p.stderr or 0), p.value + (p.stderr or 0)) for p in points]
    y_all = values + [e for pair in errs for e in pair]
    if band is not None:
        y_all += [band.low, band.high]
    y_lo, y_hi = svg.nice_range(svg.padded_range(y_all))
    x_lo, x_hi = svg.padded_range([float(p.trial) for p in points] or [0.0])
    y_ticks = svg.y_axis_ticks(y_lo, y_hi)
    frame = svg.frame_for((x_lo, x_hi), (y_lo, y_hi), y_labels=[s for _, s in y_ticks])
    x_ticks = [(v, svg.number(v, 1)) for v, _ in svg.x_axis_ticks(x_lo, x_hi) if v == int(v)]
    body = [
        svg.axes(frame, x_ticks=x_ticks, y_ticks=y_ticks, x_title="trial number", y_title=metric)
    ]
    items = []
    if band is not None:
        top, bottom = frame.y(band.high), frame.y(band.low)
        body.append(
            f'<rect class="band" x="{frame.left:.1f}" y="{top:.1f}" '
            f'width="{frame.plot_width:.1f}" height="{bottom - top:.1f}" '
            f'fill="{svg.color(6)}" fill-opacity="0.15"/>'
            f'<line x1="{frame.left:.1f}" x2="{frame.left + frame.plot_width:.1f}" '
            f'y1="{frame.y(band.center):.1f}" y2="{frame.y(band.center):.1f}" '
            f'stroke="{svg.color(6)}" stroke-dasharray="4 3"/>'
        )
        items.append(
            LegendItem(
                f"noise band: the defaults' mean ± 2 s.d. of launch noise "
                f"(±{band.rel_sd:.1%} per launch)",
                svg.color(6),
                "band",
            )
        )
    seen_roles: list[str] = []
    screened = False
    for p, (low, high) in zip(points, errs, strict=True):
        shape, fill = ROLE_SHAPES.get(p.role, ("circle", svg.color(4)))
        if p.status != "complete":
            shape = "hollow"
        x = frame.x(p.trial)
        if p.stderr:
            body.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.y(high):.1f}" '
                f'y2="{frame.y(low):.1f}" stroke="{fill}" stroke-width="1.2"/>'
            )
        screening = p.fidelity == attrs.SCREEN
        screened = screened or screening
        what = f"{p.role}, screening" if screening else p.role
        tip = f"trial {p.trial} ({what}, {p.status}): {p.value:.4g}; {p.changed}"
        # A screening launch is a smaller mark: it searched, the full launches decide.
        size = 2.8 if screening else 4.5
        mark = svg.marker(shape, x, frame.y(p.value), fill, size)
        body.append(f"<g><title>{esc(tip)}</title>{mark}</g>")
        if p.role not in seen_roles:
            seen_roles.append(p.role)
    for role in seen_roles:
        shape, fill = ROLE_SHAPES.get(role, ("circle", svg.color(4)))
        items.append(LegendItem(ROLE_NAMES.get(role, role), fill, shape))
    if any(p.status != "complete" for p in points):
        items.append(LegendItem("pruned (fewer rounds)", svg.color(0), "hollow"))
    if screened:
        items.append(
            LegendItem(
                "small marks: screening launches (random weights: they search, never decide)",
                svg.color(0),
                "circle",
            )
        )
    note = "Bars: ±1 standard error of a launch's mean over its rounds."
    chart = svg.svg(frame, "".join(body), chart="history", title=title)
    return svg.figure("history", title, chart, svg.legend(items), note)


def percent(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step * 100) + 1e-9)) if step > 0 else 1
    return f"{value * 100:+.{min(decimals, 3)}f}%"


def effects_chart(effects: Sequence[Effect], confidence: float, metric: str) -> str:
    """Each tried setting's effect on the objective: median and interval, one row each."""
    title = f"Estimated effect of each setting on {metric}"
    labels = [svg.truncate(f"{e.param}={e.value}", 42) for e in effects]
    row = 24
    left = max((svg.text_width(s) for s in labels), default=40) + 16
    x_lo, x_hi = svg.padded_range([v for e in effects for v in (e.low, e.high)], include_zero=True)
    frame = svg.Frame(
        width=svg.WIDTH,
        height=row * len(effects) + 58,
        left=left,
        right=24,
        top=8,
        bottom=50,
        x_range=(x_lo, x_hi),
        y_range=(0, len(effects)),
    )
    x_ticks = svg.x_axis_ticks(x_lo, x_hi, 6, percent)
    body = [
        svg.axes(
            frame,
            x_ticks=x_ticks,
            y_ticks=[],
            x_title=f"effect on {metric} ({confidence:.0%} interval, median)",
            y_title="",
        )
    ]
    zero = frame.x(0.0)
    body.append(
        f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{frame.top:.1f}" '
        f'y2="{frame.top + frame.plot_height:.1f}" class="zero"/>'
    )
    for i, (e, label) in enumerate(zip(effects, labels, strict=True)):
        y = frame.top + row * i + row / 2
        fill = svg.color(2) if e.median > 0 else svg.color(1) if e.median < 0 else svg.color(6)
        tip = (
            f"{e.param}={e.value}: median {e.median:+.2%}, interval {e.low:+.2%} to "
            f"{e.high:+.2%}; has an effect in {e.p_effect:.0%} of draws; {e.launches} launches"
        )
        body.append(
            f'<text x="{left - 8:.1f}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{esc(label)}</text><g><title>{esc(tip)}</title>"
            f'<line class="mark" x1="{frame.x(e.low):.1f}" x2="{frame.x(e.high):.1f}" '
            f'y1="{y:.1f}" y2="{y:.1f}" stroke="{fill}" stroke-width="3"/>'
            f"{svg.marker('circle', frame.x(e.median), y, fill)}</g>"
        )
    chart = svg.svg(frame, "".join(body), chart="effects", title=title)
    items = [
        LegendItem("speeds up (median above 0)", svg.color(2), "circle"),
        LegendItem("slows down (median below 0)", svg.color(1), "circle"),
        LegendItem("no effect (median 0)", svg.color(6), "circle"),
    ]
    note = (
        "From the search's sparse model of every measured launch (docs/search.md): most "
        "settings do nothing, so an interval often touches 0."
    )
    return svg.figure("effects", title, chart, svg.legend(items), note)


def concurrency_charts(curves: Sequence[ConfigCurve]) -> list[str]:
    """Throughput, TTFT and TPOT (p50 solid, p99 dashed) against concurrency."""
    specs: list[tuple[str, str, str, list[tuple[str, Callable[..., float | None], bool]]]] = [
        (
            "throughput",
            "Output throughput against concurrency",
            "output tokens/s",
            [("", lambda p: p.throughput, False)],
        ),
        (
            "ttft",
            "Time to first token against concurrency",
            "TTFT (ms)",
            [(" p50", lambda p: p.ttft_p50, False), (" p99", lambda p: p.ttft_p99, True)],
        ),
        (
            "tpot",
            "Time per output token against concurrency",
            "TPOT (ms)",
            [(" p50", lambda p: p.tpot_p50, False), (" p99", lambda p: p.tpot_p99, True)],
        ),
    ]
    levels = sorted({p.concurrency for c in curves for p in c.points})
    out = []
    for name, title, unit, getters in specs:
        lines: list[tuple[str, str, bool, list[tuple[float, float]]]] = []
        for i, curve in enumerate(curves):
            for suffix, get, dashed in getters:
                pts = [(float(p.concurrency), get(p)) for p in curve.points]
                kept = [(x, y) for x, y in pts if y is not None]
                if kept:
                    lines.append((f"{curve.label}{suffix}", svg.color(i), dashed, kept))
        if lines:
            out.append(
                _xy_chart(name, title, "concurrency (requests in flight)", unit, lines, levels)
            )
    return out


def _xy_chart(
    name: str,
    title: str,
    x_title: str,
    y_title: str,
    lines: Sequence[tuple[str, str, bool, list[tuple[float, float]]]],
    x_levels: Sequence[int],
) -> str:
    """Lines over concurrency levels; a log axis when they span 4x or more."""
    ys = [y for *_, pts in lines for _, y in pts]
    y_lo, y_hi = svg.nice_range(svg.padded_range(ys, include_zero=True))
    y_ticks = svg.y_axis_ticks(y_lo, y_hi)
    lo, hi = min(x_levels), max(x_levels)
    log = lo > 0 and hi / lo >= 4
    x_range = (lo / 1.25, hi * 1.25) if log else svg.padded_range([float(v) for v in x_levels])
    frame = svg.frame_for(
        x_range, (y_lo, y_hi), y_labels=[s for _, s in y_ticks], x_log=log, width=svg.HALF_WIDTH
    )
    x_ticks = [(float(v), str(v)) for v in x_levels]
    body = [svg.axes(frame, x_ticks=x_ticks, y_ticks=y_ticks, x_title=x_title, y_title=y_title)]
    items = []
    for label, stroke, dashed, pts in lines:
        body.append(svg.polyline(frame, pts, stroke, dashed))
        body.extend(
            f"<g><title>{esc(f'{label} at concurrency {x:g}: {y:.4g}')}</title>"
            f"{svg.marker('circle', frame.x(x), frame.y(y), stroke, 3.5)}</g>"
            for x, y in pts
        )
        items.append(LegendItem(label, stroke, "dashed" if dashed else "line"))
    chart = svg.svg(frame, "".join(body), chart=name, title=title)
    return svg.figure(name, title, chart, svg.legend(items))


def telemetry_chart_html(chart: TelemetryChart, index: int) -> str:
    """One telemetry figure over time, a line per launch."""
    name = f"telemetry-{index}"
    title = f"{chart.title} over the benchmark ({chart.unit})"
    xs = [x for s in chart.series for x, _ in s.points]
    ys = [y for s in chart.series for _, y in s.points]
    x_lo, x_hi = 0.0, (max(xs) * 1.02 if xs and max(xs) > 0 else 1.0)  # time starts at 0
    y_lo, y_hi = svg.nice_range(svg.padded_range(ys, include_zero=True))
    y_ticks = svg.y_axis_ticks(y_lo, y_hi)
    frame = svg.frame_for(
        (x_lo, x_hi),
        (y_lo, y_hi),
        y_labels=[s for _, s in y_ticks],
        height=240,
        width=svg.HALF_WIDTH,
    )
    body = [
        svg.axes(
            frame,
            x_ticks=svg.x_axis_ticks(x_lo, x_hi),
            y_ticks=y_ticks,
            x_title="seconds since the launch's first sample",
            y_title=chart.unit,
        )
    ]
    items = []
    for i, series in enumerate(chart.series):
        points = list(series.points)
        if len(points) == 1:  # one sample: a dot, not an invisible line
            x, y = points[0]
            body.append(svg.marker("circle", frame.x(x), frame.y(y), svg.color(i), 3.5))
        else:
            body.append(svg.polyline(frame, points, svg.color(i), False))
        items.append(LegendItem(series.label, svg.color(i)))
    return svg.figure(
        name, title, svg.svg(frame, "".join(body), chart=name, title=title), svg.legend(items)
    )


TIMING_PARTS = (
    ("load_s", "load (start to healthy, or to the failure)"),
    ("warmup_s", "warm-up and connection setup"),
    ("benchmark_s", "benchmark (measured windows)"),
    ("stop_s", "stop"),
    ("other_s", "other (recording, between levels)"),
)


def timing_chart(timings: Sequence[LaunchTiming]) -> str:
    """A stacked bar per launch: where its time went."""
    title = "Time spent per launch (seconds)"
    labels = [
        f"trial {t.trial} {t.role}" + ("" if t.status == "complete" else f" ({t.status})")
        for t in timings
    ]
    row = 18
    left = max((svg.text_width(s) for s in labels), default=40) + 16
    total = max((sum(getattr(t, k) for k, _ in TIMING_PARTS) for t in timings), default=1.0)
    frame = svg.Frame(
        width=svg.WIDTH,
        height=row * len(timings) + 58,
        left=left,
        right=24,
        top=8,
        bottom=50,
        x_range=(0.0, total * 1.05 or 1.0),
        y_range=(0, len(timings)),
    )
    body = [
        svg.axes(
            frame,
            x_ticks=svg.x_axis_ticks(0.0, total * 1.05 or 1.0, 6),
            y_ticks=[],
            x_title="seconds",
            y_title="",
        )
    ]
    for i, (t, label) in enumerate(zip(timings, labels, strict=True)):
        y = frame.top + row * i + 3
        body.append(
            f'<text x="{left - 8:.1f}" y="{y + row / 2 + 1:.1f}" text-anchor="end" '
            f'class="tick">{esc(label)}</text>'
        )
        start = 0.0
        for j, (key, part) in enumerate(TIMING_PARTS):
            value = float(getattr(t, key))
            if value <= 0:
                continue
            x0, x1 = frame.x(start), frame.x(start + value)
            body.append(
                f'<rect class="mark" x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 0.5):.1f}" '
                f'height="{row - 6}" fill="{svg.color(j)}"><title>'
                f"{esc(f'trial {t.trial}: {part} {value:.1f} s')}</title></rect>"
            )
            start += value
    items = [LegendItem(part, svg.color(j), "bar") for j, (_, part) in enumerate(TIMING_PARTS)]
    chart = svg.svg(frame, "".join(body), chart="timing", title=title)
    return svg.figure("timing", title, chart, svg.legend(items))


def pareto_chart(data: Pareto) -> str:
    """The first two objectives of every completed trial, the front joined by a line."""
    (x_name, y_name), (x_dir, y_dir) = data.names, data.directions
    title = f"Pareto front: {x_name} ({x_dir}) against {y_name} ({y_dir})"
    x_lo, x_hi = svg.padded_range([p.x for p in data.points])
    y_lo, y_hi = svg.nice_range(svg.padded_range([p.y for p in data.points]))
    y_ticks = svg.y_axis_ticks(y_lo, y_hi)
    frame = svg.frame_for((x_lo, x_hi), (y_lo, y_hi), y_labels=[s for _, s in y_ticks])
    body = [
        svg.axes(
            frame,
            x_ticks=svg.x_axis_ticks(x_lo, x_hi),
            y_ticks=y_ticks,
            x_title=x_name,
            y_title=y_name,
        )
    ]
    front = sorted((p.x, p.y) for p in data.points if p.on_front)
    if len(front) > 1:
        body.append(svg.polyline(frame, front, svg.color(1), True))
    for p in data.points:
        fill = svg.color(1) if p.on_front else svg.color(0)
        body.append(
            f"<g><title>{esc(f'trial {p.trial}: {p.x:.4g}, {p.y:.4g}')}</title>"
            f"{svg.marker('circle', frame.x(p.x), frame.y(p.y), fill)}</g>"
        )
    items = [
        LegendItem("on the Pareto front", svg.color(1), "circle"),
        LegendItem("dominated", svg.color(0), "circle"),
    ]
    chart = svg.svg(frame, "".join(body), chart="pareto", title=title)
    return svg.figure("pareto", title, chart, svg.legend(items))
