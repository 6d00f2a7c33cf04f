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


def argv_as_text(value: Any, example: str) -> Any:
    """A command from the space file as a list of texts; a shell string is refused.

    ``example`` is a list of arguments the error shows for this command.
    """
    if isinstance(value, str):
        raise ValueError(f"must be a list of arguments, e.g. {example}, not a shell string")
    if isinstance(value, list):
        return [as_text(v) for v in value]
    return value
