"""One door for every release (dplens.core.release.kernel) and the provenance of released data.

* The Release page and the command line release the same thing with the same charge, metadata and columns.
* Nothing else in the code base draws secure noise or writes a histogram export.
* A file comes back as already private only when this installation released it (or the curator states, recorded,
  that it is another installation's release): a CSV with a fractional count and a forged export JSON are raw
  data, and releasing from them is charged.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from dplens.cli import main
from dplens.core.data.datasets import load_histogram
from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.privacy.budget import Budget, BudgetExceededError
from dplens.core.privacy.definitions import PureDP
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.queries.workloads import Prefix
from dplens.core.release.export import ExportKeys
from dplens.core.release.kernel import HistogramRequest, export_release, release_histogram
from dplens.core.release.provenance import recognise
from tests.test_app import open_page

ROOT = Path(__file__).resolve().parent.parent
RELEASE, DATA = "pages/release.py", "pages/data.py"


def _page_release(mechanism: str, epsilon: float):
    at = open_page(RELEASE)
    at.radio(key="release_noise_path").set_value("secure")
    at.selectbox(key="release_mechanism").set_value(mechanism)
    at.number_input(key="release_epsilon").set_value(epsilon)
    at = at.button(key="release_spend").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


@pytest.mark.parametrize("mechanism", ["identity", "hb"])
def test_the_page_and_the_command_line_release_alike(tmp_path, mechanism):
    """Parity: the same release through the Release page and the CLI charges the same, and exports the same
    metadata keys and CSV columns (both go through the kernel's release_histogram and export_release)."""
    at = _page_release(mechanism, 0.5)
    entry, output = at.session_state.releases[0], at.session_state.release_outputs[1]
    # as the page
    keys = ExportKeys.for_release(load_histogram("smooth"), output["release"], output["request"].workload)
    page_json = json.loads(export_release(output["published"], output["request"], fmt="json", dataset="smooth",
                                          keys=keys))
    page_csv = export_release(output["published"], output["request"], fmt="csv", dataset="smooth",
                              keys=keys).decode()
    fingerprint = dataset_fingerprint(load_histogram("smooth"))
    page_spend = [e for e in LedgerStore().history(fingerprint) if e["kind"] == "spend"]

    cli_store = tmp_path / "cli.sqlite3"
    for fmt in ("json", "csv"):
        assert main(["release", "--input", "smooth", "--mechanism", mechanism, "--epsilon", "0.5", "--workload",
                     entry["workload"], "--ledger", str(cli_store), "--output", str(tmp_path / f"o.{fmt}")]) == 0
    cli_json = json.loads((tmp_path / "o.json").read_text())
    cli_csv = (tmp_path / "o.csv").read_text()
    cli_spend = [e for e in LedgerStore(cli_store).history(fingerprint) if e["kind"] == "spend"]

    assert set(page_json) == set(cli_json)
    for key in ("mechanism", "epsilon", "delta", "rho", "definition", "workload", "noise_path", "noise_sampler",
                "neighbouring", "dataset", "level", "interval_method", "params"):
        assert page_json.get(key) == cli_json.get(key), key
    assert page_csv.splitlines()[0] == cli_csv.splitlines()[0] == "bin,count,lower,upper,level"
    for column in ("epsilon", "delta", "rho", "mechanism", "workload"):
        assert page_spend[0][column] == cli_spend[0][column], column
    assert page_spend[0]["export_id"] == page_json["export_id"] and cli_spend[0]["export_id"] == cli_json["export_id"]


SOURCES = (ROOT / "src", ROOT / "pages")
# Where secure noise may be drawn and a histogram export written: the kernel, and the module that defines the
# samplers (noise.py) or the writers (export.py). No page or view is on either list.
SECURE_NOISE_SOURCES = {"src/dplens/core/release/kernel.py", "src/dplens/core/privacy/noise.py"}
EXPORT_WRITER_SOURCES = {"src/dplens/core/release/kernel.py", "src/dplens/core/release/export.py"}


def _callers(pattern: str) -> set[str]:
    found = set()
    for folder in SOURCES:
        for path in folder.rglob("*.py"):
            text = "\n".join(line for line in path.read_text().splitlines() if ">>>" not in line)
            if re.search(pattern, text):
                found.add(str(path.relative_to(ROOT)))
    return found


def _store_spenders(folders=SOURCES, root: Path = ROOT) -> set[str]:
    """Modules that charge a persistent ledger: a ``.spend(...)`` call with ``mechanism=`` (``LedgerStore.spend``;
    ``Ledger.spend`` on an in-memory value takes a label and a cost only)."""
    found = set()
    for folder in folders:
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "spend"
                        and any(k.arg == "mechanism" for k in node.keywords)):
                    found.add(str(path.relative_to(root)))
    return found


