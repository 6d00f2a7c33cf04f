"""The report's "What a launch costs": each fidelity's load in phases, and why a full one
takes what it takes, with the lever most likely to cut it.

The medians are tuner/study/facts/load_costs.py's; the explanation, with its figures and
the lever's source, tuner/study/facts/load_explained.py's.
"""

from __future__ import annotations

from tuner.launcher.load_phases import PHASE_LABELS
from tuner.report.svg import esc
from tuner.study.facts.load_costs import PARTS, LoadCosts, load_costs_sentence
from tuner.study.facts.load_explained import LoadExplained


def load_section(costs: LoadCosts, explained: LoadExplained | None) -> str:
    """The table of loads per fidelity, then the explanation of a full one (when known)."""
    return load_costs_table(costs) + load_explained_html(explained)


def load_costs_table(costs: LoadCosts) -> str:
    """Per fidelity, the median load and its phases as the server's logs told them."""
    head = "".join(f"<th>{esc(PHASE_LABELS[part])} (s)</th>" for part in PARTS)
    rows = []
    for cost in costs.measured:
        cells = "".join(
            f"<td class=num>{cost.phases[part]:.1f}</td>" if part in cost.phases else "<td>–</td>"
            for part in PARTS
        )
        name = "screening" if cost.fidelity == "screen" else "full"
        rows.append(
            f"<tr><td>{esc(name)}</td><td class=num>{cost.launches}</td>"
            f"<td class=num>{cost.with_phases}</td><td class=num>{cost.healthy_s:.1f}</td>"
            f"{cells}</tr>"
        )
    sentence = load_costs_sentence(costs) or ""
    return (
        f'<p id="load-costs-sentence">{esc(_capital(sentence))}.</p>'
        '<p class="note">Medians per fidelity; each phase as the server\'s log printed it '
        "(weights, torch.compile, CUDA graph capture), the rest is the time to healthy "
        'less those (docs/launcher.md, "The phases of a load").</p>'
        '<table id="load-costs-table"><tr><th>fidelity</th><th>launches</th>'
        f"<th>with phases</th><th>to healthy (s)</th>{head}</tr>{''.join(rows)}</table>"
    )


def load_explained_html(explained: LoadExplained | None) -> str:
    """Why a full load of the defaults takes that long, and its lever; empty when unknown."""
    if explained is None:
        return ""
    return f'<p id="load-explained">{esc(_capital(explained.sentence()))}.</p>'


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
