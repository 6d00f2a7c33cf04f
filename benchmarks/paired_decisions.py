"""Paired, deterministic check that the sweep decides the same before and after a change.

Runs seeded sweeps with tests/fakes.FakeRunner (no process; seeded between- and within-
launch noise) over search_spaces/sim.yaml's params, from the tuner checkout given first,
and prints one line per study: a hash of the launched (role, changed settings) sequence,
the launches, the stop reason and the recommended settings. sim.yaml's probe is seeded with
the study's seed (each NCCL setting's samples repeat from run to run), else its noise
would make the two checkouts' studies differ for no reason of theirs. Run it on two checkouts (each
with its own venv) and diff the outputs: a refactoring must print the same lines.

    git worktree add /tmp/before <commit>
    python benchmarks/paired_decisions.py /tmp/before 20 0.003 > before.txt
    python benchmarks/paired_decisions.py . 20 0.003 > after.txt && diff before.txt after.txt

Arguments: checkout, studies per case (10), relative noise sd (0.003), and ``noprobe`` to
drop sim.yaml's ``probe:`` section (the local search, plateau and futility stop then make
the decisions the probe otherwise settles). The cases are the search benchmark's flat
(nothing matters) and hidden-gain (three settings +2.5% each, +8% together). It reads the
earlier layouts too (run_sweep's keywords before issue 40, tuner/study/sweep.py before
issue 22, tuner.config before issue 11).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

Speed = Callable[[dict[str, Any]], float]


def flat(params: dict[str, Any]) -> float:
    return 100.0


def hidden_gain(params: dict[str, Any]) -> float:
    tree = params["NCCL_ALGO"] == "allreduce:tree"
    ll128 = params["NCCL_PROTO"] == "LL128"
    channels = str(params["NCCL_MAX_NCHANNELS"]) == "16"
    if tree and ll128 and channels:
        return 108.0
    return 100.0 * 1.025 ** (tree + ll128 + channels)


CASES: dict[str, tuple[Speed, int]] = {"flat": (flat, 20), "hidden-gain": (hidden_gain, 30)}


def main(root: Path, studies: int, noise: float, probe: bool = True) -> None:
    sys.path.insert(0, str(root))  # the checkout under test, before any installed tuner
    from tests.fakes import FakeRunner

    try:
        from tuner.space.spec import load_space
        from tuner.storage import Store
        from tuner.views.best import best_report

        try:
            from tuner.study.run.sweep import run_sweep
        except ImportError:  # before issue 22: the sweep was tuner/study/sweep.py
            from tuner.study.sweep import run_sweep  # type: ignore[no-redef]
        try:  # one request through the run (issue 40): the options and the seams
            from tuner.study.run.request import RunRequest, Seams
        except ImportError:
            RunRequest = None  # type: ignore[assignment,misc]

        def recommended(storage: str) -> dict[str, Any]:
            entry = best_report(storage, "p").recommended
            return dict(entry.params) if entry else {}

    except ImportError:  # the layout before the restructuring (issue 11)
        from tuner.config import load_space  # type: ignore[no-redef]
        from tuner.store import Store  # type: ignore[no-redef]
        from tuner.sweep import run_sweep  # type: ignore[no-redef]

        RunRequest = None  # type: ignore[assignment,misc]

        from tuner.report import best_report  # type: ignore[no-redef]

        def recommended(storage: str) -> dict[str, Any]:
            entry = best_report(storage, "p").get("recommended")  # type: ignore[attr-defined]
            return dict(entry["params"]) if entry else {}

    space = yaml.safe_load((root / "search_spaces" / "sim.yaml").read_text())
    space["study"] = "p"
    if not probe:
        space.pop("probe", None)
    space["server"]["command"] = ["srv", "--port", "{port}"]
    probe_command = list(space["probe"]["command"]) if "probe" in space else []
    for case, (speed, budget) in CASES.items():
        for seed in range(studies):
            if probe_command:  # the sim's probe draws its noise from the study's seed
                space["probe"]["command"] = [*probe_command, "--seed", str(seed)]
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "p.yaml"
                path.write_text(yaml.safe_dump(space))
                storage = f"sqlite:///{folder}/p.db"
                runner = FakeRunner(
                    Store(storage), "p", speed=speed, seed=seed, between=noise, within=noise
                )
                with contextlib.redirect_stdout(io.StringIO()):
                    if RunRequest is None:  # before issue 40: the options as keywords
                        result = run_sweep(  # type: ignore[call-arg]
                            load_space(path),
                            storage=storage,
                            n_trials=budget,
                            seed=seed,
                            runner=runner,
                        )
                    else:
                        request = RunRequest(storage, budget, seed=seed)
                        result = run_sweep(load_space(path), request, Seams(runner=runner))
                launched = [
                    [r, sorted((k, str(v)) for k, v in c.items())] for r, c in runner.launched
                ]
                digest = hashlib.sha1(json.dumps(launched).encode()).hexdigest()[:10]
                changed = {k: v for k, v in recommended(storage).items() if v != "default"}
                print(
                    case,
                    seed,
                    digest,
                    len(runner.launched),
                    result.stop_reason,
                    json.dumps(changed, sort_keys=True),
                    flush=True,
                )


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        Path(args[0]).resolve(),
        int(args[1]) if len(args) > 1 else 10,
        float(args[2]) if len(args) > 2 else 0.003,
        probe=(args[3] if len(args) > 3 else "probe") != "noprobe",
    )