def test_nothing_else_draws_secure_noise_charges_a_ledger_or_writes_a_histogram_export():
    assert _callers(r'noise_source\(\s*"secure"') <= SECURE_NOISE_SOURCES
    assert _callers(r"SecureNoise\(") <= SECURE_NOISE_SOURCES
    assert _callers(r"\brelease_to_(json|csv)\(") <= EXPORT_WRITER_SOURCES
    assert _store_spenders() == {"src/dplens/core/release/kernel.py"}


def test_the_ledger_scan_sees_a_charge_outside_the_kernel(tmp_path):
    """Power of the scan: a probe module that charges a store directly is found; an in-memory spend is not."""
    (tmp_path / "probe.py").write_text("def f(store, ledger):\n    ledger.spend('x', None)\n"
                                       "    store.spend('fp', 'x', None, mechanism='identity')\n")
    (tmp_path / "memory.py").write_text("def f(ledger):\n    return ledger.spend('x', None)\n")
    assert _store_spenders((tmp_path,), tmp_path) == {"probe.py"}


def _top_level_names(source: str) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments), not those it imports."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


# A page's click handler named after the kernel door it calls is not a second copy of the door.
UI_HANDLERS = {"release_table"}


def test_the_ui_keeps_no_copy_of_what_the_kernel_defines():
    """EXPORT_INTERVAL_TRIALS and export_intervals were defined in the kernel and again in ui/release_view.py, where
    they could drift apart; the Release page now uses the kernel's, as the command line does."""
    import dplens.core.release.kernel as kernel
    from dplens.ui import release_view

    kernel_names = {n for n in _top_level_names(Path(kernel.__file__).read_text()) if not n.startswith("_")}
    copies = {str(path.relative_to(ROOT)): sorted((_top_level_names(path.read_text()) & kernel_names) - UI_HANDLERS)
              for path in sorted((ROOT / "src/dplens/ui").glob("*.py"))}
    assert {path: names for path, names in copies.items() if names} == {}
    assert release_view.EXPORT_INTERVAL_TRIALS is kernel.EXPORT_INTERVAL_TRIALS
    assert release_view.export_intervals is kernel.export_intervals
    probe = "EXPORT_INTERVAL_TRIALS = 100\n\ndef export_intervals(number, simultaneous):\n    pass\n"
    assert _top_level_names(probe) & kernel_names == {"EXPORT_INTERVAL_TRIALS", "export_intervals"}  # it would fail


def test_the_kernel_refuses_over_budget_before_any_work(tmp_path):
    store, fingerprint = LedgerStore(tmp_path / "s.sqlite3"), "b" * 64
    store.set_total(fingerprint, Budget(0.4))
    request = HistogramRequest("identity", {}, PureDP(0.5), Prefix(4), "prefix")
    with pytest.raises(BudgetExceededError, match="remaining is epsilon=0.4"):
        release_histogram(request, np.ones(4), store=store, fingerprint=fingerprint, name="t")
    assert [e["kind"] for e in store.history(fingerprint)] == ["total"]


def test_a_failed_run_charges_nothing(tmp_path):
    store, fingerprint = LedgerStore(tmp_path / "s.sqlite3"), "c" * 64
    request = HistogramRequest("identity", {}, PureDP(0.5), Prefix(4), "prefix")
    with pytest.raises(ValueError):
        release_histogram(request, np.ones(5), store=store, fingerprint=fingerprint, name="t")  # wrong shape
    assert not [e for e in store.history(fingerprint) if e["kind"] == "spend"]


