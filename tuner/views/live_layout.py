"""A live view's lines laid out to the terminal's width: words, a bar, a clock column.

A ``Row`` is pieces of words ranked by how much they tell; ``fit_rows`` drops (or cuts at
a word's end) the least telling first, then the bar, so a line never wraps and never ends
in half a word, and the rows' clocks line up at the right edge. The sweep's live view
(tuner/views/console_live.py) says what the pieces are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

MIN_BAR = 10
"""Narrowest bar worth drawing (cells)."""
MAX_BAR = 40
"""Widest bar: the rest of the line goes to the words."""
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SEP = " · "
"""Between the pieces of a line (a dropped piece leaves no dangling punctuation)."""


@dataclass(frozen=True)
class Piece:
    """Words of a line; ``rank`` 0 stays, higher ranks are dropped first when space is short."""

    text: str
    rank: int = 0
    style: str = ""
    shrink: bool = False
    """May lose its last words (whole words only) rather than go altogether."""


@dataclass(frozen=True)
class Row:
    """One line of the view: words, a bar (``bar_rank`` None: none), a clock and what is left."""

    head: tuple[Piece, ...]
    tail: tuple[Piece, ...]
    done: float | None = None
    """The bar's part done, 0 to 1; None: not known (the bar pulses)."""
    bar_rank: int | None = None
    spin: bool = False


@dataclass(frozen=True)
class _Fitted:
    head: tuple[Piece, ...]
    tail: tuple[Piece, ...]
    bar: bool

    @property
    def head_len(self) -> int:
        return _joined_len(self.head)

    @property
    def tail_len(self) -> int:
        return _joined_len(self.tail)


def _joined_len(pieces: Sequence[Piece]) -> int:
    return sum(cell_len(p.text) for p in pieces) + cell_len(SEP) * max(0, len(pieces) - 1)


def _line_len(head: Sequence[Piece], tail: Sequence[Piece], bar: bool) -> int:
    parts = [_joined_len(head)] if head else []
    if bar:
        parts.append(MIN_BAR)
    if tail:
        parts.append(_joined_len(tail))
    return 2 + sum(parts) + max(0, len(parts) - 1)


def _cut_words(text: str, cells: int) -> str:
    """The longest start of ``text`` within ``cells`` that ends at a word's end ("" if none)."""
    if cell_len(text) <= cells:
        return text
    words = text.split()
    out = ""
    for word in words:
        candidate = f"{out} {word}" if out else word
        if cell_len(candidate) > cells:
            break
        out = candidate
    return out.rstrip(" :,;([{")


def _fit(row: Row, width: int) -> _Fitted:
    """The pieces of ``row`` that fit ``width`` cells: drop (or shorten, whole words only)
    the highest ranks first, the bar among them by its rank; rank 0 shortens last."""
    head, tail = list(row.head), list(row.tail)
    bar = row.bar_rank is not None

    def too_wide() -> int:
        return _line_len(head, tail, bar) - width

    while too_wide() > 0:
        ranked = [(p.rank, 0, i) for i, p in enumerate(head) if p.rank > 0]
        ranked += [(p.rank, 1, i) for i, p in enumerate(tail) if p.rank > 0]
        if bar and row.bar_rank:
            ranked.append((row.bar_rank, 2, 0))
        if not ranked:
            break
        _, where, index = max(ranked)
        if where == 2:
            bar = False
            continue
        pieces = head if where == 0 else tail
        piece = pieces[index]
        if piece.shrink:
            cells = cell_len(piece.text) - too_wide()
            shorter = _cut_words(piece.text, cells)
            if shorter:
                pieces[index] = Piece(shorter, piece.rank, piece.style, shrink=False)
                continue
        del pieces[index]
    if too_wide() > 0 and bar:
        bar = False
    # Only rank 0 is left: shorten the shrinkable words, the longest first, then the rest.
    for pieces in (head, tail):
        order = sorted(range(len(pieces)), key=lambda i: -cell_len(pieces[i].text))
        for index in sorted(order, key=lambda i: not pieces[i].shrink):
            if too_wide() <= 0:
                break
            piece = pieces[index]
            shorter = _cut_words(piece.text, max(0, cell_len(piece.text) - too_wide()))
            pieces[index] = Piece(shorter, piece.rank, piece.style)
        pieces[:] = [p for p in pieces if p.text]
    return _Fitted(tuple(head), tuple(tail), bar)


def _text(pieces: Sequence[Piece]) -> Text:
    out = Text()
    for i, piece in enumerate(pieces):
        if i:
            out.append(SEP, style="dim")
        out.append(piece.text, style=piece.style)
    return out


def bar_text(done: float | None, width: int, now: float) -> Text:
    """A bar of ``width`` cells: ``done`` of it full, or a moving block when not known."""
    out = Text()
    if width <= 0:
        return out
    if done is None:
        block = max(2, width // 5)
        start = int(now * 8) % (width + block) - block
        for i in range(width):
            out.append("━", style="bar.pulse" if start <= i < start + block else "bar.back")
        return out
    filled = max(0.0, min(1.0, done)) * width
    whole = int(filled)
    out.append("━" * whole, style="bar.finished" if done >= 1 else "bar.complete")
    if whole < width:
        if filled - whole >= 0.5:
            out.append("╸", style="bar.complete")
            out.append("━" * (width - whole - 1), style="bar.back")
        else:
            out.append("━" * (width - whole), style="bar.back")
    return out


def fit_rows(rows: Sequence[Row], width: int, now: float) -> list[Text]:
    """Each row as one line of at most ``width`` cells: its words, then its bar, then its
    clock and time left in a column at the right edge (the rows' clocks line up)."""
    fitted = [_fit(row, width) for row in rows]
    tail_col = max((f.tail_len for f in fitted), default=0)
    lines = []
    for row, fit in zip(rows, fitted, strict=True):
        bar_need = 1 + MIN_BAR if fit.bar else 0
        aligned = 2 + fit.head_len + bar_need + 1 + tail_col <= width
        tail_w = tail_col if aligned else fit.tail_len
        right = 1 + tail_w if fit.tail else 0
        bar_w = min(MAX_BAR, width - 2 - fit.head_len - right - 1) if fit.bar else 0
        spin = SPINNER[int(now * 10) % len(SPINNER)] if row.spin else " "
        line = Text(f"{spin} ", style="progress.spinner")
        line.append_text(_text(fit.head))
        line.append(" " * max(0, width - 2 - fit.head_len - right - (1 + bar_w if bar_w else 0)))
        if bar_w:
            line.append(" ")
            line.append_text(bar_text(row.done, bar_w, now))
        if fit.tail:  # left-aligned in its column: the clocks line up
            line.append(" ")
            line.append_text(_text(fit.tail))
        line.rstrip()
        lines.append(line)
    return lines
