"""A simulated vLLM OpenAI server for tuner's demo and tests, calibrated to real measurements.

Run it with ``python -m tuner.sim --port N [--profile NAME] ...`` (see docs/simulator.md).
From Python, the speed model is pure and needs no server: :func:`expected_output_throughput`
gives the noise-free tok/s for a profile, settings and concurrency, and :func:`parse_settings`
turns a command line and environment into those settings. Importing this package stays light:
aiohttp is only loaded by the server itself.
"""

from __future__ import annotations

from tuner.sim.cli import main
from tuner.sim.model import expected_output_throughput, relative_speed, step_time
from tuner.sim.profiles import HIDDEN_GAIN_COMBINATION, PROFILES, Profile, get_profile
from tuner.sim.settings import ArgError, SimSettings, build_parser, parse_settings

__all__ = [
    "HIDDEN_GAIN_COMBINATION",
    "PROFILES",
    "ArgError",
    "Profile",
    "SimSettings",
    "build_parser",
    "expected_output_throughput",
    "get_profile",
    "main",
    "parse_settings",
    "relative_speed",
    "step_time",
]