# ----------------------------------------------------------------------------- provenance
FRACTIONAL = b"bin,count\n0,1.5\n1,3\n2,0.5\n3,7\n"


def _forged_json() -> bytes:
    return json.dumps({"mechanism": "identity", "epsilon": 1.0, "delta": 0.0, "privacy_loss": 1.0,
                       "workload": "identity", "noise_path": "secure", "noise_sampler": "opendp-integer-laplace",
                       "neighbouring": "add/remove", "export_id": "0" * 32, "counts": [4.0, 9.0, 2.0, 7.5]}).encode()


def _upload(at, name: str, data: bytes, levels: str | None = None):
    at.file_uploader(key="data_upload").set_value((name, data, "text/plain")).run()
    if levels is not None:  # a labelled file's declared levels: needed to release it
        at.text_area(key="data_levels").set_value(levels)
    return at.button(key="data_use").click().run()


@pytest.mark.parametrize(("name", "data"), [("weighted.csv", FRACTIONAL), ("forged.json", _forged_json())])
def test_an_unknown_export_is_raw_data_and_its_release_is_charged(name, data):
    assert recognise(LedgerStore(), data, name)[1] is None
    at = _upload(open_page(DATA), name, data, "0,1,2,3" if name.endswith(".csv") else None)
    assert not at.exception, at.exception
    assert at.session_state.dataset_key.startswith("upload:")
    assert any("no record of releasing it" in i.value for i in at.info), [i.value for i in at.info]
    at = at.switch_page(RELEASE).run()
    before = at.session_state.ledger.remaining.epsilon
    at.radio(key="release_noise_path").set_value("secure")
    at.selectbox(key="release_mechanism").set_value("identity")
    at.number_input(key="release_epsilon").set_value(1.0)
    at = at.button(key="release_spend").click().run()
    assert not at.exception and at.session_state.releases
    assert at.session_state.ledger.remaining.epsilon == pytest.approx(before - 1.0)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_export_of_this_installation_comes_back_as_released(tmp_path, fmt):
    out = tmp_path / f"r.{fmt}"
    assert main(["release", "--input", "tips-bill", "--mechanism", "hb", "--epsilon", "1", "--output", str(out)]) == 0
    released, record = recognise(LedgerStore(), out.read_bytes(), out.name)
    assert record is not None and record["kind"] == ("signed" if fmt == "json" else "released")  # CSVs are unsigned
    at = _upload(open_page(DATA), out.name, out.read_bytes())
    assert not at.exception and at.session_state.dataset_key.startswith("released:")


def test_a_tampered_export_is_raw_data(tmp_path):
    out = tmp_path / "r.csv"
    assert main(["release", "--input", "tips-bill", "--mechanism", "hb", "--epsilon", "1", "--output", str(out)]) == 0
    rows = list(csv.reader(io.StringIO(out.read_text())))
    rows[1][1] = str(float(rows[1][1]) + 1)  # one value changed: no longer what was released
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    assert recognise(LedgerStore(), buffer.getvalue().encode(), "r.csv")[1] is None


# ----------------------------------------------------------------------------- no output shape depends on the data
def test_the_missing_level_exists_for_both_neighbours():
    """Whether or not one person's field is missing, the chosen 'missing' level is there: same released shape."""
    from dplens.core.tables.records import load_table

    without = load_table(b"a,b\n1,x\n0,y\n", b'{"a": 2, "b": ["x", "y"]}', missing="level")
    with_one = load_table(b"a,b\n1,x\n0,y\n1,\n", b'{"a": 2, "b": ["x", "y"]}', missing="level")
    assert without.domain == with_one.domain and without.levels == with_one.levels
    assert without.levels["b"] == ["x", "y", "missing"]


