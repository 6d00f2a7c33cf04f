"""The space file's ``params:`` and ``constraints:`` sections: the knobs, and which of
their combinations are impossible."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from tuner.space.screening import weight_reason
from tuner.space.spec_base import StrictModel, as_text

Scalar = bool | int | float | str


class ParamSpec(StrictModel):
    """One knob: where its value goes (``env`` or ``args``) and which values to try."""

    env: str | None = None
    args: list[str] | None = None
    choices: list[Scalar] | None = None
    int_range: Annotated[list[int] | None, Field(alias="int")] = None
    float_range: Annotated[list[float] | None, Field(alias="float")] = None
    log: bool = False
    step: float | None = None
    screen: bool | None = None
    """False: never judged on a screening launch (tuner/space/screening.py); None: tuner
    decides (a flag that acts through the weights is not screened)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("args", mode="before")
    @classmethod
    def _args_as_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [as_text(v) for v in value]
        return value

    @model_validator(mode="after")
    def _one_target_one_domain(self) -> ParamSpec:
        if (self.env is None) == (self.args is None):
            raise ValueError(
                "needs exactly one of 'env: VARIABLE' or 'args: [--flag, \"{value}\"]'"
            )
        if self.args is not None and not any("{value}" in a for a in self.args):
            # A flag without a value (e.g. --enforce-eager) is a choice between the flag
            # and nothing: choices [default, true].
            pass
        domains = [d for d in (self.choices, self.int_range, self.float_range) if d is not None]
        if len(domains) != 1:
            raise ValueError(
                "needs exactly one of 'choices: [...]', 'int: [lo, hi]', 'float: [lo, hi]'"
            )
        if self.screen is True and weight_reason(self) is not None:
            raise ValueError(
                f"says 'screen: true', but {weight_reason(self)}: random weights cannot "
                "judge it, so it is launched at full fidelity only; remove 'screen: true'"
            )
        if self.choices is not None and len(self.choices) == 0:
            raise ValueError("'choices' is empty: list at least one value, e.g. [default, 4, 8]")
        for rng in (self.int_range, self.float_range):
            if rng is not None:
                if len(rng) != 2 or rng[0] > rng[1]:
                    raise ValueError("a range is [low, high] with low <= high")
                if self.log and rng[0] <= 0:
                    raise ValueError("'log: true' needs a range above 0")
        return self

    @property
    def is_flag(self) -> bool:
        """An argument without ``{value}``: present when chosen, absent at default."""
        return self.args is not None and not any("{value}" in a for a in self.args)


_CONSTRAINT = re.compile(
    r"^\s*([A-Za-z_][\w.-]*)\s*(<=|>=|==|!=|<|>)\s*([A-Za-z_][\w.-]*|-?\d+(?:\.\d+)?)\s*$"
)


class Constraint(StrictModel):
    """``left op right`` where each side is a param name or a number; parsed, never eval'ed."""

    left: str
    op: Literal["<=", ">=", "==", "!=", "<", ">"]
    right: str

    @classmethod
    def parse(cls, text: str) -> Constraint:
        match = _CONSTRAINT.match(text)
        if not match:
            raise ValueError(
                f"cannot read constraint {text!r}: write 'PARAM OP PARAM' or 'PARAM OP NUMBER' "
                "with OP one of <= >= == != < >"
            )
        return cls(left=match[1], op=match[2], right=match[3])  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"
