"""Every collected item, the doctests of ``src/dplens`` included, gets its own DPLENS_HOME.

``tests/conftest.py`` does the same for the tests (its fixture, set later, wins there). Without this, a doctest
that opens a store or fingerprints a dataset would make the installation key in the real home.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_dplens_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DPLENS_HOME", str(tmp_path_factory.mktemp("dplens-home")))
