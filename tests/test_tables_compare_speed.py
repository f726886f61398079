"""Tables Compare at interactive speed: progress by expected time (elapsed and left), synthesiser runs that print
nothing to the server log, and the page naming the synthesiser's Compare settings."""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.compare import COMPARE_SETTINGS, _Clock, compare_note, compare_tables

DOMAIN = Domain(("a", "b"), (2, 2))


def _records(count: int = 40, seed: int = 0) -> np.ndarray:
    records = np.random.default_rng(seed).integers(0, 2, size=(count, 2))
    records[: count // 2, 1] = records[: count // 2, 0]
    return records


def test_progress_text_says_elapsed_and_left():
    seen = []
    workload = MarginalWorkload.all_kway(DOMAIN, 2)
    compare_tables(_records(), workload, ["gaussian-marginals", "residual-planner"], [0.5, 1.0], trials=2,
                   progress=lambda fraction, text: seen.append((fraction, text)))
    running = [text for _, text in seen[:-1]]
    assert running and all("elapsed" in t and "left" in t for t in running)
    assert "gaussian-marginals ρ=0.5 trial 1/2" in running[0]
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and seen[-1][1].startswith("done")


def _stand_in_mst(monkeypatch):
    """MST's run stood in for by identity's, in this process (the pool's threads call it directly)."""
    import dplens.core.tables.compare as compare
    from dplens.core.analysis.execution import run_cell
    from dplens.core.tables.mechanisms import table_mechanism
    from dplens.core.tables.synthesis import MST

    def stand_in(self, records, workload, rho, rng=None, *, rows=None, progress=None):
        if progress is not None:
            progress(0.5)
        time.sleep(0.6)  # long enough for the pool's loop to report while it runs
        return table_mechanism("gaussian-marginals").run(records, workload, rho, rng)

    monkeypatch.setattr(MST, "run", stand_in)
    monkeypatch.setattr(compare, "_bounded_run", lambda context, cell, report, deadline:
                        run_cell(context, cell, progress=report))


def test_pooled_synthesiser_runs_report_time_and_keep_order(monkeypatch):
    _stand_in_mst(monkeypatch)
    seen = []
    workload = MarginalWorkload.all_kway(DOMAIN, 2)
    df = compare_tables(_records(), workload, ["mst", "gaussian-marginals"], [0.1, 1.0], trials=2, synth_trials=1,
                        seconds=60, workers=2, progress=lambda fraction, text: seen.append((fraction, text)))
    assert df[["mechanism", "rho", "trial"]].values.tolist() == [
        ["mst", 0.1, 0], ["mst", 1.0, 0], ["gaussian-marginals", 0.1, 0], ["gaussian-marginals", 0.1, 1],
        ["gaussian-marginals", 1.0, 0], ["gaussian-marginals", 1.0, 1]]
    texts = [text for _, text in seen[:-1]]
    assert all("elapsed" in t and "left" in t for t in texts)
    assert any(t.startswith("MST ρ=") and "trial 1/1" in t for t in texts), texts


def test_fraction_weighs_runs_by_expected_time():
    """Three closed-form runs finished before one MST run: the bar is near its start, not at 3/4."""
    seen = []
    clock = _Clock([("gaussian-marginals", False)] * 3 + [("mst", True)], 1, lambda f, t: seen.append((f, t)))
    for _ in range(3):
        clock.finished("gaussian-marginals", 0.01)
    clock.report("MST ρ=1 trial 1/1")
    fraction, text = seen[-1]
    assert fraction < 0.2 and "about 30 s left" in text
    clock.report("MST ρ=1 trial 1/1", {0: ("mst", 0.5)})  # halfway through the fit: less left
    assert seen[-1][0] > fraction and "about 15 s left" in seen[-1][1]


def test_compare_note_names_the_settings():
    note = compare_note(["gaussian-marginals", "mst"], 3, 1)
    assert note.startswith("MST in Compare: 1 run per ρ (the others: 3)")
    assert f"{COMPARE_SETTINGS['mst']['iters']} estimator iterations; the release uses 1000" in note
    assert compare_note(["gaussian-marginals"], 3, 1) == ""


def test_tiny_mst_fit_prints_nothing(capfd, caplog):
    """One MST run at ρ = 1 (above OpenDP's advised 0.5, which it logs at WARNING every run) on the smallest
    table: no Python warning, no log record, nothing on stdout or stderr."""
    pytest.importorskip("mbi")
    from dplens.core.tables.synthesis import MST

    workload = MarginalWorkload.all_kway(DOMAIN, 2)
    capfd.readouterr()
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        release = MST(iters=5).run(_records(), workload, 1.0, np.random.default_rng(0))
    out, err = capfd.readouterr()
    assert release.records is not None
    assert [str(w.message) for w in caught] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert out == "" and err == ""


def test_page_caption_names_the_synthesisers_compare_settings(monkeypatch):
    """The caption over the results says what Compare ran differently from a release, and OpenDP's advice on ρ = 1
    is said once. MST's run is stood in for by identity's (in this process): the page's wording is under test,
    not OpenDP (test_tiny_mst_fit_prints_nothing runs a real one)."""
    from tests.test_app_tables import _open

    _stand_in_mst(monkeypatch)
    at, _ = _open()
    at.multiselect(key="tables_mechanisms").set_value(["gaussian-marginals", "mst"])
    at.multiselect(key="tables_rhos").set_value([0.1, 1.0])
    at.slider(key="tables_trials").set_value(2)
    at.button(key="FormSubmitter:tables_compare_form-Run comparison").click().run()
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption]
    assert any("MST in Compare: 1 run per ρ (the others: 2), 300 estimator iterations; the release uses 1000" in c
               for c in captions), captions
    assert sum("OpenDP advises" in c for c in captions) == 1
    df = at.session_state["tables_results"]["df"]
    assert df.groupby("mechanism").size().to_dict() == {"gaussian-marginals": 4, "mst": 2}


def test_the_jax_cache_lives_in_the_installations_private_folder(monkeypatch, tmp_path):
    from dplens.core.tables.compare import jax_cache_dir

    monkeypatch.delenv("DPLENS_JAX_CACHE", raising=False)
    monkeypatch.setenv("DPLENS_HOME", str(tmp_path / "home"))
    assert jax_cache_dir() == tmp_path / "home" / "jax-cache"
    monkeypatch.setenv("DPLENS_JAX_CACHE", "off")
    assert jax_cache_dir() is None
