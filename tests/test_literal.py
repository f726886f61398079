"""The papers' literal (NOT DP) variants: never registered, always labelled, and caught by the audit.

Each demo of ``dplens.core.papers.literal.DEMOS`` audits the literal variant and its corrected twin on one small
neighbouring pair (seeded, 2000 runs a side: over five seeds the literal bounds were 1.17–2.73 against
ε = 1 and the corrected ones at most 0.78; with 1000 runs WDA's and the max query's were not reliable).
"""

import dataclasses

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.papers.audit import audit_neighbours
from dplens.core.papers.literal import DEMOS, NOT_DP, labelled, run_demo

RUNS = 2000


def test_literal_variants_are_never_registered_and_always_labelled():
    registered = {type(m) for m in MECHANISMS.values()}
    for demo in DEMOS.values():
        assert type(demo.literal) not in registered
        assert NOT_DP in demo.literal.name and NOT_DP not in demo.corrected.name
    assert labelled(labelled("x")) == labelled("x")


@pytest.mark.statistical
@pytest.mark.parametrize("key", list(DEMOS))
def test_audit_finds_the_literal_variant_above_epsilon_and_the_corrected_one_within(key):
    rows = run_demo(key, runs=RUNS)
    literal, corrected = rows[0], rows[1]
    assert literal["kind"] == "literal" and NOT_DP in literal["variant"]
    assert literal["measured loss ≥"] > literal["claimed ε"], literal
    assert NOT_DP in literal["verdict"]
    assert corrected["measured loss ≥"] <= corrected["claimed ε"], corrected
    for row in rows[2:]:  # the exact counterexamples agree with the audit's direction
        assert (row["measured loss ≥"] > row["claimed ε"]) == (row["kind"] == "literal"), row


def test_exact_counterexamples_match_the_spec():
    rows = {r["evidence"][:40]: r["measured loss ≥"] for r in run_demo("xiao-max", runs=100)[2:]}
    # 3α and 0.912: Xiao et al.'s literal max query is not α-DP
    assert sorted(rows.values()) == pytest.approx([0.0, 0.9119, 1.5], abs=1e-4)
    om = run_demo("om-normalisation", runs=100)[2:]
    assert [r["measured loss ≥"] for r in om] == [2.0, 1.0]


def test_the_attackers_statistic_is_what_exposes_the_true_order_grouping():
    """Without the statistic "bins 0 and 7 share one value" no released value alone shows SReB_GCA's literal
    grouping by the true order; with it the bound clears ε (547 vs 3 of 1000 at the default seed)."""
    demo = DEMOS["sreb-gca-true-order"]
    rows = run_demo("sreb-gca-true-order", runs=RUNS)
    assert rows[0]["measured loss ≥"] > 2 * demo.epsilon and "attacker's statistic" in rows[0]["evidence"]
    blind = dataclasses.replace(demo, statistic=None)
    bound = audit_neighbours(blind.literal, np.array(blind.x, float), blind.workload, blind.epsilon, blind.bin_index,
                             blind.sign, runs=RUNS).bound
    assert bound < rows[0]["measured loss ≥"]


def test_unknown_demo_is_refused():
    with pytest.raises(ValueError, match="demo must be one of"):
        run_demo("nope")
