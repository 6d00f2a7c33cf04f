"""tuner.stats.wording: how a fraction reads in the study's sentences."""

from __future__ import annotations

import math

import pytest

from tuner.stats.wording import percent


@pytest.mark.parametrize(
    ("fraction", "text"),
    [
        (0.008, "0.8%"),
        (0.0812, "8.1%"),
        (-0.025, "2.5%"),  # sentences say "faster"/"slower", so the sign is dropped
        (0.0, "0.0%"),
        (0.00042, "0.042%"),  # under 0.1%: two significant digits, not "0.0%"
        (1.5, "150.0%"),
        (math.inf, "∞%"),
        (math.nan, "∞%"),
    ],
)
def test_percent(fraction: float, text: str) -> None:
    assert percent(fraction) == text