def test_a_table_whose_domain_was_read_from_the_records_is_not_released(tmp_path):
    from dplens.core.queries.marginals import MarginalWorkload
    from dplens.core.release.kernel import UNDECLARED_DOMAIN, TableRequest, release_table
    from dplens.core.tables.mechanisms import table_mechanism
    from dplens.core.tables.records import load_table

    inferred = load_table(b"a,b\n1,x\n0,y\n1,y\n")
    assert not inferred.domain_declared
    assert load_table(b"a,b\n1,x\n0,y\n", b'{"a": 2, "b": ["x", "y"]}').domain_declared
    store = LedgerStore(tmp_path / "s.sqlite3")
    request = TableRequest(table_mechanism("gaussian-marginals"), 0.5, MarginalWorkload.all_kway(inferred.domain, 1),
                           1e-6, domain_declared=inferred.domain_declared)
    with pytest.raises(ValueError, match="a release needs a declared domain"):
        release_table(request, inferred.records, store=store, fingerprint=inferred.fingerprint, name="t")
    assert UNDECLARED_DOMAIN.startswith("a release needs") and not store.history(inferred.fingerprint)


@pytest.mark.parametrize(("edges", "released"), [(None, False), ("20,40,60,80", True)])
def test_records_binned_on_bins_read_from_the_data_are_not_released(edges, released):
    records = b"age\n" + b"\n".join(str(20 + i % 50).encode() for i in range(200)) + b"\n"
    at = open_page(DATA)
    at.file_uploader(key="data_upload").set_value(("people.csv", records, "text/csv")).run()
    at.checkbox(key="data_as_records").check().run()
    at.selectbox(key="data_column").set_value("age")
    if edges:
        at.radio(key="data_binning").set_value("bin edges").run()
        at.text_input(key="data_edges").set_value(edges)
    at = at.button(key="data_use").click().run()
    at = at.switch_page(RELEASE).run()
    at.radio(key="release_noise_path").set_value("secure")
    at.selectbox(key="release_mechanism").set_value("identity")
    at = at.button(key="release_spend").click().run()
    assert not at.exception
    assert bool(at.session_state.releases) == released
    if not released:
        assert any("bins or grid were read from the private data" in e.value for e in at.error)


def test_the_cli_table_release_of_histogram_mechanisms_writes_the_pages_files(tmp_path):
    """`release --domain ... --mechanism histograms` (once an internal TypeError) writes the marginals with
    intervals, the same columns as the Tables page's download."""
    root = Path(__file__).resolve().parent.parent / "data"
    out = tmp_path / "h.csv"
    assert main(["release", "--input", str(root / "survey.csv"), "--domain", str(root / "survey-domain.json"),
                 "--rho", "0.5", "--mechanism", "histograms", "--workload", "marginals:k=1", "--output", str(out),
                 "--ledger", str(tmp_path / "l.sqlite3")]) == 0
    assert out.read_text().splitlines()[0] == "marginal,cell,count,std,lower,upper,level"
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["export_id"] and meta["dataset"] == "survey.csv" and meta["rho"] == 0.5


def test_an_unwritable_output_is_refused_before_anything_is_charged(tmp_path, capsys):
    (tmp_path / "out.csv").mkdir()
    store = tmp_path / "l.sqlite3"
    for output in (tmp_path / "out.csv", tmp_path / "missing" / "r.csv"):
        assert main(["release", "--input", "tips-bill", "--mechanism", "hb", "--epsilon", "1", "--output",
                     str(output), "--ledger", str(store)]) == 2
    assert "is a directory" in capsys.readouterr().err
    fingerprint = dataset_fingerprint(load_histogram("tips-bill"))
    assert not [e for e in LedgerStore(store).history(fingerprint) if e["kind"] == "spend"]


