"""The sim reads NCCL's tuner plugin table: a protocol per message size, as the plugin does.

The table is the one `tuner best --format nccl-tuner` writes on the sim's kimi profile
(LL up to 28,672 bytes, LL128 above, for 8 ranks). A decode step of one stream (14 KB)
must then run as with NCCL_PROTO=LL, one of 64 streams (896 KB) as with LL128, and a
space's param of table files must reach the sim through tuner's launch environment.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from tests.probe_helpers import write
from tuner.sim import expected_output_throughput, parse_settings
from tuner.sim.model import step_time
from tuner.sim.probe import main as probe_main
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.trial.runner import launch_spec_for

KIMI = "kimi-k2.5-int4-tp8"
TABLE = """\
# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
allreduce,0,28672,ring,ll,-1,1,8,-1,-1
allreduce,28673,4294967295,ring,ll128,-1,1,8,-1,-1
"""
PLUGIN = "/opt/nccl/libnccl-tuner-example.so"


def _settings(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return parse_settings(["--profile", KIMI, "--port", "1", *args], env)


@pytest.fixture
def table(tmp_path: Path) -> str:
    path = tmp_path / "t.csv"
    path.write_text(TABLE)
    return str(path)


def test_each_step_runs_with_its_sizes_row(table: str) -> None:
    plugin = _settings({"NCCL_TUNER_PLUGIN": PLUGIN, "NCCL_TUNER_CONFIG_FILE": table})
    ll = _settings({"NCCL_PROTO": "LL", "NCCL_ALGO": "allreduce:ring"})
    ll128 = _settings({"NCCL_PROTO": "LL128", "NCCL_ALGO": "allreduce:ring"})
    default = _settings({})
    assert step_time(KIMI, plugin, 1) == step_time(KIMI, ll, 1) < step_time(KIMI, default, 1)
    assert step_time(KIMI, plugin, 64) == step_time(KIMI, ll128, 64)
    # A global LL costs at 64 streams what the table avoids.
    assert step_time(KIMI, ll, 64) > step_time(KIMI, default, 64) > step_time(KIMI, plugin, 64)
    one = expected_output_throughput(KIMI, plugin, 1, output_tokens=256)
    many = expected_output_throughput(KIMI, plugin, 64, output_tokens=256)
    assert one == expected_output_throughput(KIMI, ll, 1, output_tokens=256)
    assert many > expected_output_throughput(KIMI, ll, 64, output_tokens=256)


@pytest.mark.parametrize(
    "case",
    ["no plugin", "plugin none", "missing file", "other TP", "comments only"],
)
def test_no_matching_row_leaves_ncclls_choice(table: str, tmp_path: Path, case: str) -> None:
    env = {"NCCL_TUNER_PLUGIN": PLUGIN, "NCCL_TUNER_CONFIG_FILE": table}
    args: tuple[str, ...] = ()
    if case == "no plugin":
        del env["NCCL_TUNER_PLUGIN"]
    elif case == "plugin none":
        env["NCCL_TUNER_PLUGIN"] = "none"
    elif case == "missing file":
        env["NCCL_TUNER_CONFIG_FILE"] = str(tmp_path / "absent.csv")
    elif case == "other TP":
        args = ("-tp", "4")  # the rows are for 8 ranks
    else:
        (tmp_path / "c.csv").write_text("# keep NCCL's own choice\n")
        env["NCCL_TUNER_CONFIG_FILE"] = str(tmp_path / "c.csv")
    assert step_time(KIMI, _settings(env, *args), 1) == step_time(KIMI, _settings({}, *args), 1)


def test_the_sim_probe_sees_the_table_too(table: str) -> None:
    def probe(env: dict[str, str]) -> dict[str, float]:
        out = io.StringIO()
        with redirect_stdout(out):
            code = probe_main(["--sizes", "14336,917504", "--noise", "0", "--profile", KIMI], env)
        assert code == 0
        return json.loads(out.getvalue())["sizes"]

    plugin = probe({"NCCL_TUNER_PLUGIN": PLUGIN, "NCCL_TUNER_CONFIG_FILE": table})
    assert plugin["14336"] == probe({"NCCL_PROTO": "LL", "NCCL_ALGO": "allreduce:ring"})["14336"]
    ll128 = probe({"NCCL_PROTO": "LL128", "NCCL_ALGO": "allreduce:ring"})
    assert plugin["917504"] == ll128["917504"]


def test_a_param_of_table_files_reaches_the_sim_through_the_launch_env(
    table: str, tmp_path: Path
) -> None:
    space = {
        "server": {
            "command": ["srv", "--port", "{port}"],
            "env": {"NCCL_TUNER_PLUGIN": PLUGIN},
        },
        "params": {"TABLE": {"env": "NCCL_TUNER_CONFIG_FILE", "choices": ["default", table]}},
    }
    loaded = load_space(write(tmp_path, space))
    launched = []
    for value in ("default", table):
        settings = settings_from_params(loaded.spec, {"TABLE": value})
        env = launch_spec_for(loaded, settings, port=1, trial_dir=tmp_path).env
        launched.append(step_time(KIMI, _settings(dict(env)), 1))
    assert launched[1] < launched[0]  # the table's LL at one stream's size
