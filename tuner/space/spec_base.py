"""What every model of the space file shares: unknown keys are errors, values read as text."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must not silently become a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def as_text(value: Any) -> str:
    """A YAML scalar as the text a command line or an environment gets (true -> "1")."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)
