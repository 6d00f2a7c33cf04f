"""The server, probe and screening sections `tuner init` writes, each with its reason.

- ``server.startup_timeout_s`` from the weights on disk (tuner/init/startup.py), else
  tuner's default with the reason; a vLLM server gets a compile cache per configuration.
- ``probe:`` (the all-reduce probe, docs/probe.md) only beside NCCL params, its message
  sizes and layer count from the model's config.json (``probe_plan``, as the sweep sizes
  it), ``auto`` where config.json is not on this machine.
- ``screening:`` with ``--load-format dummy`` only where the server's ``--help`` lists
  ``--load-format`` (and ``dummy`` among its values, when it lists them): a flag it does
  not know would fail every screening launch at start; for a MoE model its comment says
  that screening launches simulate the trained router's spread (screening.moe_routing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuner.init.goals import Goal
from tuner.init.startup import COLD_READ_BYTES_PER_S, FIXED_S, startup_timeout_s
from tuner.init.survey import Survey
from tuner.probe.sizes import ProbePlanError, probe_plan
from tuner.space.model_limits import expert_count
from tuner.space.probe_spec import ProbeSpec
from tuner.space.screening import MOE_ROUTING_ENV
from tuner.space.spec import BenchmarkSpec

PROBE_COMMAND = [
    "{python}",
    "-m",
    "tuner",
    "probe",
    "allreduce",
    "--sizes",
    "{sizes}",
    "--repeats",
    "{repeats}",
]
LOAD_FORMAT = "--load-format"


@dataclass(frozen=True)
class Section:
    """A section's (or key's) value and the comment above it; ``value`` None: left out."""

    value: Any
    comment: str


def startup(survey: Survey) -> Section:
    """``server.startup_timeout_s``: the weights' cold load, else tuner's default."""
    if survey.weight_bytes is None:
        return Section(3600, "tuner's default: the weights were not found on this machine")
    gb = survey.weight_bytes / 1e9
    return Section(
        startup_timeout_s(survey.weight_bytes),
        f"{gb:,.1f} GB of weights on disk: {FIXED_S / 60:.0f} minutes (imports, compile, "
        f"graphs) + a cold read at {COLD_READ_BYTES_PER_S / 1e6:.0f} MB/s, to 5 minutes",
    )


def server_env(survey: Survey) -> Section:
    """A vLLM server's compile cache, one per configuration; nothing for other servers."""
    if not survey.vllm:
        return Section(None, "")
    return Section(
        {"VLLM_CACHE_ROOT": "{study_dir}/vllm-cache/{config}"},
        "A compile cache per configuration ({config} is its hash): a warm cache of another "
        "configuration would hide what a compilation change costs or brings.",
    )


def probe(survey: Survey, goal: Goal, nccl: bool) -> Section:
    """The all-reduce probe beside NCCL params, sized from config.json when it is here."""
    if not nccl:
        return Section(None, "")
    spec = ProbeSpec(command=PROBE_COMMAND)
    section: dict[str, Any] = {"command": PROBE_COMMAND, "sizes": "auto", "layers": "auto"}
    head = (
        "The all-reduce probe (docs/probe.md): before any model load, every NCCL setting's "
        "all-reduce is timed across the GPUs, with the trial's environment; a setting slower "
        "than the defaults is never launched. `tuner probe allreduce` needs torch in tuner's "
        "Python (vLLM brings it): without it `tuner check` warns and the sweep runs without "
        "the probe."
    )
    try:
        if survey.config is None:
            raise ProbePlanError("no config.json")
        plan = probe_plan(spec, BenchmarkSpec(**goal.benchmark), survey.config)
    except ProbePlanError:
        sized = (
            " sizes and layers: auto, from the model's config.json when it is on this machine "
            "(it was not when this file was written)."
        )
    else:
        section["sizes"] = [plan.by_level[c] for c in goal.levels]
        section["layers"] = plan.allreduces_per_token // spec.allreduces_per_layer
        hidden = section["sizes"][0] // (spec.bytes_per_element * goal.levels[0])
        where = survey.config.get("_tuner_config_path", "config.json")
        sized = (
            f" From {where}: sizes are hidden_size {hidden} x {spec.bytes_per_element} bytes "
            f"x each benchmark level {goal.levels}, one per level in order (change them with "
            "benchmark.concurrency); layers: num_hidden_layers."
        )
    section.update({"repeats": 5, "timeout_s": 300})
    return Section(section, head + sized)


def screening(survey: Survey) -> Section:
    """``--load-format dummy`` where the server's --help offers it; else why not."""
    values = survey.choices(LOAD_FORMAT)
    if survey.help.problem is not None:
        return Section(None, "screening: left out: the server's --help could not be read.")
    if not survey.accepts(LOAD_FORMAT):
        return Section(
            None,
            f"screening: left out: the server's --help has no {LOAD_FORMAT} (random weights "
            "for cheap searching launches); every launch loads the real weights.",
        )
    if values is not None and "dummy" not in values:
        listed = ", ".join(sorted(values))
        return Section(
            None,
            f"screening: left out: {LOAD_FORMAT} lists {listed}, not dummy; every launch "
            "loads the real weights.",
        )
    return Section(
        {"args": [LOAD_FORMAT, "dummy"]},
        "Screening launches (docs/space-file.md, screening): the search launches the server "
        "with random weights, which skips reading them; full launches of the real model "
        "decide (the defaults at the start, the final comparison before any answer). Safe "
        "for NCCL, compilation, CUDA graphs and scheduling, which act on kernels, "
        "communication and batching, not on the weights' values: screening ranks settings "
        f"and the full launches measure them.{_routing_note(survey)} `--trials` counts the "
        "full loads.",
    )


def _routing_note(survey: Survey) -> str:
    """For a MoE model: what screening launches do about random weights' routing."""
    experts = expert_count(survey.config) if survey.config is not None else None
    if not experts:
        return ""
    return (
        f" The model has {experts} routed experts, which a router with random weights "
        f"feeds unlike the trained one: screening launches add {MOE_ROUTING_ENV}="
        "uniform_random (screening.moe_routing: auto, where this vLLM knows the variable; "
        "`tuner check` says whether it does), experts drawn as the trained router spreads "
        "them, on average; `moe_routing: off` turns it off."
    )
