"""Reading a space file: ``load_space(path)`` and ``parse_space``, with errors that name
the file, the key and the fix (docs/space-file.md).

The models of the file live one section to a module (``server:`` in server_spec.py,
``params:`` and ``constraints:`` in params_spec.py, ``benchmark:`` in benchmark_spec.py,
``objective:``/``objectives:`` in objective_spec.py, ``stop:`` and ``search:`` in
stop_spec.py, ``probe:`` in probe_spec.py, ``screening:`` in screening.py, goodput and
capacity in slo.py), joined by ``SpaceSpec`` in space_spec.py. This module re-exports
them, so the rest of tuner imports the space file's names from one place. ``default``
and the metric names are tuner/vocabulary.py's. What this module imports never imports
it back: the modules that read its models (settings.py, objectives.py,
secret_params.py) sit above it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tuner.errors import ConfigError
from tuner.secrets import redact_argv, secret_param, tag_choices
from tuner.space.benchmark_spec import BenchmarkSpec
from tuner.space.objective_spec import ObjectiveItem, ObjectiveSpec, known_metric
from tuner.space.params_spec import Constraint, ParamSpec, Scalar
from tuner.space.server_spec import ServerSpec
from tuner.space.space_spec import PER_GPU_METRICS, SpaceSpec
from tuner.space.stop_spec import SearchSpec, StopSpec
from tuner.vocabulary import DEFAULT

__all__ = [
    "DEFAULT",
    "PER_GPU_METRICS",
    "SHIPPED_SPACES",
    "BenchmarkSpec",
    "ConfigError",
    "Constraint",
    "ObjectiveItem",
    "ObjectiveSpec",
    "ParamSpec",
    "Scalar",
    "SearchSpec",
    "ServerSpec",
    "Space",
    "SpaceSpec",
    "StopSpec",
    "known_metric",
    "load_space",
    "parse_space",
    "resolve_space_path",
]


def _shipped_spaces() -> Path:
    # Package data of tuner, so an installed wheel has them too. In a checkout
    # tuner/search_spaces is a link to the top-level search_spaces/, the files people read.
    folder = resources.files("tuner") / "search_spaces"
    # Every pip install puts files on disk; {space_dir} needs a real folder to name.
    return folder if isinstance(folder, Path) else Path(str(folder))


SHIPPED_SPACES = _shipped_spaces()
"""Where `--space nccl.yaml` is looked up when no such file is in the working directory."""


class Space(BaseModel):
    """A loaded space: the spec plus where it came from and its study name.

    ``spec`` is what tuner reasons with, stores and shows: a secret param's choices are
    tags (``***``). ``secret_spec`` is the file as written, set only when it differs;
    the launch alone reads it (tuner/space/secret_params.py).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: SpaceSpec
    path: Path
    study_name: str
    secret_spec: SpaceSpec | None = Field(default=None, repr=False)


def resolve_space_path(name: str | Path) -> Path:
    """The file the user means: as given, else a shipped space of that name.

    A shipped space is returned resolved: in a checkout that is search_spaces/NAME, the
    file people read and edit, and ``{space_dir}`` is the same whichever way it was named.
    """
    path = Path(name)
    if path.is_file():
        return path
    for candidate in (SHIPPED_SPACES / path.name, SHIPPED_SPACES / f"{path.name}.yaml"):
        if candidate.is_file():
            return candidate.resolve()
    shipped = sorted(p.name for p in SHIPPED_SPACES.glob("*.yaml"))
    raise ConfigError(
        f"{name}: no such space file; shipped spaces are: {', '.join(shipped) or '(none)'}"
    )


def load_space(path: str | Path) -> Space:
    """Read and validate a space file; raise ConfigError naming file, key and fix."""
    resolved = resolve_space_path(path)
    try:
        raw = yaml.safe_load(resolved.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{resolved}: not valid YAML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{resolved}: cannot read: {exc}") from exc
    return parse_space(raw, resolved)


def parse_space(raw: Any, path: Path) -> Space:
    """Validate already-loaded YAML data (kept separate so tests need no files)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a space file is a mapping with at least a 'server:' key")
    try:
        spec = SpaceSpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_explain(path, exc)) from None
    try:
        hidden = _hide_secret_params(spec)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if hidden is None:
        return Space(spec=spec, path=path, study_name=spec.study or path.stem)
    return Space(spec=hidden, path=path, study_name=spec.study or path.stem, secret_spec=spec)


def _hide_secret_params(spec: SpaceSpec) -> SpaceSpec | None:
    """The spec with every secret param value tagged; None when it has no secret param.

    A param such as ``env: HF_TOKEN`` or ``args: [--api-key, "{value}"]`` (tuner/secrets.py
    ``secret_param``) has each choice but ``default`` as a tag (``***``, or ``***1``,
    ``***2``), and a flag param's literal secret args (``args: [--hf-token, hf_abc]``)
    read ``***``; only the launch puts the real values back
    (tuner/space/secret_params.py). Raises ValueError (with the key) for a secret param
    given as a range: a secret is a value to pass, not a number to search.
    """
    hidden: dict[str, ParamSpec] = {}
    for name, param in spec.params.items():
        update: dict[str, object] = {}
        if secret_param(param.model_dump(exclude_none=True)):
            if param.choices is None:
                target = param.env or " ".join(param.args or ())
                raise ValueError(
                    f"params.{name}: {target} looks like a secret: list its value under "
                    "'choices' (tuner stores it as ***), or set it in server.env"
                )
            tagged = tag_choices(param.choices)
            if tagged != param.choices:
                update["choices"] = tagged
        if param.args is not None:
            args = redact_argv(param.args)
            if args != param.args:
                update["args"] = args
        if update:
            hidden[name] = param.model_copy(update=update)
    if not hidden:
        return None
    return spec.model_copy(update={"params": {**spec.params, **hidden}})


def _explain(path: Path, exc: ValidationError) -> str:
    """One readable line per problem: file, dotted key, what is wrong and the fix."""
    lines = []
    for err in exc.errors():
        key = _key(err["loc"])
        if err["type"] == "extra_forbidden":
            msg = "unknown key; remove it or check its spelling (see docs/space-file.md)"
        elif err["type"] == "missing":
            msg = "required key is missing"
        else:
            msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{path}: {key}: {msg}")
    return "\n".join(lines)


def _key(loc: tuple[int | str, ...]) -> str:
    """The dotted key of an error; an ``objectives`` item as ``objectives[1].metric``."""
    if len(loc) >= 2 and loc[0] == "objectives" and isinstance(loc[1], int):
        return ".".join([f"objectives[{loc[1]}]", *(str(p) for p in loc[2:])])
    return ".".join(str(p) for p in loc) or "(top level)"
