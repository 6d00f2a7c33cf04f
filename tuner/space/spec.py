"""The space file: pydantic models of its YAML, and ``load_space(path)`` with clear errors.

A space file says how to start the server (``server``), what to vary (``params``),
which combinations are impossible (``constraints``), how to measure (``benchmark``),
what to optimise (``objective``), when to stop (``stop``) and, optionally, a cheap
all-reduce probe to run before each launch (``probe``, docs/probe.md). Every error
names the file, the key and what to do about it; see docs/space-file.md.

About 550 lines, on purpose: one model per section of the file, with the validators that
tie sections together (a constraint naming a param, an objective level among the
benchmark's) and the steps of reading the file (the first of ``objectives:`` filling
``objective``, a secret param's choices as tags), so that the whole contract of the space
file reads in one place. The sections read by one package only live beside it:
``probe:`` in probe_spec.py, goodput and capacity in slo.py, ``objectives:`` resolved in
objectives.py; ``default`` and the metric names are tuner/vocabulary.py's. What this
module imports never imports it back: the modules that read its models (settings.py,
objectives.py, secret_params.py) sit above it.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tuner.errors import ConfigError
from tuner.secrets import redact_argv, secret_param, tag_choices
from tuner.space.limits import check_limits, parse_limit
from tuner.space.probe_spec import ProbeSpec
from tuner.space.screening import ScreeningSpec, weight_reason
from tuner.space.slo import CapacitySpec, check_goodput, check_slo_objective
from tuner.space.spec_base import StrictModel, argv_as_text, as_text
from tuner.vocabulary import DEFAULT as DEFAULT  # re-exported: tuner/study reads it here
from tuner.vocabulary import OBJECTIVE_METRICS


def known_metric(value: str) -> str:
    """``value`` when it is an objective metric; else ValueError listing them."""
    if value not in OBJECTIVE_METRICS:
        raise ValueError(f"unknown metric {value!r}; use one of: {', '.join(OBJECTIVE_METRICS)}")
    return value


def _shipped_spaces() -> Path:
    # Package data of tuner, so an installed wheel has them too. In a checkout
    # tuner/search_spaces is a link to the top-level search_spaces/, the files people read.
    folder = resources.files("tuner") / "search_spaces"
    # Every pip install puts files on disk; {space_dir} needs a real folder to name.
    return folder if isinstance(folder, Path) else Path(str(folder))


SHIPPED_SPACES = _shipped_spaces()
"""Where `--space nccl.yaml` is looked up when no such file is in the working directory."""

Scalar = bool | int | float | str


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


class BenchmarkSpec(StrictModel):
    """The fixed streaming benchmark every trial runs."""

    api: Literal["completions", "chat"] = "completions"
    model: str | None = None  # default: the first id of /v1/models
    prompt_tokens: int = Field(default=256, ge=1)
    max_tokens: int = Field(default=256, ge=1)
    concurrency: list[int] = Field(default_factory=lambda: [1], min_length=1)
    requests: int = Field(default=16, ge=1)
    warmup: int = Field(default=2, ge=0)
    rounds: int = Field(default=3, ge=1)
    ignore_eos: bool = True
    request_timeout_s: float = Field(default=600, gt=0)
    max_error_rate: float = Field(default=0.0, ge=0, le=1)
    cpus: list[int] | None = None
    goodput: dict[str, float] | None = None  # SLOs in ms (tuner/space/slo.py)
    capacity: CapacitySpec | None = None  # the concurrency search per round

    _goodput = field_validator("goodput")(check_goodput)

    @field_validator("concurrency", mode="before")
    @classmethod
    def _one_level(cls, value: Any) -> Any:
        return [value] if isinstance(value, int) else value

    @field_validator("concurrency")
    @classmethod
    def _positive_levels(cls, value: list[int]) -> list[int]:
        if any(c < 1 for c in value):
            raise ValueError("concurrency levels are positive integers")
        return value


class ObjectiveSpec(StrictModel):
    """What 'best' means: one metric at one concurrency level."""

    metric: str = "output_throughput"
    concurrency: int | None = None  # default: the first benchmark level
    direction: Literal["maximize", "minimize"] | None = None  # default: from the metric
    per_gpu: bool = False
    """Divide the metric by the GPUs each launch's layout uses (TP x PP,
    tuner/space/layout.py): layouts with different GPU counts compared per GPU."""
    subject_to: list[str] = Field(default_factory=list)
    """Limits a recommended configuration must meet, e.g. ``ttft_ms.p99@64 <= 2000``
    (tuner/space/limits.py parses them; tuner/study/facts/feasibility.py judges them)."""

    @property
    def label(self) -> str:
        """How trial lines name the objective's value: ``output_throughput/GPU`` per GPU."""
        return f"{self.metric}/GPU" if self.per_gpu else self.metric

    @field_validator("subject_to")
    @classmethod
    def _readable_limits(cls, value: list[str]) -> list[str]:
        return check_limits(value, level="required")  # ValueError: what to write instead

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        return known_metric(value)


