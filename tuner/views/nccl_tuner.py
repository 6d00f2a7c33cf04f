"""`tuner best --format nccl-tuner`: the CSV table of NCCL's example tuner plugin.

From the probes a study stored (tuner/study/run/probe.py: the defaults and every NCCL
value alone, at the decode and the prefill sizes), tuner/probe/per_size.py picks per size
the fastest setting significantly faster than the default's; this module writes those
choices in the format the plugin's README documents (NVIDIA/nccl, plugins/tuner/example
since 2.29, ext-tuner/example before; read by NCCL 2.27 and later, docs/deploy.md):

    collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff

(its rules live in tuner/probe/plugin_table.py, which `tuner check` reads tables with).
Lines starting with ``#`` are comments to the plugin, so the header, what each size
measured and the environment that loads the table are comments. The plugin reads lines
of at most 255 characters (a longer one is cut, its rest read as a row): every line here
is shorter. With no size won, the file holds comments only: NCCL keeps its own choice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.errors import ConfigError
from tuner.probe.per_size import (
    ASSUMED_ALGORITHM,
    SizeChoice,
    SizeRange,
    per_size_choices,
    plugin_choice,
    size_ranges,
)
from tuner.probe.plugin_table import HEADER, MAX_LINE, PluginRow
from tuner.probe.run import ProbeResult
from tuner.space.settings import baseline_params
from tuner.space.spec import Space
from tuner.stats.wording import percent
from tuner.study import attrs
from tuner.study.run.probe_cache import Probed, nccl_key

PLUGIN_PATH = "/path/to/libnccl-tuner-example.so"
"""A placeholder: where the user built the plugin (docs/deploy.md); tuner cannot know it."""
CSV_PATH = "/path/to/nccl_tuner.csv"
"""A placeholder: where the user saves this output."""


@dataclass(frozen=True)
class NcclTunerTable:
    """The per-size choices of one study and the rows they make."""

    study: str
    decisions: tuple[SizeChoice, ...]
    ranges: tuple[SizeRange, ...]
    prefill: frozenset[int]
    n_ranks: int
    """The probe's world size (the rows match only it), -1 when the probe did not say."""
    envs: Mapping[str, Mapping[str, str]]
    """Probe key -> what its NCCL environment sets beyond the default's, for the comments."""

    def env_lines(self) -> list[str]:
        """What loads the table: both paths are placeholders to set."""
        return [f"NCCL_TUNER_PLUGIN={PLUGIN_PATH}", f"NCCL_TUNER_CONFIG_FILE={CSV_PATH}"]

    def csv_text(self) -> str:
        lines = [
            f"# NCCL tuner plugin table from study {self.study}'s all-reduce probes (tuner best",
            "# --format nccl-tuner). Read by NCCL's example tuner plugin, NCCL 2.27 and later:",
            "# build it and load it as docs/deploy.md says. As shipped the plugin caps every",
            "# collective it sees at 1 channel: set its *nChannels = 1 to 0 (docs/deploy.md).",
            f"# {HEADER}",
        ]
        for d in self.decisions:
            lines.append("# " + _decision_text(d, d.size in self.prefill, self.envs))
        if any(r.choice.algorithm_assumed for r in self.ranges):
            lines.append(
                f"# Algorithm {ASSUMED_ALGORITHM}: the probed setting fixed only the protocol; "
                "a row must name an algorithm, and ring is NCCL's usual one within a node"
            )
        if not self.ranges:
            lines.append(
                "# No probed size has a setting significantly faster than the default's: "
                "keep NCCL's own choice (this file sets nothing)."
            )
        else:
            lines.append(
                "# Between probed sizes the boundary is their geometric mean; the smallest "
                "size's row reaches down to 0, the largest's up to 4294967295."
            )
        for r in self.ranges:
            c = r.choice
            row = PluginRow(
                "allreduce", r.min_bytes, r.max_bytes, c.algorithm, c.protocol, c.channels,
                n_nodes=1, n_ranks=self.n_ranks,
            )  # fmt: skip
            lines.append(row.line())
        lines.append("# Load it with (both paths are yours to set):")
        lines.extend(f"#   {line}" for line in self.env_lines())
        return "\n".join(_fit(line) for line in lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [
                {
                    "min_bytes": r.min_bytes,
                    "max_bytes": r.max_bytes,
                    "algorithm": r.choice.algorithm,
                    "protocol": r.choice.protocol,
                    "channels": r.choice.channels,
                    "sizes": list(r.sizes),
                }
                for r in self.ranges
            ],
            "sizes": [
                {
                    "size": d.size,
                    "prefill": d.size in self.prefill,
                    "default_us": d.default_us,
                    "env": dict(self.envs[d.key]) if d.key is not None else None,
                    "comparison": d.comparison.to_json() if d.comparison else None,
                }
                for d in self.decisions
            ],
            "n_ranks": self.n_ranks,
            "env": self.env_lines(),
        }


