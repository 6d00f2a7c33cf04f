"""The answer's three verdicts, never read as one another, on every surface: `tuner best`'s
table, its JSON, its exit code, each deployment format and `tuner report`'s page.

Confirmed (a change whose final comparison cleared the bar), no gain (keep the defaults,
and what could still hide) and not settled (deploy the defaults until more launches
settle it: the candidate, its gain, and the `tuner run --trials` that resumes the study).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import optuna
import pytest
from rich.console import Console
from typer.testing import CliRunner

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, final_block, hand_study
from tuner import cli, exit_codes, stats
from tuner.report.data import build_report
from tuner.report.html import render
from tuner.study import attrs
from tuner.study.facts import analysis
from tuner.views.best import BestReport, answer_verdict, best_report
from tuner.views.best_print import print_best
from tuner.views.best_verdict import SPACE_FILE, not_settled
from tuner.views.deploy import DEPLOY_FORMATS
from tuner.views.study_access import open_study

FAST = {"NCCL_PROTO": "LL", "compilation": 3}
SEARCHED = [BASELINE, BASELINE_AGAIN, (FAST, [88.0, 88.3, 88.1]), (FAST, [87.9, 88.2, 88.4])]
"""An apparent 8.5% gain the final comparison never compared with the defaults."""
CONFIRMED = [*SEARCHED, *final_block(FAST, [88.1, 88.2, 88.0])]
"""The same gain, confirmed on fresh launches."""
NO_GAIN = [
    BASELINE,
    BASELINE_AGAIN,
    ({"NCCL_PROTO": "LL"}, [79.3, 79.2, 79.1]),
    ({"NCCL_PROTO": "LL"}, [79.0, 79.2, 79.3]),
]
"""A change slower than the defaults, its interval below the 1% minimum gain: keep them (a
change whose interval still reached it would be not settled: study/facts/final.py)."""

runner = CliRunner()


def _best(storage: str, *args: str) -> Any:
    return runner.invoke(cli.app, ["best", "--storage", storage, *args], env={"COLUMNS": "2000"})


def _table(report: BestReport) -> str:
    console = Console(record=True, width=2000)
    print_best(report, "table", console)
    return console.export_text()


def _deployed(report: BestReport, fmt: str, which: str = "recommended") -> tuple[str, str]:
    """What a format prints on stdout and on stderr."""
    out, err = Console(record=True, width=2000), Console(record=True, width=2000)
    print_best(report, fmt, out, notes=err, which=which)
    return out.export_text(), err.export_text()


def _resume(tmp_path: Path, storage: str, trials: int) -> str:
    return (
        f"tuner run --space {shlex.quote(str(tmp_path / 'hand.yaml'))} --trials {trials} "
        f"--storage {storage}"
    )


# --- tuner best: the line of the answer and the table ----------------------------------


def test_confirmed_says_so_and_deploys_the_change(tmp_path: Path) -> None:
    report = best_report(hand_study(tmp_path, CONFIRMED), "hand")
    assert report.verdict == stats.CONFIRMED and report.not_settled is None
    text = _table(report)
    assert "Recommendation: confirmed — trial 2 (2 settings changed) is +8.5%" in text
    assert "keep the defaults" not in text and "not settled" not in text
    assert "Deploy with:" in text
    env, _ = _deployed(report, "env")
    assert env.splitlines() == [
        "# tuner: trial 2 (recommended): an EnvironmentFile= for systemd, or "
        "`set -a; . FILE` in a shell",
        "NCCL_PROTO=LL",
    ]


def test_no_gain_is_one_sentence_with_what_could_still_hide(tmp_path: Path) -> None:
    report = best_report(hand_study(tmp_path, NO_GAIN), "hand")
    assert report.verdict == stats.NO_GAIN and report.not_settled is None
    missed = report.could_have_missed
    assert missed is not None and missed.gain_upper is not None
    text = _table(report)
    (line,) = [x for x in text.splitlines() if x.startswith("Recommendation:")]
    assert line.startswith("Recommendation: no gain — keep the defaults: no configuration beat")
    assert line.endswith(f"; {missed.clause}")
    bound = max(0.0, missed.gain_upper)  # an upper end below 0 reads 0.0%
    assert f"no configuration tried beats them by more than {bound:.1%}" in line
    assert text.count("keep the defaults") == 1  # issue 39: it was said twice
    assert "Deploy with:" not in text and "not settled" not in text


def test_not_settled_names_the_candidate_its_gain_and_the_run_that_settles_it(
    tmp_path: Path,
) -> None:
    storage = hand_study(tmp_path, SEARCHED)
    report = best_report(storage, "hand")
    assert report.verdict == stats.NOT_SETTLED and report.keep_defaults is True
    assert report.could_have_missed is None  # never "keep the defaults" as if settled
    u = report.not_settled
    assert u is not None and u.trial == 2 and u.launches_each == 0
    assert u.gain == pytest.approx(0.085, abs=0.001) and u.ci_low is None
    # 4 full launches so far, and the first look's launches a side for both sides
    assert u.trials_to_resume == 4 + 2 * u.more_each
    assert u.resume == _resume(tmp_path, storage, u.trials_to_resume)
    text = _table(report)
    (line,) = [x for x in text.splitlines() if x.startswith("Recommendation:")]
    assert line.startswith(
        "Recommendation: not settled — deploy the defaults until it is: trial 2 is +8.5% "
        "against the defaults in the search; it was not compared with the defaults"
    )
    assert line.endswith(
        f"about {u.more_each} more launches a side would settle it; `{u.resume}` resumes with them"
    )
    assert "keep the defaults" not in text and "Deploy with:" not in text


def test_screening_launches_do_not_count_in_the_trials_to_resume(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, SEARCHED)
    study = optuna.load_study(study_name="hand", storage=storage)
    for fidelity in (attrs.SCREEN, attrs.SCREEN, None):  # two screened, one full launch
        trial = study.ask()
        trial.set_user_attr(attrs.LAUNCHED, True)
        if fidelity is not None:
            trial.set_user_attr(attrs.FIDELITY, fidelity)
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    u = best_report(storage, "hand").not_settled
    assert u is not None and u.trials_to_resume == 5 + 2 * u.more_each


def test_rows_of_the_same_trial_are_one_row(tmp_path: Path) -> None:
    def labels(report: BestReport) -> list[str]:
        lines = [x for x in _table(report).splitlines() if "│" in x]
        return [x.split("│")[1].strip() for x in lines]

    for sub in "abc":
        (tmp_path / sub).mkdir()
    only_defaults = best_report(hand_study(tmp_path / "a", [BASELINE, BASELINE_AGAIN]), "hand")
    assert labels(only_defaults) == ["best, recommended, baseline"]
    assert labels(best_report(hand_study(tmp_path / "b", SEARCHED), "hand")) == [
        "best",
        "recommended, baseline",
    ]
    assert labels(best_report(hand_study(tmp_path / "c", CONFIRMED), "hand")) == [
        "best, recommended",
        "baseline",
    ]


# --- a recommendation made by hand: what the views take --------------------------------


def _with_recommendation(
    monkeypatch: pytest.MonkeyPatch, storage: str, unsettled: stats.Unsettled | None
) -> BestReport:
    """``best_report`` of ``storage`` with the recommendation not settled on ``unsettled``."""
    real = analysis.StudyAnalysis.recommendation

    def made(self: analysis.StudyAnalysis) -> stats.Recommendation | None:
        rec = real(self)
        assert rec is not None and self.baseline is not None
        return stats.Recommendation(
            best=rec.best,
            recommended=self.baseline.config_hash,
            reason="not settled: by hand",
            keep_defaults=True,
            verdict=stats.NOT_SETTLED,
            unsettled=unsettled,
        )

    monkeypatch.setattr(analysis.StudyAnalysis, "recommendation", made)
    return best_report(storage, "hand")


def test_a_not_settled_recommendation_reaches_the_json_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = hand_study(tmp_path, SEARCHED)
    opened = open_study(storage, "hand")
    configs = analysis.analyze(opened.store, opened.space).configs
    key = next(k for k, c in configs.items() if c.trials and c.trials[0] == 2)
    unsettled = stats.Unsettled(
        candidate=key,
        label="trial 2",
        gain=0.031,
        lower=-0.004,
        upper=0.066,
        confidence=0.9975,
        launches_each=2,
        more_each=3,
        why="its interval neither clears the 1.0% minimum gain",
    )
    report = _with_recommendation(monkeypatch, storage, unsettled)
    out, _ = _deployed(report, "json")
    document = json.loads(out)
    assert document["verdict"] == "not_settled" and document["keep_defaults"] is True
    assert list(document)[12:15] == ["verdict", "keep_defaults", "not_settled"]
    assert document["not_settled"] == {
        "trial": 2,
        "config": key,
        "label": "trial 2",
        "gain": 0.031,
        "ci_low": -0.004,
        "ci_high": 0.066,
        "confidence": 0.9975,
        "launches_each": 2,
        "more_each": 3,
        "trials_to_resume": 4 + 6,
        "resume": _resume(tmp_path, storage, 10),
        "why": "its interval neither clears the 1.0% minimum gain",
        "sure": True,
    }
    assert document["deploy"]["env"] == {} and document["deploy"]["args"] == []
    text = _table(report)
    assert (
        "Recommendation: not settled — deploy the defaults until it is: trial 2 is +3.1% "
        "(99.75% interval -0.4% to +6.6%) against the defaults; its interval neither clears "
        "the 1.0% minimum gain; about 3 more launches a side would settle it; "
        f"`{_resume(tmp_path, storage, 10)}` resumes with them"
    ) in text


def test_the_resume_command_without_a_recorded_space_file_or_at_the_default_storage() -> None:
    unsettled = stats.Unsettled("k", "trial 5", 0.02, None, None, None, 0, 1, "why")
    u = not_settled(
        unsettled, trial=5, full_launches=11, space_path=None, storage="sqlite:///experiments.db"
    )
    assert u.resume == f"tuner run --space {SPACE_FILE} --trials 13"
    assert u.settle == f"about 1 more launch a side would settle it; `{u.resume}` resumes with them"
    spaced = not_settled(
        unsettled, trial=5, full_launches=0, space_path="my spaces/a.yaml", storage="x://h/db"
    )
    assert spaced.resume == "tuner run --space 'my spaces/a.yaml' --trials 2 --storage x://h/db"


def test_the_verdict_of_an_answer_without_a_final_comparison_follows_keep_defaults() -> None:
    assert answer_verdict(None, None) is None
    assert answer_verdict(None, True) == stats.NO_GAIN  # several objectives: the front's
    assert answer_verdict(None, False) == stats.CONFIRMED
    rec = stats.Recommendation(best="a", recommended="b", reason="r", keep_defaults=True)
    assert answer_verdict(rec, True) == stats.NO_GAIN
    settled = stats.Recommendation("a", "b", "r", True, verdict=stats.NOT_SETTLED)
    assert answer_verdict(settled, True) == stats.NOT_SETTLED


# --- the exit code and every deployment format -----------------------------------------


@pytest.mark.parametrize(
    ("launches", "verdict", "code"),
    [
        (CONFIRMED, "confirmed", exit_codes.OK),
        (NO_GAIN, "no_gain", exit_codes.OK),
        (SEARCHED, "not_settled", exit_codes.NOT_SETTLED),
    ],
    ids=["confirmed", "no_gain", "not_settled"],
)
def test_the_exit_code_tells_a_not_settled_answer_in_every_format(
    tmp_path: Path, launches: list[Any], verdict: str, code: int
) -> None:
    storage = hand_study(tmp_path, launches)
    assert exit_codes.NOT_SETTLED == 5
    for fmt in ("table", "json", *DEPLOY_FORMATS):
        done = _best(storage, "--format", fmt)
        assert done.exit_code == code, (fmt, done.stderr)
    assert json.loads(_best(storage, "--format", "json").stdout)["verdict"] == verdict


def test_keep_the_defaults_in_each_format(tmp_path: Path) -> None:
    report = best_report(hand_study(tmp_path, NO_GAIN), "hand")
    missed = report.could_have_missed
    assert missed is not None
    head = "# tuner: keep the defaults (no gain): no configuration beat the defaults"
    for fmt in ("env", "systemd", "vllm-config"):
        out, err = _deployed(report, fmt)
        first, second = out.splitlines()[:2]
        assert first.startswith(head) and first.endswith(missed.clause), fmt
        assert second.startswith("# tuner: trial 0 (recommended)") and err == ""
    env, _ = _deployed(report, "env")
    assert [x for x in env.splitlines() if not x.startswith("#")] == []  # the defaults: nothing
    systemd, _ = _deployed(report, "systemd")
    assert "Environment=" not in systemd and "ExecStart=srv --port 8000" in systemd
    for fmt in ("args", "docker"):  # one shell line: the defaults' (empty), the why on stderr
        out, err = _deployed(report, fmt)
        assert out.strip() == ""
        assert err.startswith("tuner: keep the defaults (no gain): no configuration beat")


def test_not_settled_in_each_format(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, SEARCHED)
    report = best_report(storage, "hand")
    u = report.not_settled
    assert u is not None
    said = (
        "tuner: not settled: deploy the defaults until trial 2, +8.5% against the defaults "
        f"in the search, is settled; resume with `{u.resume}` (about {u.more_each} more "
        "launches a side)"
    )
    for fmt in ("env", "systemd", "vllm-config"):
        out, _ = _deployed(report, fmt)
        assert out.splitlines()[0] == f"# {said}", fmt
        assert "NCCL_PROTO" not in out and "-O3" not in out and "optimization-level" not in out
    for fmt in ("args", "docker"):
        out, err = _deployed(report, fmt)
        assert out.strip() == "" and err.strip() == said
    # --which best deploys the candidate, and says that it is not the answer
    env, _ = _deployed(report, "env", which="best")
    lines = env.splitlines()
    assert lines[0] == f"# {said}" and "not the answer" in lines[1]
    assert "NCCL_PROTO=LL" in lines


def test_a_confirmed_answer_adds_no_comment(tmp_path: Path) -> None:
    report = best_report(hand_study(tmp_path, CONFIRMED), "hand")
    for fmt in DEPLOY_FORMATS:
        out, err = _deployed(report, fmt)
        assert "keep the defaults" not in out + err and "not settled" not in out + err


# --- tuner report ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("launches", "badge", "starts"),
    [
        (CONFIRMED, "Confirmed", "Deploy the settings of trial 2"),
        (NO_GAIN, "No gain — keep the defaults", "Keep the defaults: no configuration tried"),
        (SEARCHED, "Not settled — about ", "Not settled: deploy the defaults until it is"),
    ],
    ids=["confirmed", "no_gain", "not_settled"],
)
def test_the_report_shows_the_verdict_as_a_badge(
    tmp_path: Path, launches: list[Any], badge: str, starts: str
) -> None:
    data = build_report(hand_study(tmp_path, launches), "hand")
    assert data.badge.startswith(badge) and data.verdict.startswith(starts)
    page = render(data)
    assert f'id="verdict-badge">{data.badge}</strong>' in page
    if launches is SEARCHED:
        u = data.answer.not_settled
        assert u is not None
        assert data.badge == f"Not settled — about {u.more_each} more launches a side"
        assert "Keep the defaults" not in data.verdict
        assert data.verdict.endswith(f"`{u.resume}` resumes with them.")
