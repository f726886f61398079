"""AppTest: every screen says what its values are (true, a DP proxy's, public, released) and speaks in words."""

import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.data.domain import Histogram
from dplens.core.data.released import ReleasedData
from dplens.core.privacy.budget import Budget, Ledger
from tests.test_app import APP, PAGE_PATHS, record_ledger
from tests.test_app_tuning import _run_compare


def _chart_specs(at) -> list[str]:
    return [chart.proto.spec for chart in at.get("plotly_chart")]


def _proxy_of_spiky(page: str) -> AppTest:
    """``page`` on the mostly-zero sample (95 % zeros), tuned on a DP proxy made at ε = 0.1 (noise scale 10)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["dataset_key"] = "sample:spiky"
    at.run()
    at.switch_page(page).run()
    at.session_state["tuning_proxy_epsilon"] = 0.1
    prefix = "choose" if page.endswith("choose_epsilon.py") else "compare"
    at.button(key=f"{prefix}_make_proxy").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key=f"{prefix}_tuning").value.startswith("proxy:")
    return at


def test_choose_epsilon_calls_a_proxy_bin_a_proxy_count_and_warns_that_its_rankings_may_mislead():
    at = _proxy_of_spiky("pages/choose_epsilon.py")
    warnings = [w.value for w in at.warning]
    assert any("Rankings on this DP proxy may mislead" in w and "median bin" in w for w in warnings), warnings
    captions = [c.value for c in at.caption if c.value.startswith("Bin **")]
    assert captions and re.search(r"DP proxy count \d", captions[0]), captions
    assert not re.search(r"true count \d", captions[0]), captions
    assert not any("true value" in spec for spec in _chart_specs(at))  # the risk tab's marker line
    assert any("DP proxy count" in spec for spec in _chart_specs(at))


def test_compare_on_a_proxy_never_calls_its_values_true_counts():
    at = _proxy_of_spiky("pages/compare.py")
    _run_compare(at)
    specs = _chart_specs(at)
    assert not any("true counts" in spec for spec in specs)
    assert any(re.search(r'"name": ?"DP proxy counts"', spec) for spec in specs)


def test_a_public_dataset_of_the_same_shape_is_called_public_not_true():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/choose_epsilon.py").run()
    at.selectbox(key="choose_tuning").set_value("sample:spiky").run()
    captions = [c.value for c in at.caption if c.value.startswith("Bin **")]
    assert captions and "public count" in captions[0], captions


def _loaded_export() -> AppTest:
    """The Data page on a re-uploaded export the store recognised (``ui.add_released``'s session entries)."""
    released = ReleasedData(np.array([-1.5, 4.2, 0.3]), "counts", (), {"mechanism": "identity", "epsilon": 1.0},
                            "export.json")
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["released"] = {"released:r1": released}
    at.session_state["uploads"] = {"released:r1": released.as_histogram()}
    at.session_state["upload_files"] = {"released:r1": "export.json"}
    at.session_state["dataset_key"] = "released:r1"
    return at.run()


def test_a_loaded_export_is_shown_as_released_values_without_a_preview_or_a_budget():
    at = _loaded_export()
    assert not at.exception
    start = next(m.value for m in at.markdown if m.value.startswith("**Start here:**"))
    assert "released values" in start and "true counts" not in start and "coloured line" not in start, start
    assert "Already private" in start
    assert not [s for s in at.select_slider if s.key == "data_epsilon"]  # no noisy preview of released values
    specs = _chart_specs(at)
    assert not any("true counts" in spec or "noisy release" in spec for spec in specs)
    assert any(re.search(r'"name": ?"released values"', spec) for spec in specs)
    assert "Budget remaining" not in [m.label for m in at.sidebar.metric]
    assert not [n for n in at.sidebar.number_input if n.key == "sidebar_total_epsilon"]
    assert any("Already private: releases from it are post-processing and cost nothing" in c.value
               for c in at.sidebar.caption)


def test_compare_on_a_loaded_export_neither_warns_of_private_data_nor_offers_a_proxy():
    at = _loaded_export()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert not any("Tuned on the private data" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "compare_make_proxy"]
    assert any("released values of this export" in i.value for i in at.info)


def _choose_under(definition: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["privacy_definition"] = definition
    at.run()
    return at.switch_page("pages/choose_epsilon.py").run()


@pytest.mark.parametrize("definition", ["pure", "approx", "zcdp"])
def test_identity_is_plain_laplace_noise_under_every_definition(definition):
    at = _choose_under(definition)
    at.selectbox(key="choose_mechanism").set_value("identity").run()
    assert not at.exception
    assert not any("not plain Laplace noise" in c.value for c in at.caption)
    assert any(m.label == "Noise scale per bin" for m in at.metric), [m.label for m in at.metric]
    at.selectbox(key="choose_mechanism").set_value("hb").run()  # hb's error is a sum over a tree: not plain Laplace
    assert any("not plain Laplace noise" in c.value for c in at.caption)


def test_use_this_epsilon_says_what_it_handed_on_and_where():
    at = _choose_under("pure")
    at.selectbox(key="choose_mechanism").set_value("identity").run()
    at.button(key="choose_use").click().run()
    assert not at.exception
    toasts = [t.value for t in at.toast]
    assert toasts and "Handed on ε = " in toasts[0] and "the mechanism identity" in toasts[0], toasts
    assert "Release" in toasts[0] and "Gradual release" in toasts[0]
    assert any(s.value == toasts[0] for s in at.success)  # and stays on the page, beside the links
    at.run()
    assert any(s.value.startswith("Handed on ε = ") for s in at.success)


def test_mechanism_pickers_list_each_mechanism_with_its_description():
    at = _choose_under("pure")
    for options in (at.selectbox(key="choose_mechanism").options, at.multiselect(key="targets_mechanisms").options):
        assert options and all(" — " in o for o in options), options
        assert any(o.startswith("sreb-gca — ") for o in options) or any(o.startswith("hb — ") for o in options)
    at.switch_page("pages/release.py").run()
    release_labels = at.selectbox(key="release_mechanism").options
    assert "identity — Noise on every count: the baseline the others are measured against." in release_labels
    at.switch_page("pages/tables.py").run()
    tables = (at.selectbox(key="tables_release_mechanism").options, at.multiselect(key="tables_mechanisms").options)
    for options in tables:
        assert options and all(" — " in o for o in options), options


# A dataset key of an upload (``upload:<sha1 prefix>:<column>:<bins>:<edges>:<shape>``) is an internal handle.
UPLOAD_KEY = re.compile(r"upload:[0-9a-f]{6,}")
# Field names of the release history (core.release.publish.history_entry) and of the ledger store's tables
# (core.privacy.store): code, not words. Names that are also plain words ("mechanism", "workload", "time", "note")
# are left out; the CSV downloads keep every raw field, so only what a page renders is checked.
RAW_FIELDS = ("privacy_loss_unit", "privacy_loss", "export_id", "noise_sampler", "noise_path", "values_hash",
              "fingerprint", "epoch", "params", "tuned_on", "workspace", "stream")


def _rendered(at) -> tuple[list[str], list[str]]:
    """(every text a person reads on the page and in the sidebar, every table's column headers)."""
    texts = [e.value for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                                  "success", "error", "toast") for e in getattr(at, kind)]
    texts += [f"{m.label} {m.value}" for m in at.metric] + [o for s in at.selectbox for o in s.options]
    return texts, [str(c) for frame in at.dataframe for c in frame.value.columns]


def _no_internal_words(at, page: str) -> None:
    texts, headers = _rendered(at)
    keys = [t for t in texts if UPLOAD_KEY.search(t)]
    raw = [t for t in texts if any(f in t for f in RAW_FIELDS if "_" in f)]
    assert not keys, f"{page} shows an upload's internal key: {keys}"
    assert not raw, f"{page} shows a raw field name: {raw}"
    assert not [h for h in headers if h in RAW_FIELDS], f"{page} has raw column headers: {headers}"


def test_no_page_shows_an_upload_key_or_a_raw_store_field():
    key = "upload:6e000797ab09::::"
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["uploads"] = {key: Histogram.from_counts([5.0, 0.0, 12.0, 3.0], name="bills")}
    at.session_state["upload_files"] = {key: "bills.csv"}
    at.session_state["dataset_key"] = key
    at.run()
    _no_internal_words(at, "app.py")  # the shell: sidebar and the first page
    at.switch_page("pages/release.py").run()
    at.number_input(key="release_epsilon").set_value(0.5)
    at.button(key="release_spend").click().run()
    assert not at.exception and at.session_state.releases, [e.value for e in at.error]
    for page in PAGE_PATHS:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        _no_internal_words(at, page)
    at.session_state["dataset_key"] = "sample:smooth"  # the release was made on another dataset
    at.switch_page("pages/release.py").run()
    made_on = [w.value for w in at.warning if "was made on" in w.value]
    assert made_on and "**bills**" in made_on[0], made_on
    _no_internal_words(at, "pages/release.py")
    history = next(d.value for d in at.dataframe if "Privacy loss" in d.value.columns)
    assert list(history["Privacy loss"]) == ["ε = 0.5"] and list(history["Dataset"]) == ["bills"]


RECORDS = b"age,city\n" + b"\n".join(f"{20 + i % 50},{'AB'[i % 2]}".encode() for i in range(60)) + b"\n"


def test_raw_records_offer_the_files_columns_and_keep_the_upload_open():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.expander[0].proto.expanded  # folded on the first screen
    at.file_uploader(key="data_upload").set_value(("people.csv", RECORDS, "text/csv")).run()
    at.checkbox(key="data_as_records").check().run()
    assert at.expander[0].label == "Upload a histogram" and at.expander[0].proto.expanded  # stays open
    assert at.selectbox(key="data_column").options == ["age", "city"]
    at.selectbox(key="data_column").set_value("city")
    at.button(key="data_use").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state.uploads[at.session_state.dataset_key].domain.size == 2  # A and B


def test_records_uploaded_as_counts_are_pointed_to_the_raw_records_option():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.file_uploader(key="data_upload").set_value(("people.csv", RECORDS, "text/csv")).run()
    at.button(key="data_use").click().run()
    errors = [e.value for e in at.error]
    assert any("needs a 'count' column" in e and "The file holds raw records" in e for e in errors), errors


def _words_on_screen(at) -> str:
    """Subheaders, captions, warnings, metric labels and chart specs of the page, in one string."""
    parts = [e.value for kind in ("subheader", "caption", "warning", "info") for e in at.get(kind)]
    parts += [m.label for m in at.metric] + [json.dumps(json.loads(spec), ensure_ascii=False)
                                             for spec in _chart_specs(at)]  # "−" is escaped in the specs
    return "\n".join(parts)


def test_the_release_page_on_a_loaded_export_never_calls_its_values_true():
    """A release made from a re-uploaded export is drawn against released values: its charts, legends, axis
    titles, coverage metric and captions say so (never "true"), with the secure path and with exploration noise."""
    at = _loaded_export()
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("identity").run()
    for noise in ("secure", "exploration"):
        at.radio(key="release_noise_path").set_value(noise).run()
        at.button(key="release_spend").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        words = _words_on_screen(at)
        assert "Released histogram over the released values" in words
        assert re.search(r'"name": ?"released values"', words) and "answers on the released values" in words
        assert "released − released value" in words and "released value of the bin" in words
        assert not re.search(r"\btrue\b", words, re.IGNORECASE), [line for line in words.splitlines()
                                                                  if re.search(r"\btrue\b", line, re.I)][:5]


def test_the_release_page_on_private_data_says_true_counts_for_the_curator_only():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("identity").run()
    at.button(key="release_spend").click().run()
    words = _words_on_screen(at)
    assert "Released histogram over the true counts" in words and "true counts (curator only)" in words
    assert "answers on the true counts (curator only)" in words and "released − true count" in words


def test_compare_analytic_preview_is_drawn_on_the_ledgers_unit():
    """Before any run, Compare's analytic curves are on the axis the results will have: ρ on a ρ ledger."""
    record_ledger(Ledger(Budget.zcdp(0.5, 1e-6)))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "compare_analytic" in c.proto.id]
    axis = chart["layout"]["xaxis"]
    assert axis["title"]["text"].startswith("ρ (zCDP") and all("." in t or t.isdigit() for t in axis["ticktext"])
