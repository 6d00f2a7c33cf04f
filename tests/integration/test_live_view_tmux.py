"""The live view as a person sees it: `tuner run` on the demo space in a real terminal (tmux),
80 columns, then 120, its screen read a few times a second.

What must hold on every screen: no "None", the view's two lines whole (no line cut mid-word,
no tqdm ETA cut short); during the benchmark the trial's line moves with the requests done;
once the cost plan is said, the study's and the trial's time left appear. Skipped without
tmux (.ci/run installs it on CI).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

# Alone: it reads the screen every 0.25 s for a benchmark round seen part-done; beside
# another test's sweep on 2 cores it missed that once (1 of 124 passed beside it).
pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
SPACE = ROOT / "search_spaces" / "sim.yaml"
TRIALS = 5
CLOCK = re.compile(r"\b\d+:\d\d:\d\d\b")
LEFT = re.compile(r"\b\d+(?:\.\d+)? (?:s|min|h)(?: to \d+(?:\.\d+)? (?:s|min|h))? left\b")
REQUESTS = re.compile(r"trial (\d+) .*round (\d+)/\d+ .*?(\d+)/(\d+) requests")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_VOCABULARY = (
    "study launches time left left: after baseline checking the space and server all-reduce "
    "probe NCCL settings choosing next launch trial starting stopping benchmark round "
    "concurrency requests warm-up connecting s min h to longer than planned loading defaults "
    "(baseline) (search) (confirm) (simplify) (final)"
)
VIEW_WORDS = set(_VOCABULARY.split())
NUMBER = re.compile(r"\d+(?:\.\d+)?%?|\d+/\d+|\d+:\d\d:\d\d")

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """A private tmux server (its own socket) running one command in a detached session."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.env = env

    def __call__(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.name, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return out.stdout

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], env=self.env, capture_output=True)


def _live_lines(screen: str) -> list[str]:
    """The live view's lines: the study's ("  study ...") and the one under it."""
    lines = screen.rstrip("\n").split("\n")
    for i, line in enumerate(lines):
        if line.startswith("  study ") and CLOCK.search(line) and i + 1 < len(lines):
            return [line, lines[i + 1]]
    return []


def _source_words(runs: Path) -> set[str]:
    """Every word the servers logged and every setting the space names: a live line's
    words come from these or the view's own vocabulary, never a piece of one."""
    words: set[str] = set()
    for log in runs.rglob("*.log"):
        for word in log.read_text(errors="replace").split():
            words.add(word.strip(":|,;"))
    space = yaml.safe_load(SPACE.read_text())
    words.add(space["study"])
    for name, param in space["params"].items():
        for value in param.get("choices", []):
            words.add(f"{name}={value}")
            words.add(f"{name}={str(value).lower()}")
            words.add(f"{name}={'True' if value is True else value}")
    return words


def _broken_word(word: str, sources: set[str]) -> bool:
    return not (word in VIEW_WORDS or word in sources or NUMBER.fullmatch(word))


@needs_tmux
def test_the_live_view_moves_and_fits_at_80_and_120_columns(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    env["TERM"] = "xterm-256color"
    runs = tmp_path / "runs"
    argv = [sys.executable, "-m", "tuner", "run", "--space", str(SPACE), "--trials", str(TRIALS)]
    argv += ["--storage", f"sqlite:///{tmp_path / 'live.db'}", "--runs-dir", str(runs)]
    command = f"cd {shlex.quote(str(ROOT))} && {shlex.join(argv)}; echo TUNER-EXIT=$?; sleep 300"
    tmux = Tmux(f"tuner-live-{os.getpid()}", env)
    screens: dict[int, list[str]] = {80: [], 120: []}
    width = 80
    try:
        tmux("new-session", "-d", "-s", "live", "-x", "80", "-y", "40", command)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            time.sleep(0.25)
            screen = tmux("capture-pane", "-p", "-t", "live")
            screens[width].append(screen)
            if "TUNER-EXIT=" in screen:
                break
            live = _live_lines(screen)
            third_done = re.search(r"^trial +2 ", screen, re.MULTILINE)
            if width == 80 and (third_done or (live and f"3/{TRIALS} launches" in live[0])):
                tmux("resize-window", "-t", "live", "-x", "120", "-y", "40")
                width = 120
        else:
            pytest.fail("the sweep did not end in 240 s:\n" + screens[width][-1])
    finally:
        tmux.kill()
    assert width == 120, "the sweep ended before its third launch"
    assert "TUNER-EXIT=0" in screens[120][-1], screens[120][-1]
    sources = _source_words(runs)

    for cols, shots in screens.items():
        assert len(shots) > 20, f"too few screens at {cols} columns"
        for screen in shots:  # what the report saw: "0/None", "[00:00<00" cut with "…"
            assert "None" not in screen, screen
            assert "…" not in screen, screen
        lives = [_live_lines(s) for s in shots]
        seen = [live for live in lives if live]
        assert len(seen) > 20, f"the live view was seldom on screen at {cols} columns"
        progress: dict[tuple[int, int], set[int]] = defaultdict(set)
        part_done: set[tuple[int, int]] = set()
        study_left = trial_left = two_clocks = False
        for live in seen:
            study, activity = live
            for line in live:
                assert len(line) <= cols and CLOCK.search(line), (cols, line)
                assert line.count("[") == line.count("]"), (cols, line)
                words = re.sub(f"[━╸╺{SPINNER}·]+", " ", line).split()
                broken = [w for w in words if _broken_word(w, sources)]
                assert not broken, (cols, broken, line)
            assert activity[:1] in SPINNER, (cols, activity)
            study_left = study_left or bool(LEFT.search(study))
            trial_left = trial_left or ("trial" in activity and bool(LEFT.search(activity)))
            clocks = [CLOCK.search(line) for line in live]
            two_clocks = two_clocks or (
                "trial" in activity and len({c.group() for c in clocks if c}) == 2
            )
            for match in REQUESTS.finditer(activity):
                trial, round_, done, planned = (int(g) for g in match.groups())
                assert 0 <= done <= planned, activity
                progress[(trial, round_)].add(done)
                if 0 < done < planned:
                    part_done.add((trial, round_))
        # The trial's progress moves during the benchmark: a round seen part done, its
        # count seen at more than one value.
        moving = [key for key in part_done if len(progress[key]) >= 2]
        assert moving, f"no benchmark round was seen moving at {cols} columns: {dict(progress)}"
        assert two_clocks, f"the study's and the trial's clocks were never apart at {cols} columns"
        assert study_left, f"no time left on the study's line at {cols} columns"
        assert trial_left, f"no time left on a trial's line at {cols} columns"