class ObjectiveItem(StrictModel):
    """One of several objectives (``objectives:``): a metric at a level, and its direction."""

    metric: str
    concurrency: int | None = None  # default: the first benchmark level
    direction: Literal["maximize", "minimize"] | None = None  # default: from the metric

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        return known_metric(value)


class StopSpec(StrictModel):
    """When to stop searching, and what counts as a gain."""

    patience: int = Field(default=8, ge=1)
    min_gain: float = Field(default=0.01, ge=0)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    baseline_launches: int = Field(default=2, ge=1)
    confirmations: int = Field(default=1, ge=0)
    # While the confirmations leave the verdict open (it still looks better, but not yet
    # significantly), launch it again, up to this many confirmations in all.
    max_confirmations: int | None = Field(default=None, ge=0)
    # The futility stop (tuner/study/policy/futility.py): stop searching before the patience is
    # used up when the model gives every step from the best less than this chance of
    # beating it by min_gain. 0 turns it off.
    futility: float = Field(default=0.05, ge=0, lt=1)
    # The final comparison (tuner/study/policy/final_comparison.py): before a change is the
    # answer, it and the defaults are launched this many times each, fresh and interleaved,
    # and the answer rests on those launches alone (docs/statistics.md).
    final_launches: int = Field(default=2, ge=1, le=8)
    # ... and at most this many each at the look the cost plan sizes from the noise (the
    # launches a side that confirm the target gain four times in five), taken when the
    # first look neither passes nor refutes (tuner/stats/looks.py, docs/statistics.md).
    # The budget keeps the sized look's launches from the plan on. Default 6, 3 with
    # screening.
    final_launches_max: int | None = Field(default=None, ge=1, le=8)
    # The final comparison's confidence (two-sided; the answer needs the lower end above
    # min_gain, so a false gain is at most half of 1 - final_confidence a study). Stricter
    # than the search's own comparisons: a false gain is the one answer this tool must not
    # give, and the search's confidence only decides what to launch next.
    final_confidence: float = Field(default=0.99, gt=0.5, lt=1)

    @model_validator(mode="after")
    def _confirmation_bounds(self) -> StopSpec:
        if self.final_launches_max is not None and self.final_launches_max < self.final_launches:
            raise ValueError(
                f"final_launches_max ({self.final_launches_max}) is below final_launches "
                f"({self.final_launches}): raise it, or leave it out (6, or 3 with screening)"
            )
        if self.max_confirmations is not None and self.max_confirmations < self.confirmations:
            raise ValueError(
                f"max_confirmations ({self.max_confirmations}) is below confirmations "
                f"({self.confirmations}): raise it, or leave it out (confirmations + 2)"
            )
        return self

    @property
    def confirmation_cap(self) -> int:
        """Confirmation launches one configuration may get at most."""
        if self.max_confirmations is not None:
            return self.max_confirmations
        return self.confirmations + 2 if self.confirmations > 0 else 0


class SearchSpec(StrictModel):
    """How proposals are made (see tuner/study/policy/local_search.py)."""

    method: Literal["local", "tpe"] = "local"
    # local: change at most max_changes settings of the incumbent at a time, picked by a
    # model of each setting's effect (TPE once no neighbour is left); tpe: optuna's TPE.
    max_changes: int = Field(default=3, ge=1, le=4)


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


