"""The whole space file: ``SpaceSpec`` joins its sections and checks how they fit together.

Each section's model lives in its own module (server_spec.py, params_spec.py,
benchmark_spec.py, objective_spec.py, stop_spec.py, probe_spec.py, screening.py, slo.py);
what one section alone cannot know is checked here: a constraint naming a param, an
objective's level among the benchmark's, ``per_gpu`` only where a value per GPU is read,
a probe size per benchmark level, no screening under several objectives or limits, nor
under an objective on a launch's load (nor a probe).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from tuner.space.benchmark_spec import BenchmarkSpec
from tuner.space.limits import parse_limit
from tuner.space.objective_spec import ObjectiveItem, ObjectiveSpec, merge_first_objective
from tuner.space.params_spec import Constraint, ParamSpec
from tuner.space.probe_spec import ProbeSpec
from tuner.space.screening import ScreeningSpec
from tuner.space.server_spec import ServerSpec
from tuner.space.slo import check_slo_objective
from tuner.space.spec_base import StrictModel
from tuner.space.stop_spec import SearchSpec, StopSpec
from tuner.vocabulary import OBJECTIVE_METRICS, is_load_metric


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
        return merge_first_objective(raw)

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
        _load_objective_fits(self)
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


def _load_objective_fits(spec: SpaceSpec) -> None:
    """An objective on a launch's load (``time_to_healthy_s``, ...) is judged on full launches
    without a probe: a screening launch draws random weights (its load says nothing of
    reading them), and the probe weighs NCCL values by their share of a decode step."""
    loads = [
        m
        for m in (spec.objective.metric, *(o.metric for o in spec.objectives or ()))
        if is_load_metric(m)
    ]
    if not loads:
        return
    if spec.screening is not None:
        raise ValueError(
            f"screening: with an objective on {loads[0]}: a screening launch loads random "
            "weights, so its load says nothing of the real one's: remove the screening: section"
        )
    if spec.probe is not None:
        raise ValueError(
            f"probe: with an objective on {loads[0]}: the probe judges NCCL values by their "
            "share of a decode step, not of a load: remove the probe: section"
        )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
