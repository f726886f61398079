"""Comments, docstrings and messages cite nothing a reader cannot follow from the repository.

The design notes and the issue tracker live outside the repository, so a tracker number, a section of the
design notes or the name of one of their files points nowhere for a reader. Papers are cited by author and section
instead, corrections of a paper are stated in words, and longer explanations live in docs/ (see docs/benchmarks.md,
"Test conventions").
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("src", "pages", "tests", "app.py")
NOT_YET_SCANNED: tuple[str, ...] = ()
THIS_FILE = Path(__file__).resolve()

PATTERNS = {
    "issue number": re.compile(r"\bissues?\s*#?\d+|\(#\d+\)", re.IGNORECASE),
    "spec section": re.compile(r"\bspec\b\W{0,3}§", re.IGNORECASE),
    "erratum number": re.compile(r"\berrat(?:um|a)\s*§", re.IGNORECASE),
    # a numbered lettered item, unlike a paper's sections
    "spec-style section": re.compile(r"§\d+(?:\.\d+)*\s*\([a-z]'?\)"),
    "spec file": re.compile(r"\bspec\.md\b|shared/spec\b|(?<![\w./-])(?:algorithms|style|tables|privacy|"
                            r"peer-reference)\.md\b"),
}


def external_refs(text: str) -> list[tuple[int, str, str]]:
    """(line number, pattern name, line) for every line of ``text`` that cites an external reference.

    >>> [(n, kind) for n, kind, _ in external_refs("x = 1  # see docs/tables.md\\ny = 2  # spec \N{SECTION SIGN}7(a)")]
    [(2, 'spec section')]
    """
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for name, pattern in PATTERNS.items():
            if pattern.search(line):
                hits.append((number, name, line.strip()))
                break
    return hits


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for entry in SCANNED:
        path = ROOT / entry
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return [path for path in files
            if path.resolve() != THIS_FILE
            and not path.relative_to(ROOT).as_posix().startswith(NOT_YET_SCANNED)]


def test_the_scan_covers_the_code():
    names = {path.relative_to(ROOT).as_posix() for path in scanned_files()}
    assert {"app.py", "src/dplens/core/release/gradual.py", "src/dplens/ui/papers_view.py", "tests/conftest.py",
            "src/dplens/core/papers/literal.py",
            "src/dplens/core/papers/reproduce.py", "tests/test_papers_page.py", "tests/test_verdicts.py"} <= names
    assert any(name.startswith("pages/") for name in names)
    assert "tests/test_no_external_refs.py" not in names


S, N = "\N{SECTION SIGN}", "#"  # built here, so this file's own lines cite nothing


@pytest.mark.parametrize("line", [
    f"# issue {N}14", "(Issue " "17)", f"see ({N}22)", f"spec {S}7(a)", f"(Spec {S}2(e): rows)", f"erratum {S}3(d)2",
    f"errata {S}4(d)3–5", f"({S}2(c))", "see algorithms" ".md", "../shared/spec/privacy" ".md", "spec tables" ".md",
    f"(style.md {S}1.3)",
])
def test_each_kind_of_reference_is_caught(line):
    assert external_refs(f'x = 1  # {line}\n"""{line}"""'), line


@pytest.mark.parametrize("line", [
    "Koufogiannis, Han & Pappas, Sec. 4.2.1", "Qardaji et al. §IV-B", "Li et al. PVLDB 2014 §4",
    "see docs/tables.md", "a workload spec such as 'prefix'", "§2: coarse bins", "issue a release",
])
def test_citations_and_docs_pointers_pass(line):
    assert not external_refs(f"# {line}"), line


def test_no_file_cites_an_issue_or_an_external_spec():
    found = [f"{path.relative_to(ROOT).as_posix()}:{number}: [{name}] {line}"
             for path in scanned_files()
             for number, name, line in external_refs(path.read_text(encoding="utf-8"))]
    assert not found, ("cite the paper by author and section, state the correction in words, or point to "
                       "a docs/ page instead:\n" + "\n".join(found))