def test_the_store_has_a_quota_per_curator_and_says_so(tmp_path, monkeypatch):
    from dplens.core.data import limits
    from dplens.core.data.domain import Histogram
    from dplens.core.release.workspace_store import WorkspaceStore

    monkeypatch.setattr(limits, "MAX_STORE_BYTES", 64 * 1024)
    store = WorkspaceStore(tmp_path / "s.sqlite3")
    store.put_dataset(Histogram.from_counts(np.arange(2000.0), name="small"))  # 16 kB
    store.put_dataset(Histogram.from_counts(np.arange(2000.0), name="small"))  # the same upload again: no bytes
    with pytest.raises(ValueError, match=r"the quota is 0.0625 MB \(DPLENS_MAX_STORE_MB\)"):
        store.put_dataset(Histogram.from_counts(np.arange(8000.0), name="big"))  # 64 kB more
    other = WorkspaceStore(tmp_path / "s.sqlite3", owner="someone@example.org")
    other.put_dataset(Histogram.from_counts(np.arange(6000.0), name="theirs"))  # another curator's own quota
    with pytest.raises(ValueError, match="quota"):
        store.save(store.create(), {"blob": "x" * 60_000})


def test_exploration_is_a_mode_of_the_kernel_charged_alike_and_never_exported(tmp_path):
    """Seeded noise, the same ledger check and charge, no export id, no provenance, and no export file."""
    from dplens.core.privacy.budget import Budget, BudgetExceededError
    from dplens.core.privacy.definitions import PureDP
    from dplens.core.privacy.ledger_store import LedgerStore
    from dplens.core.queries.workloads import Prefix
    from dplens.core.release.kernel import HistogramRequest, export_release, release_histogram

    store, fingerprint = LedgerStore(tmp_path / "s.sqlite3"), "e" * 64
    store.set_total(fingerprint, Budget(1.0))
    request = HistogramRequest("hb", {}, PureDP(0.75), Prefix(8), "prefix")
    published = release_histogram(request, np.arange(8.0), store=store, fingerprint=fingerprint, name="t",
                                  rng=np.random.default_rng([7, 1]))
    again = release_histogram(request, np.arange(8.0), store=LedgerStore(tmp_path / "o.sqlite3"),
                              fingerprint=fingerprint, name="t", rng=np.random.default_rng([7, 1]))
    np.testing.assert_array_equal(published.release.answers, again.release.answers)  # seeded: reproducible
    (spend,) = [e for e in store.history(fingerprint) if e["kind"] == "spend"]
    assert published.export_id is None and spend["export_id"] is None and spend["epsilon"] == 0.75
    assert spend["note"].startswith("noise path: exploration (simulation, not a private release)")
    assert published.ledger is not None and published.ledger.remaining.epsilon == pytest.approx(0.25)
    with pytest.raises(ValueError, match="never exported"):
        export_release(published, request, fmt="json", dataset="t")
    with pytest.raises(BudgetExceededError, match="remaining is epsilon=0.25"):  # checked before any work
        release_histogram(request, np.arange(8.0), store=store, fingerprint=fingerprint, name="t",
                          rng=np.random.default_rng(1))


def test_already_private_data_is_released_with_secure_noise_and_no_ledger(tmp_path):
    from dplens.core.privacy.definitions import PureDP
    from dplens.core.privacy.ledger_store import LedgerStore
    from dplens.core.queries.workloads import Prefix
    from dplens.core.release.kernel import HistogramRequest, release_histogram

    store, fingerprint = LedgerStore(tmp_path / "s.sqlite3"), "f" * 64
    request = HistogramRequest("identity", {}, PureDP(50.0), Prefix(8), "prefix")  # more than any default total
    published = release_histogram(request, np.arange(8.0), store=store, fingerprint=fingerprint, name="t",
                                  private=False)
    assert published.ledger is None and published.export_id and published.noise_sampler.startswith("opendp")
    assert store.history(fingerprint) == [] and not store.recorded(fingerprint)


def test_a_privacy_value_beyond_the_limits_is_refused_before_any_arithmetic():
    """ε = 1.34e154 once overflowed ε²/2 into an internal error; it is refused in one line naming the range."""
    from dplens.core.privacy.definitions import ZCDP, PureDP
    from dplens.core.queries.workloads import Identity
    from dplens.core.release.kernel import HistogramRequest, plan_histogram

    for privacy in (PureDP(1.3407807929942597e154), ZCDP(1e300)):
        with pytest.raises(ValueError, match=r"must be (in \[1e-06, 1000\]|at most 1000)"):
            plan_histogram(HistogramRequest("agrid", {}, privacy, Identity(4), "identity", 1e-6))
