"""What `tuner init` finds on this host for a server command: a typed ``Survey``.

It reads what the space file's choices rest on, each with the helper `tuner check` and the
sweep use, so that the file and the check agree: the layout (TP x PP, from the argv), the
GPUs' topology (NVML), the server's ``--help`` (cached), the model's config.json (a local
folder or the Hugging Face cache, never downloaded) and the size of its weights on disk.
Whatever cannot be read is assumed instead, and said in one line of ``notes``: with no GPU
found, the layout's GPU count joined by PCIe without NVLink (the case where vLLM's custom
all-reduce is off and NCCL carries every all-reduce; a guess that keeps the NCCL knobs
searched rather than skipped).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.check.command import check_command, python_module
from tuner.check.flags import accepts
from tuner.check.help import HelpReader, HelpText, help_choices, help_options, server_help
from tuner.check.report import Findings
from tuner.init.command import served_command
from tuner.init.startup import weights_on_disk
from tuner.space.layout import Layout, last_value, layout_of
from tuner.space.model_limits import (
    baseline_argv,
    find_config_json,
    hub_cache_dirs,
    load_model_config,
    model_argument,
)
from tuner.space.spec import parse_space
from tuner.telemetry.topology import PairLink, Topology, TopologyRead, read_topology

REV = ("--revision",)


@dataclass(frozen=True)
class Survey:
    """The command as the file writes it, and what this host says about it."""

    command: tuple[str, ...]
    """As written in the file: the user's, with ``--host 127.0.0.1 --port {port}``."""
    argv: tuple[str, ...]
    """As a launch runs it (placeholders filled): what --help and the model are read from."""
    env: Mapping[str, str]
    layout: Layout
    topology: Topology | None
    """NVML's, or the one assumed without a GPU (``topology_read`` False)."""
    topology_read: bool
    help: HelpText
    model: str | None = None
    config: Mapping[str, Any] | None = None
    weight_bytes: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    """One line per thing not read, with what was assumed instead."""

    @property
    def vllm(self) -> bool:
        """A vLLM server: its --help is vLLM's grouped one, or its program is vllm."""
        module = python_module(self.argv) or ""
        return (
            self.help.vllm_style
            or Path(self.argv[0]).name == "vllm"
            or module.split(".")[0] == "vllm"
        )

    def accepts(self, flag: str) -> bool:
        """The server's --help lists ``flag`` (False when the help could not be read)."""
        if self.help.problem is not None:
            return False
        return accepts(flag, help_options(self.help.text), self.help.vllm_style)

    def choices(self, flag: str) -> set[str] | None:
        """The values the help lists for ``flag``; None when it lists none."""
        return help_choices(self.help.text).get(flag)


def survey(
    argv: Sequence[str],
    out: Path,
    *,
    gpus: TopologyRead | None = None,
    read_help: HelpReader | None = None,
    help_cache_dir: Path | None = None,
) -> Survey:
    """Read this host for ``argv``, to be written to ``out`` (``{space_dir}`` is its folder).

    ``gpus``: the topology as read already (None: NVML is read here). The environment is
    this process's, as the server's launches will inherit it."""
    env = dict(os.environ)
    command, replaced = served_command(argv)
    notes = [replaced] if replaced else []
    bare = parse_space({"server": {"command": command}}, out)
    run_argv, _ = baseline_argv(bare)
    layout = layout_of(run_argv)
    topology, read, note = _topology(gpus or read_topology(), layout)
    notes += [note] if note else []
    help_text = _help(run_argv, env, read_help, help_cache_dir)
    if help_text.problem is not None:
        notes.append(
            f"could not read the server's --help ({help_text.problem}): its flags (compilation, "
            "CUDA graphs, batching) and screening left out"
        )
    model = model_argument(run_argv)
    # Not resolved: a Hugging Face snapshot's config.json links to a blob, and the weights
    # lie beside the link, not beside the blob.
    found = None if model is None else find_config_json(model, env, last_value(run_argv, REV))
    config = load_model_config(bare) if found is not None else None
    weight_bytes = weights_on_disk(found.parent) if found is not None else None
    notes += _model_notes(model, found, config, weight_bytes, env)
    return Survey(
        command=tuple(command),
        argv=tuple(run_argv),
        env=env,
        layout=layout,
        topology=topology,
        topology_read=read,
        help=help_text,
        model=model,
        config=config,
        weight_bytes=weight_bytes,
        notes=tuple(notes),
    )


def assumed_topology(gpus: int) -> Topology:
    """``gpus`` GPUs, every pair over PCIe without NVLink (P2P unknown)."""
    pairs = tuple(PairLink(a, b, nvlink=False) for a in range(gpus) for b in range(a + 1, gpus))
    return Topology(gpus=gpus, pairs=pairs, source="assumed by tuner init")


def _topology(found: TopologyRead, layout: Layout) -> tuple[Topology | None, bool, str | None]:
    """NVML's topology, else the assumed one, and a note when assumed or short of GPUs."""
    if found.topology is not None:
        have = found.topology.gpus
        if have < layout.gpus:
            return (
                found.topology,
                True,
                f"this host has {have} GPU(s) and the command asks for {layout.describe()}: "
                "its launches fail here; write the file on the host that will run it",
            )
        return found.topology, True, None
    gpus = layout.gpus
    if gpus == 1:
        said = "as the command asks for no tensor or pipeline parallelism"
        return assumed_topology(1), False, f"no GPU found ({found.reason}): assumed 1 GPU, {said}"
    flags = "--tensor-parallel-size" if layout.pipeline_parallel == 1 else "TP x PP"
    return (
        assumed_topology(gpus),
        False,
        f"no GPU found ({found.reason}): assumed {gpus} GPUs joined by PCIe without NVLink, "
        f"as {flags} says",
    )


def _help(
    argv: Sequence[str],
    env: Mapping[str, str],
    read_help: HelpReader | None,
    cache_dir: Path | None,
) -> HelpText:
    """The server's --help, or why not: the program must exist before it is asked."""
    found = Findings()
    if not check_command(argv, env, found):
        return HelpText(problem=found.items[-1].message)
    return server_help(argv, env, cache_dir=cache_dir, read_help=read_help)


def _model_notes(
    model: str | None,
    found: Path | None,
    config: Mapping[str, Any] | None,
    weight_bytes: int | None,
    env: Mapping[str, str],
) -> list[str]:
    default = "startup_timeout_s at tuner's default, 3600 s"
    if model is None:
        return [
            "the command names no model (--model or `serve MODEL`): probe sizes and layers "
            f"left auto, {default}"
        ]
    if found is None:
        return [
            f"model config.json not found at {model} nor in the HF cache "
            f"({hub_cache_dirs(env)[0]}): probe sizes and layers left auto, {default}"
        ]
    notes = []
    if config is None:
        notes.append(f"{found} is not a JSON object: probe sizes and layers left auto")
    if weight_bytes is None:
        notes.append(
            f"no weight files (*.safetensors, *.bin, *.pt, *.gguf) beside {found}: {default}"
        )
    return notes
