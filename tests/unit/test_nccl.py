"""tuner.nccl: NCCL's vocabulary, the NCCL_ALGO / NCCL_PROTO grammar and the variable tables."""

from __future__ import annotations

import pytest

from tuner import nccl
from tuner.nccl import NcclEnvError, parse_selection

# Written out here, not imported: a change to NCCL's list must be a deliberate change to both.
ALGOS = ("ring", "tree", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")
PROTOS = ("ll", "ll128", "simple")


def test_the_algorithm_and_protocol_lists_are_nccls() -> None:
    assert nccl.ALGORITHMS == ALGOS
    assert nccl.PROTOCOLS == PROTOS
    assert set(nccl.PROTOCOL_NAMES) == set(PROTOS)
    assert set(nccl.FUNCTION_NAMES) == set(nccl.FUNCTIONS)


@pytest.mark.parametrize(
    ("raw", "default", "allreduce", "allgather", "bare"),
    [
        ("Ring", {"ring"}, {"ring"}, {"ring"}, True),
        ("RING,tree", {"ring", "tree"}, {"ring", "tree"}, {"ring", "tree"}, True),
        ("^tree", set(ALGOS) - {"tree"}, set(ALGOS) - {"tree"}, set(ALGOS) - {"tree"}, True),
        ("allreduce:tree", None, {"tree"}, None, False),
        ("allreduce:ring;allgather:ring", None, {"ring"}, {"ring"}, False),
        ("allreduce:ring,allgather:ring", None, {"ring"}, {"ring"}, False),
        ("AllReduce:Tree,Ring", None, {"tree", "ring"}, None, False),
        ("ring;allreduce:tree", {"ring"}, {"tree"}, {"ring"}, True),
        ("allreduce:^tree", None, set(ALGOS) - {"tree"}, None, False),
    ],
)
def test_algo_grammar(
    raw: str,
    default: set[str] | None,
    allreduce: set[str] | None,
    allgather: set[str] | None,
    bare: bool,
) -> None:
    sel = parse_selection("NCCL_ALGO", raw, ALGOS)
    assert sel.default == (frozenset(default) if default is not None else None)
    assert sel.for_function("allreduce") == (frozenset(allreduce) if allreduce else None)
    assert sel.for_function("allgather") == (frozenset(allgather) if allgather else None)
    assert sel.bare is bare


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", 'Invalid NCCL_PROTO "": empty value'),
        ("LL,Foo", 'unknown value "Foo"'),
        ("allreduce:", "empty list"),
        ("bogus:LL", 'unknown collective "bogus"'),
    ],
)
def test_a_value_nccl_rejects_raises_with_nccls_warning(raw: str, message: str) -> None:
    with pytest.raises(NcclEnvError) as info:
        parse_selection("NCCL_PROTO", raw, PROTOS)
    assert message in info.value.warn
    assert str(info.value) == info.value.warn


def test_the_selection_is_plain_json() -> None:
    sel = parse_selection("NCCL_PROTO", "^LL;allreduce:Simple", PROTOS)
    assert sel.as_json() == {
        "raw": "^LL;allreduce:Simple",
        "default": ["ll128", "simple"],
        "per_function": {"allreduce": ["simple"]},
        "bare": True,
    }


def test_every_variable_with_a_value_table_is_a_known_variable() -> None:
    # The checks refuse an unknown name before they look at its value: a table entry for a
    # name missing from KNOWN_VARIABLES would never be consulted.
    tabled = {
        *nccl.BOOLEAN_VARIABLES,
        *nccl.CHANNEL_VARIABLES,
        *nccl.BUFFER_SIZE_VARIABLES,
        *nccl.LEVEL_VARIABLES,
        *nccl.ENUM_VALUES,
        "NCCL_ALGO",
        "NCCL_PROTO",
        "NCCL_NTHREADS",
    }
    assert tabled <= nccl.KNOWN_VARIABLES
    assert all(name.startswith("NCCL_") for name in nccl.KNOWN_VARIABLES)


@pytest.mark.parametrize(
    ("raw", "level"),
    [
        ("SYS", "SYS"),
        ("PXN", "PXN"),  # undocumented, yet matched by NCCL's parser
        ("phb", None),  # NCCL compares names case-sensitively
        ("0", "LOC"),
        ("2", "PXB"),  # the old numbering: 2 was PXB, not NVL
        ("3", "PHB"),
        ("12abc", "SYS"),  # strtol's leading digits, clamped to the last old number
        ("FAST", None),
        ("", None),
    ],
)
def test_a_level_is_read_as_ncclgetlevel_reads_it(raw: str, level: str | None) -> None:
    assert nccl.read_level(raw) == level


@pytest.mark.parametrize(
    ("env", "level"),
    [
        ({}, None),
        ({"NCCL_P2P_LEVEL": "SYS"}, "SYS"),
        ({"NCCL_P2P_DISABLE": "1", "NCCL_P2P_LEVEL": "SYS"}, "LOC"),  # disable wins
        ({"NCCL_P2P_DISABLE": "0", "NCCL_P2P_LEVEL": "PHB"}, "PHB"),
        ({"NCCL_P2P_DISABLE": "2"}, None),  # only 1 disables
    ],
)
def test_the_users_p2p_cutoff(env: dict[str, str], level: str | None) -> None:
    assert nccl.p2p_level_of(env) == level


def test_paths_compare_nearest_first() -> None:
    assert nccl.path_at_most("PXB", nccl.DEFAULT_P2P_LEVEL)
    assert not nccl.path_at_most("PHB", nccl.DEFAULT_P2P_LEVEL)
    assert not nccl.path_at_most("PIX", "LOC") and nccl.path_at_most("SYS", "SYS")