class SpaceSpec(StrictModel):
    """A whole space file."""

    study: str | None = None
    server: ServerSpec
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    constraints: list[Constraint] = Field(default_factory=list)
    benchmark: BenchmarkSpec = Field(default_factory=BenchmarkSpec)
    objective: ObjectiveSpec = Field(default_factory=ObjectiveSpec)
    objectives: list[ObjectiveItem] | None = None
    """Several objectives (docs/statistics.md, "Several objectives"); the first one also
    fills ``objective`` (see _first_objective), so one-objective code reads it unchanged."""
    stop: StopSpec = Field(default_factory=StopSpec)
    search: SearchSpec = Field(default_factory=SearchSpec)
    probe: ProbeSpec | None = None
    screening: ScreeningSpec | None = None
    """Screening launches (tuner/space/screening.py): None, every launch is a full one."""
    topology: str | None = None
    """A file with the server's GPU topology (saved ``nvidia-smi topo -m``, or tuner's
    topology JSON), relative to the space file: read instead of NVML (docs/topology.md)."""

    def benchmark_for(self, fidelity: str) -> BenchmarkSpec:
        """The benchmark a launch of ``fidelity`` runs: ``benchmark:``, with
        ``screening.benchmark``'s overrides on a screening launch ("screen")."""
        screening = self.screening
        if fidelity != "screen" or screening is None or screening.benchmark is None:
            return self.benchmark
        return self.benchmark.model_copy(update=screening.benchmark.changes())

    @property
    def search_patience(self) -> int:
        """Search trials without a significant gain before the plateau stop: with screening,
        ``screening.patience`` (default twice ``stop.patience``), else ``stop.patience``."""
        if self.screening is None:
            return self.stop.patience
        return self.screening.patience or 2 * self.stop.patience

    @property
    def final_launches_most(self) -> int:
        """The most launches a side the cost plan may size a final comparison's look to
        (tuner/study/facts/final_size.py): ``stop.final_launches_max``, by default 6, or 3
        with screening (its full loads, each a full model load, stay at 8 a study: a full
        baseline and 2 x 3); never below ``stop.final_launches``."""
        stop = self.stop
        if stop.final_launches_max is not None:
            return stop.final_launches_max
        cap = 3 if self.screening is not None else 6
        return max(stop.final_launches, cap)

    @model_validator(mode="before")
    @classmethod
    def _first_objective(cls, raw: Any) -> Any:
        return _merge_first_objective(raw)

    @field_validator("constraints", mode="before")
    @classmethod
    def _parse_constraints(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [Constraint.parse(v) if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> SpaceSpec:
        if self.screening is not None and (self.objectives or self.objective.subject_to):
            # Their answers may rest on the search's own launches (the Pareto front, a
            # configuration that meets limits the defaults break): never on screening ones.
            what = "several objectives" if self.objectives else "objective.subject_to limits"
            raise ValueError(
                f"screening: is not supported with {what} yet (their answer may rest on the "
                "search's launches, and a screening launch never makes an answer): remove "
                "the screening: section, or search with one objective and no limits"
            )
        for c in self.constraints:
            for side in (c.left, c.right):
                if not _is_number(side) and side not in self.params:
                    raise ValueError(
                        f"constraint '{c}' names {side!r}, which is not a param; "
                        f"params are: {', '.join(self.params) or '(none)'}"
                    )
        for i, item in enumerate(self.objectives or ()):
            if item.metric == "capacity":
                # The several-objective estimates read fixed levels (study/objective_values).
                raise ValueError(
                    f"objectives[{i}].metric is capacity, which is not supported among "
                    "several objectives yet: make it the one objective (objective.metric: "
                    "capacity), or use a metric at a level (e.g. goodput with benchmark.goodput)"
                )
            if item.metric == "goodput" and self.benchmark.goodput is None:
                raise ValueError(
                    f"objectives[{i}].metric is goodput but benchmark.goodput sets no SLO: add "
                    "e.g. benchmark.goodput: {ttft_ms: 1000, tpot_ms: 50} (milliseconds)"
                )
            if item.concurrency is not None and item.concurrency not in self.benchmark.concurrency:
                raise ValueError(
                    f"objectives[{i}].concurrency is {item.concurrency} but "
                    f"benchmark.concurrency runs {self.benchmark.concurrency}: add "
                    f"{item.concurrency} to benchmark.concurrency or pick one of those levels"
                )
        level = self.objective.concurrency
        if level is not None and level not in self.benchmark.concurrency:
            raise ValueError(
                f"objective.concurrency is {level} but benchmark.concurrency runs "
                f"{self.benchmark.concurrency}: add {level} to benchmark.concurrency "
                "or pick one of those levels"
            )
        _limit_levels(self.objective.subject_to, self.benchmark.concurrency)
        _per_gpu_fits(self)
        objective, bench = self.objective, self.benchmark
        check_slo_objective(
            objective.metric, objective.concurrency, objective.subject_to,
            bench.goodput, bench.capacity,
        )  # fmt: skip
        sizes = self.probe.sizes if self.probe is not None else "auto"
        if isinstance(sizes, list) and len(sizes) < len(self.benchmark.concurrency):
            raise ValueError(
                f"probe.sizes lists {len(sizes)} size(s) but benchmark.concurrency "
                f"runs {len(self.benchmark.concurrency)} level(s): give one message size "
                "in bytes per level, in order (hidden_size x bytes_per_element x the "
                "level's batch), or write sizes: auto"
            )
        return self

    @property
    def objective_concurrency(self) -> int:
        return self.objective.concurrency or self.benchmark.concurrency[0]

    @property
    def direction(self) -> Literal["maximize", "minimize"]:
        return self.objective.direction or OBJECTIVE_METRICS[self.objective.metric]


def _limit_levels(limits: list[str], levels: list[int]) -> None:
    """Every level an ``objective.subject_to`` limit names is a benchmark level."""
    for text in limits:
        level = parse_limit(text, level="required").level
        if isinstance(level, int) and level not in levels:
            raise ValueError(
                f"objective.subject_to: {text!r} names concurrency {level} but "
                f"benchmark.concurrency runs {levels}: add {level} to benchmark.concurrency "
                "or name one of those levels (or @* for every level)"
            )


PER_GPU_METRICS = ("output_throughput", "request_throughput", "total_throughput", "goodput")
"""Metrics that add up over GPUs, so that a share per GPU means something."""


def _per_gpu_fits(spec: SpaceSpec) -> None:
    """``objective.per_gpu`` only where a value per GPU can be computed and is read."""
    objective = spec.objective
    if not objective.per_gpu:
        return
    if spec.objectives:
        raise ValueError(
            "objective.per_gpu is set with objectives: (several objectives), which are read "
            "from the stored levels as measured: remove objective.per_gpu, or use one "
            "objective: {metric, concurrency, per_gpu: true}"
        )
    if objective.metric not in PER_GPU_METRICS:
        raise ValueError(
            f"objective.per_gpu: {objective.metric} is not a throughput, so it does not divide "
            f"by GPUs: use one of {', '.join(PER_GPU_METRICS)}, or remove per_gpu"
        )
    if spec.probe is not None:
        raise ValueError(
            "objective.per_gpu is set with a probe: section, whose decode-step estimate reads "
            "the objective as a whole server's throughput: remove one of them"
        )


_OBJECTIVE_FIELDS = ("metric", "concurrency", "direction")


def _merge_first_objective(raw: Any) -> Any:
    """The raw space with ``objectives[0]``'s fields copied into ``objective`` (its
    ``subject_to`` kept), so what reads one objective reads the first of several
    (tuner/space/objectives.py resolves them all); ValueError, with the fix, for a list
    that is not one."""
    if not isinstance(raw, dict) or raw.get("objectives") is None:
        return raw
    items = raw["objectives"]
    if not isinstance(items, list):
        raise ValueError(
            "objectives: write a list of items {metric, concurrency, direction}, e.g. "
            "[{metric: output_throughput, concurrency: 1}, {metric: output_throughput, "
            "concurrency: 64}]"
        )
    if len(items) < 2:
        raise ValueError(
            f"objectives lists {len(items)} item(s): several objectives need at least 2; for "
            "one, write objective: {metric: ..., concurrency: ...} instead"
        )
    objective = raw.get("objective") or {}
    if isinstance(objective, dict) and any(k in objective for k in _OBJECTIVE_FIELDS):
        given = ", ".join(f"objective.{k}" for k in _OBJECTIVE_FIELDS if k in objective)
        raise ValueError(
            f"objectives and {given} are both set: use one of them (objectives: for several, "
            "objective: for one); objective.subject_to may stay, it holds the limits of either"
        )
    first = items[0]
    if not isinstance(objective, dict) or not isinstance(first, dict):
        return raw
    if first.get("metric") not in OBJECTIVE_METRICS:
        return raw  # objectives[0].metric's own error says what to write
    merged = {**objective, **{k: first[k] for k in _OBJECTIVE_FIELDS if first.get(k) is not None}}
    return {**raw, "objective": merged}


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


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
