"""The ``screening:`` section: which params screening launches judge, and what they cannot.

Without the section nothing is screened: an ``ok`` item says so. With it, one item says
what a screening launch adds and which params it judges, and each param screening cannot
judge gets an item with its reason (tuner/space/screening.py: a flag that acts through the
weights, or ``screen: false``): it is launched at full fidelity only. No param left to
screen is a warning: screening launches would measure the defaults alone. One more item
says whether screening launches add vLLM's MoE routing simulation, and why
(tuner/check/moe_routing.py).

A flag of ``screening.args`` (or a variable of ``screening.env``) that a param also sets
is an error naming both: a screening launch adds the section's last, so it overrides the
param and the screening launches would not judge that param. Whether the server accepts
the section's flags is :mod:`tuner.check.flags`' job, its variables' spelling
:mod:`tuner.check.nccl`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tuner.check.moe_routing import moe_routing
from tuner.check.report import Findings
from tuner.space.screening import ScreeningSpec, flag_name, unscreenable
from tuner.space.spec import Space


def check_screening(space: Space, found: Findings) -> None:
    """Report what the space's screening launches judge, and refuse a section that
    overrides a param."""
    spec = space.spec
    screening = spec.screening
    if screening is None:
        found.add(
            "ok",
            "screening",
            "no screening: section: nothing is screened, every launch loads the real "
            "weights (docs/space-file.md, screening)",
        )
        return
    _overlaps(space, screening, found)
    blocked = unscreenable(spec.params)
    screened = [name for name in spec.params if name not in blocked]
    adds = screening.adds_text()
    if not spec.params:
        found.add(
            "warning",
            "screening",
            f"screening launches add {adds}, but the space has no params to screen: leave "
            "the screening: section out",
        )
    elif screened:
        rest = "; the rest (below) at full fidelity only" if blocked else ""
        found.add(
            "ok",
            "screening",
            f"screening launches add {adds}; {len(screened)} of {len(spec.params)} "
            f"param(s) screened: {', '.join(screened)}{rest}",
        )
    else:
        found.add(
            "warning",
            "screening",
            f"screening launches add {adds}, but no param can be screened (each says why "
            "below): they would measure the defaults alone; leave the screening: section out",
        )
    found.add("ok", "screening.moe_routing", moe_routing(space).sentence())
    for name, why in blocked.items():
        found.add("ok", f"params.{name}", f"not screened ({why}): launched at full fidelity only")
    if screening.benchmark is not None:
        full, screen = spec.benchmark, spec.benchmark_for("screen")
        found.add(
            "ok",
            "screening.benchmark",
            f"screening launches run {screen.rounds} round(s) of {screen.requests} request(s) "
            f"a level, full ones {full.rounds} of {full.requests}: the search compares "
            "screening launches among themselves, the answer rests on full ones",
        )


def _overlaps(space: Space, screening: ScreeningSpec, found: Findings) -> None:
    """A flag or variable both the section and a param set: an error naming both."""
    ours = {flag_name(a) for a in _options(screening.args)}
    for name, param in space.spec.params.items():
        for arg in _options(param.args or ()):
            flag = flag_name(arg)
            if flag not in ours:
                continue
            found.add(
                "error",
                "screening.args",
                f"{flag} is set by params.{name} too: a screening launch adds screening.args "
                f"last, so it would override params.{name} and never judge it; remove "
                f"{flag} from screening.args, or params.{name} from the space",
            )
        if param.env is not None and param.env in screening.env:
            found.add(
                "error",
                f"screening.env.{param.env}",
                f"{param.env} is set by params.{name} too: a screening launch sets "
                f"screening.env last, so it would override params.{name} and never judge "
                f"it; remove {param.env} from screening.env, or params.{name} from the space",
            )


def _options(args: Iterable[str]) -> list[str]:
    """The options among args (``--flag``, ``--flag=value``, ``-q``), not their values."""
    return [a for a in args if a.startswith("-") and a not in ("-", "--") and not _number(a)]


def _number(arg: str) -> bool:
    return re.match(r"-\d", arg) is not None