def nccl_tuner_table(space: Space, study: optuna.Study) -> NcclTunerTable | None:
    """The table of ``study``'s stored probes; None without a probe of the defaults."""
    plan = study.user_attrs.get(attrs.PROBE_PLAN) or {}
    cache: Mapping[str, Any] = study.user_attrs.get(attrs.PROBES) or {}
    results: dict[str, ProbeResult] = {}
    for key, data in cache.items():
        probed = Probed.from_json(key, data)
        if probed.result is not None:
            results[key] = probed.result
    default_key = nccl_key(space, baseline_params(space.spec))
    if default_key not in results:
        return None
    default_env = json.loads(default_key)
    envs = {key: json.loads(key) for key in results}
    choices = {}
    for key, env in envs.items():
        choice = plugin_choice(env, default_env)
        if choice is not None:
            choices[key] = choice
    sizes = plan.get("sizes") or sorted(results[default_key].samples)
    confidence = space.spec.stop.confidence
    decisions = per_size_choices(
        results, choices, default_key, [int(s) for s in sizes], confidence=confidence
    )
    world = results[default_key].extra.get("world_size")
    return NcclTunerTable(
        study=study.study_name,
        decisions=tuple(decisions),
        ranges=tuple(size_ranges(decisions)),
        prefill=frozenset(int(s) for s in plan.get("prefill_sizes", ())),
        n_ranks=world if isinstance(world, int) and world > 0 else -1,
        envs={
            key: {k: v for k, v in env.items() if default_env.get(k) != v}
            for key, env in envs.items()
        },
    )


def require_table(table: NcclTunerTable | None, study: str) -> NcclTunerTable:
    """The table, or the error that says how to get one."""
    if table is None:
        raise ConfigError(
            f"study {study!r} has no probe of the defaults, so no per-size NCCL table: add a "
            "probe: section to the space file (docs/probe.md) and run the study"
        )
    return table


def _fit(line: str) -> str:
    """A comment cut to the plugin's line buffer: past it, the plugin would read the rest
    of the line as a row of its own (rows are numbers and short names: never that long)."""
    if len(line.encode()) <= MAX_LINE:
        return line
    cut = line.encode()[: MAX_LINE - 3].decode(errors="ignore")
    return cut + "..."


def _decision_text(d: SizeChoice, prefill: bool, envs: Mapping[str, Mapping[str, str]]) -> str:
    kind = "prefill" if prefill else "decode"
    head = f"{d.size} bytes ({kind}): default {d.default_us:.4g} us"
    if d.key is None or d.comparison is None:
        return (
            f"{head}; none of the {d.candidates} settings a row can express is significantly "
            "faster: NCCL's own choice"
        )
    env = " ".join(f"{k}={v}" for k, v in sorted(envs[d.key].items())) or "(defaults)"
    cmp = d.comparison
    # ASCII only: the plugin's line buffer counts bytes, and spreadsheets guess encodings.
    gain, half = percent(cmp.gain), percent(cmp.half_width)
    return f"{head}; {env} {cmp.us:.4g} us, {gain} +/- {half} faster"
