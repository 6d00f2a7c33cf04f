"""The space file's ``server:`` section: how to start one server, and where it listens."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from tuner.space.spec_base import StrictModel, argv_as_text, as_text


class ServerSpec(StrictModel):
    """How to start one server: an argv list (never a shell string) and fixed env."""

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int | Literal["auto"] = "auto"
    health_path: str = "/health"
    startup_timeout_s: float = Field(default=3600, gt=0)
    stop_timeout_s: float = Field(default=60, gt=0)
    cpus: list[int] | None = None
    gpus: int | None = Field(default=None, ge=1)
    """GPUs the server may use: a layout (TP x PP) needing more is refused before launch
    (tuner/space/layout.py); None: not checked."""

    @field_validator("env", mode="before")
    @classmethod
    def _env_values_as_text(cls, value: Any) -> Any:
        # YAML turns `1` into an int; an environment only holds text.
        if isinstance(value, dict):
            return {str(k): as_text(v) for k, v in value.items()}
        return value

    @field_validator("command", mode="before")
    @classmethod
    def _command_as_text(cls, value: Any) -> Any:
        return argv_as_text(value, "[vllm, serve, MODEL, --port, '{port}']")

    @model_validator(mode="after")
    def _port_placeholder(self) -> ServerSpec:
        if self.port == "auto" and not any("{port}" in arg for arg in self.command):
            raise ValueError(
                "server.command has no '{port}' but server.port is 'auto': add "
                "--port '{port}' to the command, or set server.port to a number"
            )
        return self
