"""`tuner check --plan`: the cost plan of a space before its study runs.

The figures come from tuner/study/run/plan_launch.py: the study's stored baseline launches
in ``--storage`` if it has them, else one launch of the defaults into a temporary
database (nothing is added to the study). Here: which of the two, said before it
happens, and the launch's notices; tuner/views/plan_text.py says the plan, with why a
full load takes what it takes (tuner/study/facts/load_explained.py: the stored study's
inventory, or this machine's for the launch made here).
"""

from __future__ import annotations

import dataclasses

from rich.console import Console

from tuner.space.spec import Space
from tuner.storage import Store
from tuner.study.facts.load_explained import (
    LoadHost,
    explain_load,
    explain_study_load,
    offered_flags,
)
from tuner.study.facts.plan import CostPlan
from tuner.study.run.plan_launch import baseline_plan, launch_baseline_once, stored_baseline
from tuner.views.console import MessageObserver


def check_plan(space: Space, storage: str, *, console: Console) -> CostPlan:
    """The plan of ``space``: from the stored baseline if there is one, else one launch."""
    found = stored_baseline(space, storage)
    if found is not None:
        console.print(
            f"plan: from the baseline launches of study {space.study_name!r} in {storage}"
        )
        facts, rows = found
        load = explain_study_load(Store(storage, read_only=True), space, rows)
    else:
        console.print("plan: launching the defaults once to measure the noise of a launch")
        facts, rows = launch_baseline_once(space, observer=MessageObserver(console))
        load = explain_load(rows, LoadHost.here(space), offered_flags(space))
    return dataclasses.replace(baseline_plan(space, facts, rows), load=load)
