"""One configuration of `tuner best`'s answer: its settings, how to deploy it, its estimate.

``config_entry`` turns an analysed configuration into the ``ConfigEntry`` every format
prints: every param, the env and args it deploys as, the server command with its
placeholders filled, the pooled mean with its interval, and with ``objective.per_gpu``
the GPUs its layout uses. ``ConfigEntry.to_json`` is part of `tuner best --format json`'s
contract (tuner/views/best.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.space.layout import layout_of
from tuner.space.model_limits import INSPECT_PORT, inspect_names
from tuner.space.settings import changed_from_defaults, server_argv, settings_from_params
from tuner.space.spec import Scalar, Space
from tuner.study.facts import analysis


@dataclass(frozen=True)
class ConfigEntry:
    """One configuration of the answer: its settings and its pooled estimate."""

    trial: int | None
    """The first trial that launched it (the one to name); None only without trials."""
    trials: tuple[int, ...]
    config: str
    """The configuration's hash (Settings.config_hash)."""
    params: Mapping[str, Scalar]
    """Every param of the space, ``default`` included."""
    env: Mapping[str, str]
    args: tuple[str, ...]
    value: float
    stderr: float
    interval: tuple[float, float] | None
    """The confidence interval of ``value``; None while it is unbounded."""
    launches: int
    reason: str | None = None
    """Why it is recommended; set on the recommended entry only."""
    command: tuple[str, ...] = ()
    """The space's server command, placeholders filled, with ``args`` appended: what a
    systemd drop-in runs (not in the JSON entry: see ``deploy`` of `tuner best -f json`)."""
    command_note: str | None = None
    """What in ``command`` the user should check (a port the sweep chose per launch)."""
    gpus: int | None = None
    """With ``objective.per_gpu``: the GPUs its layout uses (TP x PP); ``value`` is per GPU."""

    @property
    def total(self) -> float | None:
        """With ``objective.per_gpu``: the whole server's figure, ``value`` x ``gpus``."""
        return self.value * self.gpus if self.gpus is not None else None

    @property
    def changed(self) -> dict[str, Scalar]:
        """The params not at ``default``."""
        return changed_from_defaults(self.params)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trial": self.trial,
            "trials": list(self.trials),
            "config": self.config,
            "params": dict(self.params),
            "env": dict(self.env),
            "args": list(self.args),
            "value": self.value,
            "stderr": self.stderr,
            "interval": list(self.interval) if self.interval is not None else None,
            "launches": self.launches,
        }
        if self.gpus is not None:
            out["per_gpu"] = True
            out["gpus"] = self.gpus
            out["value_total"] = self.total
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def config_entry(space: Space, config: analysis.ConfigResult | None) -> ConfigEntry | None:
    """The entry of one analysed configuration, with the env and args it deploys as."""
    if config is None:
        return None
    settings = settings_from_params(space.spec, config.params)
    server = space.spec.server
    port = server.port if isinstance(server.port, int) else INSPECT_PORT
    command = server_argv(server, settings, port=port, **inspect_names(space))
    note = None
    if server.port == "auto" and any("{port}" in a for a in server.command):
        note = f"{{port}} is {port} here (the sweep chose a free port per launch): check it"
    return ConfigEntry(
        trial=config.trials[0] if config.trials else None,
        trials=tuple(config.trials),
        config=config.config_hash,
        params=dict(settings.params),
        env=dict(settings.env),
        args=tuple(settings.args),
        value=config.estimate.mean,
        stderr=config.estimate.se,
        interval=_interval(config, space.spec.stop.confidence),
        launches=len(config.launches),
        command=tuple(command),
        command_note=note,
        gpus=layout_of(command).gpus if space.spec.objective.per_gpu else None,
    )


def _interval(config: analysis.ConfigResult, confidence: float) -> tuple[float, float] | None:
    """The confidence interval of the configuration's mean; None while it is unbounded."""
    low, high = config.estimate.interval(confidence)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return (low, high)
