"""Every rendered page speaks to people: no argument names, modules or spec sections in what users read.

Walks the AppTest element tree of every page (and a few states that show special messages) and scans
labels, help texts, captions, alerts and metrics. Code blocks, charts and tables are data, not messages.
"""

import re
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.testing.v1 import AppTest

from dplens import ui

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE_PATHS = [path for _, path, _, _ in ui.PAGES]
SKIPPED = {"plotly_chart", "arrow_data_frame", "code", "json", "dataframe", "table", "arrow_table"}
PATTERNS = {
    "argument": re.compile(r"\b[a-z][a-z_]*[a-z]=(?![=\d.])"),          # data=, rng= (not ε=1 or n=4096)
    "module": re.compile(r"\b(?:core|ui|pages|np|numpy|scipy)\.[a-z_]|\b\w+\.py\b|\b__\w+__\b"),
    "spec section": re.compile(r"\bspec\b[^.]{0,30}(?:§|section)", re.IGNORECASE),
    "identifier": re.compile(r"`[a-z]+_[a-z_]+`"),                     # `expected_mse`, `noise_scale`
    "developer": re.compile(r"not registered in this build|\bkwargs?\b|\bTraceback\b|\bNone\b|docstring"),
}


def _texts(node) -> list[str]:
    out: list[str] = []
    children = getattr(node, "children", None)
    if children is not None and not hasattr(node, "proto"):
        for child in children.values():
            out += _texts(child)
        return out
    if getattr(node, "type", "") in SKIPPED:
        return out
    proto = getattr(node, "proto", None)
    if proto is not None:
        out += [v for v in _strings(MessageToDict(proto)) if v]
    if children is not None:
        for child in children.values():
            out += _texts(child)
    return out


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in ("id", "formId", "type", "spec", "data", "url")
                for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def violations(at: AppTest) -> list[str]:
    """(pattern name, offending text) pairs for everything the user can read on the rendered page."""
    found = []
    for text in _texts(at.main) + _texts(at.sidebar):
        for name, pattern in PATTERNS.items():
            if pattern.search(text):
                found.append(f"{name}: {text[:160]!r}")
    return found


def open_page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    return at.switch_page(path).run()


@pytest.mark.parametrize("path", PAGE_PATHS, ids=PAGE_PATHS)
def test_no_page_names_arguments_modules_or_spec_sections(path):
    at = open_page(path)
    assert not at.exception
    assert violations(at) == []


def test_choose_epsilon_for_a_mechanism_without_a_formula_says_what_to_do():
    at = open_page("pages/choose_epsilon.py")
    at.selectbox(key="choose_mechanism").set_value("hb")
    at.radio(key="choose_kind").set_value("MAE per query").run()
    assert not at.exception
    assert violations(at) == []
    assert any("simulat" in i.value for i in at.info)


def test_the_scanner_catches_each_pattern():
    texts = ["pass data= and rng= to estimate", "see dplens.core.analysis.selection", "spec \N{SECTION SIGN}6(d)",
             "mechanism not registered in this build"]
    assert all(any(p.search(t) for p in PATTERNS.values()) for t in texts)
    assert not any(p.search("identity, ε=1 at n=4096") for p in PATTERNS.values())


def test_pages_after_a_release_a_sweep_and_the_max_query_bounds_speak_to_people():
    at = open_page("pages/release.py")
    at.selectbox(key="release_mechanism").set_value("hb").run()
    at.button(key="release_spend").click().run()
    assert not at.exception and at.session_state.releases
    assert violations(at) == []
    at = open_page("pages/compare.py")
    at.multiselect(key="compare_mechanisms").set_value(["hb"])
    at.slider(key="compare_trials").set_value(2)
    at.slider(key="compare_points").set_value(2)
    at.button(key="compare_run").click().run()
    assert not at.exception
    assert violations(at) == []
    at = open_page("pages/choose_epsilon.py")
    at.radio(key="useful_kind").set_value("Max query (Lemma 4.2, Theorem 4.4)").run()
    assert not at.exception
    assert violations(at) == []
