"""What the pre-flight checks found: items (ok, warning, error) and the report they make.

Every check appends to one :class:`Findings`; ``check_space`` freezes it into a
:class:`CheckReport`, which ``tuner check`` prints (``lines``) or writes as JSON
(``to_dict``) and the sweep reads (``ok``, ``summary``) before its first launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Level = Literal["ok", "warning", "error"]


@dataclass(frozen=True)
class CheckItem:
    """One finding: its level, the space key it is about, and a sentence with the fix."""

    level: Level
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.key}: {self.message}"


@dataclass(frozen=True)
class CheckReport:
    """Everything ``check_space`` found; ``ok`` when nothing is an error."""

    space: str
    items: tuple[CheckItem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[CheckItem]:
        return [i for i in self.items if i.level == "error"]

    @property
    def warnings(self) -> list[CheckItem]:
        return [i for i in self.items if i.level == "warning"]

    def summary(self) -> str:
        """One line: how many errors and warnings, the first error if any."""
        head = f"{self.space}: {len(self.errors)} error(s), {len(self.warnings)} warning(s)"
        return head + (f"; first: {self.errors[0]}" if self.errors else "")

    def lines(self) -> list[str]:
        """The report as text: one line per item, errors first, then a verdict."""
        marks = {"error": "ERROR", "warning": "warn ", "ok": "ok   "}
        order = {"error": 0, "warning": 1, "ok": 2}
        items = sorted(self.items, key=lambda i: order[i.level])
        out = [f"{marks[i.level]} {i.key}: {i.message}" for i in items]
        verdict = "ready to run" if self.ok else "fix the errors above before running"
        out.append(
            f"{self.space}: {len(self.errors)} error(s), {len(self.warnings)} warning(s): {verdict}"
        )
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "space": self.space,
            "ok": self.ok,
            "items": [{"level": i.level, "key": i.key, "message": i.message} for i in self.items],
        }


@dataclass
class Findings:
    """The items found so far, in the order the checks ran; each check appends to it."""

    items: list[CheckItem] = field(default_factory=list)

    def add(self, level: Level, key: str, message: str) -> None:
        self.items.append(CheckItem(level, key, message))
