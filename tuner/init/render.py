"""The space file `tuner init` writes: YAML text with a comment above each choice.

The values go through ``yaml.safe_dump`` one by one (flow style, as the shipped spaces
write them), so quoting is YAML's own and the file loads as the values were built; the
comments are the reasons the survey, the params' rules and the sections gave. The layout
follows search_spaces/nccl.yaml: the header says what the file was written for and what
had to be assumed, each param carries its reason, and what was left out is listed where
it would have been.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

import yaml

from tuner.init import sections
from tuner.init.command import shown
from tuner.init.goals import Goal
from tuner.init.params import ParamChoice
from tuner.init.survey import Survey

WIDTH = 92
STOP = {"patience": 8, "min_gain": 0.01, "confidence": 0.95, "baseline_launches": 2,
        "confirmations": 1}  # fmt: skip
"""search_spaces/nccl.yaml's: two baselines, one confirmation of every apparent gain."""


def render_space(survey: Survey, goal: Goal, study: str, choice: ParamChoice, trials: int) -> str:
    """The whole file's text."""
    lines = _header(survey, goal, trials)
    lines.append(f"study: {flow(study)}")
    lines += _server(survey)
    lines += _params(choice)
    if choice.constraints:
        lines.append("constraints:")
        lines += [f"  - {flow(c)}" for c in choice.constraints]
    lines.append("benchmark:")
    lines += [f"  {key}: {flow(value)}" for key, value in goal.benchmark.items()]
    lines += comment(goal.comment)
    lines.append("objective:")
    lines += [f"  {key}: {flow(value)}" for key, value in goal.objective.items()]
    lines.append("stop:")
    lines += [f"  {key}: {flow(value)}" for key, value in STOP.items()]
    lines += _section("probe", sections.probe(survey, goal, choice.nccl))
    lines += _section("screening", sections.screening(survey))
    return "\n".join(lines) + "\n"


def flow(value: Any) -> str:
    """One value as YAML in flow style (``[a, '{port}']``, ``{env: X}``, ``'8'``)."""
    text = yaml.safe_dump([value], default_flow_style=True, sort_keys=False, width=10**6)
    return text.strip()[1:-1]


def comment(text: str, indent: int = 0) -> list[str]:
    """``text`` as ``#`` lines wrapped to the file's width; none for an empty text."""
    pad = " " * indent + "# "
    return [pad + line for line in _wrap(text, WIDTH - len(pad))]


def _wrap(text: str, width: int) -> list[str]:
    """Lines of ``text`` within ``width``, never breaking a flag or a path apart."""
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


def _header(survey: Survey, goal: Goal, trials: int) -> list[str]:
    topo = survey.topology
    where = "this host"
    if topo is not None:
        said = "from NVML" if survey.topology_read else "assumed, no GPU found"
        where = f"this host ({said}: {topo.summary()})"
    lines = [
        f"# Written by `tuner init` for {where}:",
        *[f"#     {line}" for line in _wrap(shown(survey.command), WIDTH - 6)],
        *comment(f"Goal: {goal.name}: {goal.summary}."),
    ]
    if survey.notes:
        lines.append("# What tuner init changed, could not read here, or assumed:")
        for note in survey.notes:
            lines += [
                ("#   - " if i == 0 else "#     ") + part
                for i, part in enumerate(_wrap(note, WIDTH - 6))
            ]
    lines += comment(
        "Each param below can act with this command on this host (its comment says how); what "
        "was left out is listed under params:, with why. Check the file with `tuner check "
        f"--space FILE`, then run it: `tuner run --space FILE --trials {trials}`."
    )
    return lines


def _server(survey: Survey) -> list[str]:
    lines = ["server:", *_wrapped_list("  command: ", survey.command)]
    env = sections.server_env(survey)
    if env.value is not None:
        lines.append("  env:")
        lines += comment(env.comment, 4)
        lines += [f"    {k}: {flow(v)}" for k, v in env.value.items()]
    lines.append("  port: auto")
    timeout = sections.startup(survey)
    lines += comment(timeout.comment, 2)
    lines.append(f"  startup_timeout_s: {flow(timeout.value)}")
    return lines


def _params(choice: ParamChoice) -> list[str]:
    lines = ["params:" if choice.params else "params: {}"]
    for param in choice.params:
        lines += comment(param.comment, 2)
        line = f"  {param.name}: {flow(param.spec)}"
        if len(line) <= WIDTH:
            lines.append(line)
        else:  # too wide for one line: one key a line
            lines.append(f"  {param.name}:")
            lines += [f"    {key}: {flow(value)}" for key, value in param.spec.items()]
    if choice.left_out:
        lines.append("  # Left out, with why:")
        for item in choice.left_out:
            lines += [
                ("  # - " if i == 0 else "  #   ") + part
                for i, part in enumerate(_wrap(f"{item.what}: {item.reason}", WIDTH - 6))
            ]
    return lines


def _section(name: str, section: sections.Section) -> list[str]:
    lines = comment(section.comment)
    if section.value is None:
        return lines
    lines.append(f"{name}:")
    for key, value in section.value.items():
        if isinstance(value, list) and key == "command":
            lines += _wrapped_list(f"  {key}: ", value)
        else:
            lines.append(f"  {key}: {flow(value)}")
    return lines


def _wrapped_list(head: str, items: Iterable[str]) -> list[str]:
    """A flow list over several lines, each within the width, continued under the first item."""
    words = [flow(item) for item in items]
    pieces = [word + ("," if i < len(words) - 1 else "]") for i, word in enumerate(words)]
    lines: list[str] = []
    current = head + "[" + pieces[0]
    for piece in pieces[1:]:
        if len(current) + 1 + len(piece) <= WIDTH:
            current += " " + piece
        else:
            lines.append(current)
            current = " " * (len(head) + 1) + piece
    lines.append(current)
    return lines
