"""The model's config.json as the probe reads it: ``probe.config_json`` first, else the
server command's model on this machine (tuner.space.model_limits, never downloaded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuner.errors import ConfigError
from tuner.space.model_limits import load_model_config
from tuner.space.spec import Space


def probe_model_config(space: Space) -> dict[str, Any] | None:
    """The config the probe and the ceiling use; ConfigError when ``probe.config_json``
    names a file that is not there or not a JSON object."""
    probe = space.spec.probe
    if probe is None or probe.config_json is None:
        return load_model_config(space)
    path = Path(probe.config_json).expanduser()
    if not path.is_absolute():
        path = space.path.resolve().parent / path
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{space.path}: probe.config_json: cannot read {path} as JSON ({exc}); give the "
            "path of the model's config.json (or its folder), relative to the space file"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{space.path}: probe.config_json: {path} is not a JSON object")
    data.setdefault("_tuner_config_path", str(path))
    return data
