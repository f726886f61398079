"""Tables: a synthesiser's release says what it is doing (measuring marginals, fitting the model with its iteration,
sampling records) and about how much is left, not "fitting the model: 99 % of ρ" for minutes."""

from __future__ import annotations

import pytest
from streamlit.delta_generator import DeltaGenerator

from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.mechanisms import table_mechanism
from dplens.core.tables.progress import PREPARE_SHARE, Reporter, RunPlan, Stage, fit_position, progress_text
from tests.test_app_tables import _open, _table

SYNTHESISERS = ("mst", "aim", "identity-pgm")


@pytest.mark.parametrize("name", SYNTHESISERS)
def test_every_step_of_a_plan_reads_back_as_itself(name):
    work = MarginalWorkload.all_kway(_table().domain, 2)
    plan = table_mechanism(name).progress_plan(work)
    assert plan.stages[-1].text == "sampling the synthetic records"
    ends = [plan.at(k) for k in range(len(plan.stages))]
    assert ends == sorted(ends) and ends[0] == 0.0 and all(0 <= f < 1 for f in ends)
    for k, stage in enumerate(plan.stages):
        assert plan.describe(plan.at(k)).startswith(stage.text)
        if stage.iters:
            assert plan.describe(plan.at(k)).endswith("preparing the fit (junction tree and step size)")
            for done in (1, stage.iters // 2, stage.iters - 1):
                assert plan.describe(plan.at(k, fit_position(done, stage.iters))) == \
                    f"{stage.text}: iteration {done:,} of {stage.iters:,}"
        if stage.rounds:
            assert plan.describe(plan.at(k, 0.4)).endswith("about 40% of their ρ measured")
    assert "of ρ" not in " ".join(plan.describe(plan.at(k)) for k in range(len(plan.stages)) if not
                                  plan.stages[k].rounds)


def test_the_reporter_never_goes_back_and_reports_iterations_at_a_pace():
    plan = RunPlan((Stage("measuring", 1), Stage("fitting", 2, iters=10), Stage("sampling", 1)))
    seen: list[float] = []
    reporter = Reporter(plan, seen.append)
    reporter.stage(0)
    on_iteration = reporter.fit(10)
    for _ in range(9):
        on_iteration(None)  # faster than REPORT_EVERY: no report each time
    reporter.stage(2)
    reporter.stage(1)  # late: shown where the run already was
    assert seen == sorted(seen) and len(seen) == 4
    assert [plan.describe(f).split(":")[0] for f in seen] == ["measuring", "fitting", "sampling", "sampling"]
    assert PREPARE_SHARE < 1


def test_the_time_left_is_an_estimate_from_the_time_so_far():
    plan = RunPlan((Stage("measuring", 1), Stage("sampling", 1)))
    assert progress_text(plan, 0.0, 1.0).endswith("estimating what is left…")
    assert progress_text(plan, 0.5, 30.0) == "sampling · 30 s elapsed, about 30 s left"


def test_a_release_shows_each_step_then_the_records(monkeypatch):
    """The page's bar through a real MST release (OpenDP, in a worker): measuring, fitting, selecting, fitting,
    sampling, in that order, each with the time so far; never a share of ρ."""
    pytest.importorskip("mbi")
    shown: list[tuple[float, str]] = []
    original = DeltaGenerator.progress

    def recording(self, value, text=None):
        shown.append((value, text))
        return original(self, value, text=text)

    monkeypatch.setattr(DeltaGenerator, "progress", recording)
    at, table = _open(_table(n=400, seed=5))
    at.selectbox(key="tables_release_mechanism").set_value("mst").run()
    at.session_state["tables_setting_mst_iters"] = "40"
    at.number_input(key="tables_release_rho").set_value(0.2).run()
    at.button(key="tables_release_button").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert LedgerStore().ledger(table.fingerprint).spent.rho == pytest.approx(0.2)
    shown = [(f, text) for f, text in shown if not text.startswith("releasing")]  # st.progress's own is not seen
    texts = [text for _, text in shown]
    steps = ["measuring the 1-way marginals", "fitting the model to the 1-way marginals",
             "selecting the 2-way marginals", "fitting the model to every measured marginal",
             "sampling the synthetic records"]
    order = [next(i for i, step in enumerate(steps) if text.startswith(step)) for text in texts]
    assert order == sorted(order) and set(order) == set(range(len(steps))), texts
    assert all(" elapsed" in text and "of ρ" not in text for text in texts), texts
    assert [f for f, _ in shown] == sorted(f for f, _ in shown)


def test_making_the_dp_proxy_shows_its_steps_then_tunes_on_it(monkeypatch):
    """The "Make a DP proxy" button runs MST with the same progress bar, then "Tune on" turns to the proxy."""
    pytest.importorskip("mbi")
    shown: list[str] = []
    original = DeltaGenerator.progress

    def recording(self, value, text=None):
        shown.append(text)
        return original(self, value, text=text)

    monkeypatch.setattr(DeltaGenerator, "progress", recording)
    at, table = _open(_table(n=400, seed=6))
    at.session_state["tables_proxy_rho"] = 0.05
    at.session_state["tables_setting_mst_iters"] = "40"
    at.button(key="tables_make_proxy").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.radio(key="tables_tune_on").value == "proxy"
    assert LedgerStore().ledger(table.fingerprint).spent.rho == pytest.approx(0.05)
    assert any(t.startswith("measuring the 1-way marginals") for t in shown), shown
    assert any(t.startswith("sampling the synthetic records") for t in shown), shown
