"""How the statistics' figures read in sentences (NoiseEstimate, Comparison, recommend)."""

from __future__ import annotations

import math


def percent(fraction: float) -> str:
    """0.008 -> '0.8%'; small figures keep two significant digits; the sign is dropped."""
    if math.isinf(fraction) or math.isnan(fraction):
        return "∞%"
    value = abs(fraction) * 100
    if value != 0 and value < 0.1:
        return f"{value:.2g}%"
    return f"{value:.1f}%"


def faster_or_slower(gain: float) -> str:
    """The word for a signed gain (positive: better): 'faster' or 'slower'."""
    return "faster" if gain >= 0 else "slower"
