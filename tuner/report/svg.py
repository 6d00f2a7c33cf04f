"""Hand-written SVG for the report: axes, ticks and the few marks its charts need.

No JavaScript and no library: each chart is an inline ``<svg>`` inside a ``<figure>``
with an HTML caption and an HTML legend (legends wrap with the page, so they never
overlap the plot). Tick labels are thinned until they do not overlap (text widths are
estimated from the font size). Every piece of text goes through ``esc``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FONT = 12
"""Font size of tick labels and axis titles, in px."""
CHAR_WIDTH = 0.62
"""Width of one character in ems, generous for the sans-serif fonts of a browser."""
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#444444")
"""Okabe-Ito colours: told apart with the common colour-vision deficiencies."""
WIDTH = 900
"""Width of a full-row chart, in px; charts two to a row use HALF_WIDTH."""
HALF_WIDTH = 520


def esc(text: object) -> str:
    """Text for HTML or SVG, quotes included."""
    return html.escape(str(text), quote=True)


NARROW = frozenset("ijlt.,:;|!'()[] ")
WIDE = frozenset("MWmw%@")


def text_width(text: str, size: float = FONT) -> float:
    """A generous estimate of the rendered width (capitals and digits are wide in DejaVu
    Sans, the usual fallback font): labels are laid out by it, so it errs on the wide side."""
    ems = 0.0
    for char in text:
        if char in NARROW:
            ems += 0.36
        elif char in WIDE:
            ems += 0.95
        elif char.isupper() or char.isdigit() or char in "_=+-":
            ems += 0.74
        else:
            ems += CHAR_WIDTH
    return ems * size


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def nice_step(span: float, count: int) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about ``count`` intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if mult * power >= raw:
            return mult * power
    return 10 * power


def padded_range(values: Sequence[float], *, include_zero: bool = False) -> tuple[float, float]:
    """Data limits with 5% room; a flat range gets some width."""
    finite = [v for v in values if math.isfinite(v)]
    if include_zero:
        finite.append(0.0)
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    if hi == lo:
        pad = abs(hi) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    lo_p, hi_p = lo - pad, hi + pad
    if include_zero and lo >= 0:
        lo_p = 0.0
    return lo_p, hi_p


def nice_range(limits: tuple[float, float], count: int = 5) -> tuple[float, float]:
    """``limits`` widened to whole tick steps, so the top and bottom of an axis are labelled."""
    lo, hi = limits
    step = nice_step(hi - lo, count)
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step


def ticks(lo: float, hi: float, count: int = 5) -> tuple[list[float], float]:
    step = nice_step(hi - lo, count)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    value = first
    while value <= hi + step * 1e-9:
        out.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return out, step


def number(value: float, step: float | None = None) -> str:
    """A tick or a figure: decimals from the step; large values with a k or M."""
    if not math.isfinite(value):
        return "–"
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e4:
        return f"{value / 1e3:.3g}k"
    if step is not None and step > 0:
        decimals = max(0, -math.floor(math.log10(step) + 1e-9))
        return f"{value:.{min(decimals, 6)}f}"
    return f"{value:.4g}"


@dataclass(frozen=True)
class Frame:
    """The plot area inside an SVG and the data range it shows."""

    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    x_log: bool = False

    @property
    def plot_width(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> float:
        return self.height - self.top - self.bottom

    def x(self, value: float) -> float:
        lo, hi = self.x_range
        if self.x_log:
            value, lo, hi = math.log(value), math.log(lo), math.log(hi)
        return self.left + (value - lo) / (hi - lo) * self.plot_width

    def y(self, value: float) -> float:
        lo, hi = self.y_range
        return self.top + (hi - value) / (hi - lo) * self.plot_height


def frame_for(
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    *,
    y_labels: Sequence[str],
    height: float = 300,
    width: float = WIDTH,
    x_log: bool = False,
) -> Frame:
    """A frame whose left margin fits the widest y tick label and the y axis title."""
    widest = max((text_width(s) for s in y_labels), default=20.0)
    return Frame(
        width=width,
        height=height,
        left=widest + 34,
        right=20,
        top=12,
        bottom=46,
        x_range=x_range,
        y_range=y_range,
        x_log=x_log,
    )


def thin_labels(positions: Sequence[tuple[float, str]], gap: float = 8) -> list[tuple[float, str]]:
    """Drop tick labels (left to right) that would overlap the one kept before them."""
    kept: list[tuple[float, str]] = []
    right_edge = -math.inf
    for x, label in sorted(positions):
        half = text_width(label) / 2
        if x - half >= right_edge + gap:
            kept.append((x, label))
            right_edge = x + half
    return kept


def axes(
    frame: Frame,
    *,
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
    x_title: str,
    y_title: str,
) -> str:
    """Grid, tick labels and axis titles of ``frame`` (x ticks in data units)."""
    f = frame
    parts = [
        f'<rect x="{f.left:.1f}" y="{f.top:.1f}" width="{f.plot_width:.1f}" '
        f'height="{f.plot_height:.1f}" class="plot-bg"/>'
    ]
    for value, label in y_ticks:
        y = f.y(value)
        parts.append(
            f'<line x1="{f.left:.1f}" x2="{f.left + f.plot_width:.1f}" y1="{y:.1f}" '
            f'y2="{y:.1f}" class="grid"/>'
            f'<text x="{f.left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" '
            f'class="tick">{esc(label)}</text>'
        )
    bottom = f.top + f.plot_height
    for x, label in thin_labels([(f.x(v), s) for v, s in x_ticks]):
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" '
            f'class="axis"/><text x="{x:.1f}" y="{bottom + 17:.1f}" text-anchor="middle" '
            f'class="tick">{esc(label)}</text>'
        )
    mid_y = f.top + f.plot_height / 2
    parts.append(
        f'<line x1="{f.left:.1f}" x2="{f.left + f.plot_width:.1f}" y1="{bottom:.1f}" '
        f'y2="{bottom:.1f}" class="axis"/>'
        f'<text x="{f.left + f.plot_width / 2:.1f}" y="{f.height - 8:.1f}" '
        f'text-anchor="middle" class="axis-title">{esc(x_title)}</text>'
        f'<text transform="translate(14 {mid_y:.1f}) rotate(-90)" text-anchor="middle" '
        f'class="axis-title">{esc(y_title)}</text>'
    )
    return "".join(parts)


def y_axis_ticks(
    lo: float, hi: float, fmt: Callable[[float, float], str] = number
) -> list[tuple[float, str]]:
    values, step = ticks(lo, hi, 5)
    return [(v, fmt(v, step)) for v in values]


def x_axis_ticks(
    lo: float, hi: float, count: int = 8, fmt: Callable[[float, float], str] = number
) -> list[tuple[float, str]]:
    values, step = ticks(lo, hi, count)
    return [(v, fmt(v, step)) for v in values]


def svg(frame: Frame, body: str, *, chart: str, title: str) -> str:
    """The ``<svg>`` element: scales with the page, its title read by screen readers."""
    return (
        f'<svg class="chart" data-chart="{esc(chart)}" viewBox="0 0 {frame.width:.0f} '
        f'{frame.height:.0f}" width="{frame.width:.0f}" height="{frame.height:.0f}" '
        f'role="img"><title>{esc(title)}</title>'
        f"{body}</svg>"
    )


@dataclass(frozen=True)
class LegendItem:
    label: str
    color: str
    shape: str = "line"
    """line, dashed, circle, square, diamond, triangle, hollow, band, bar."""


def legend(items: Sequence[LegendItem]) -> str:
    """An HTML legend (it wraps with the page, so it cannot overlap the plot)."""
    if not items:
        return ""
    entries = "".join(
        f'<li><svg width="22" height="12" aria-hidden="true">{swatch(i)}</svg>{esc(i.label)}</li>'
        for i in items
    )
    return f'<ul class="legend">{entries}</ul>'


def swatch(item: LegendItem) -> str:
    c = esc(item.color)
    if item.shape in ("line", "dashed"):
        dash = ' stroke-dasharray="4 3"' if item.shape == "dashed" else ""
        return f'<line x1="1" x2="21" y1="6" y2="6" stroke="{c}" stroke-width="2.5"{dash}/>'
    if item.shape == "band":
        return f'<rect x="1" y="1" width="20" height="10" fill="{c}" fill-opacity="0.25"/>'
    if item.shape == "bar":
        return f'<rect x="1" y="1" width="20" height="10" fill="{c}"/>'
    return marker(item.shape, 11, 6, item.color)


def marker(shape: str, x: float, y: float, fill: str, size: float = 4.5) -> str:
    """A point mark; ``hollow`` is a circle outline (a pruned launch)."""
    c = esc(fill)
    if shape == "square":
        s = size * 0.9
        return (
            f'<rect class="mark" x="{x - s:.1f}" y="{y - s:.1f}" width="{2 * s:.1f}" '
            f'height="{2 * s:.1f}" fill="{c}"/>'
        )
    if shape == "diamond":
        s = size * 1.25
        return (
            f'<path class="mark" d="M{x:.1f} {y - s:.1f}L{x + s:.1f} {y:.1f}L{x:.1f} '
            f'{y + s:.1f}L{x - s:.1f} {y:.1f}Z" fill="{c}"/>'
        )
    if shape == "triangle":
        s = size * 1.2
        return (
            f'<path class="mark" d="M{x:.1f} {y - s:.1f}L{x + s:.1f} {y + s * 0.8:.1f}'
            f'L{x - s:.1f} {y + s * 0.8:.1f}Z" fill="{c}"/>'
        )
    if shape == "hollow":
        return (
            f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="{size:.1f}" fill="white" '
            f'stroke="{c}" stroke-width="1.5"/>'
        )
    return f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="{size:.1f}" fill="{c}"/>'


def polyline(frame: Frame, points: Sequence[tuple[float, float]], stroke: str, dashed: bool) -> str:
    coords = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in points)
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    return (
        f'<polyline class="mark" points="{coords}" fill="none" stroke="{esc(stroke)}" '
        f'stroke-width="2"{dash}/>'
    )


def figure(chart: str, title: str, body: str, legend_html: str = "", note: str = "") -> str:
    """A chart with its caption (the title) and legend, as one HTML ``<figure>``."""
    caption = f"<figcaption>{esc(title)}</figcaption>"
    after = f'<p class="note">{esc(note)}</p>' if note else ""
    return (
        f'<figure class="chart-box" id="chart-{esc(chart)}">{caption}{body}{legend_html}'
        f"{after}</figure>"
    )


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
