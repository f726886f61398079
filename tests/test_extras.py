"""Optional extras: a feature used without its extra fails where it is used, with one sentence naming the extra and
the install command (dplens.core.extras); the app shows that sentence as an error line, not a traceback."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dplens.core.extras import EXTRAS, MissingExtraError, available, missing_extra_message, require

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def hide(monkeypatch, *names: str) -> None:
    """Make ``names`` (and their loaded submodules) unimportable, as if their extra were not installed."""
    for name in names:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")] or [name]:
            monkeypatch.setitem(sys.modules, loaded, None)


def assert_names_extra(err: pytest.ExceptionInfo, extra: str) -> None:
    message = str(err.value)
    assert f"'{extra}' extra" in message and f"pip install 'dplens[{extra}]'" in message
    assert len(message.splitlines()) == 1
    assert isinstance(err.value, ValueError) and isinstance(err.value, ImportError)


def test_the_message_names_the_feature_the_extra_and_the_command():
    assert (missing_extra_message("MST", "tables")
            == "MST needs the optional 'tables' extra: pip install 'dplens[tables]'")
    with pytest.raises(ValueError, match="extra must be one of"):
        missing_extra_message("MST", "no-such-extra")


def test_every_feature_extra_and_the_dev_and_docs_extras_are_declared():
    declared = PYPROJECT["project"]["optional-dependencies"]
    assert set(EXTRAS) | {"dev", "docs"} <= set(declared)
    text = {extra: " ".join(declared[extra]) for extra in declared}
    assert "polars" in text["tables"] and "mbi" in text["tables"] and "opendp[mbi]" in text["tables"]
    assert "dask[distributed]" in text["cluster"] and "kaleido" in text["images"]
    for tool in ("pytest", "pytest-xdist", "hypothesis", "playwright", "ruff", "mypy"):
        assert tool in text["dev"]
    assert "mkdocs-material" in text["docs"]
    base = " ".join(PYPROJECT["project"]["dependencies"])
    for optional in ("polars", "mbi", "dask", "kaleido", "nbformat"):
        assert optional not in base, f"{optional} is optional: it belongs in an extra"
    assert "opendp>=" in base  # every secure draw goes through OpenDP: never optional
    assert all(not dep.split(";")[0].count("==") for dep in PYPROJECT["project"]["dependencies"])


def test_require_returns_the_module_and_hides_nothing_when_installed(monkeypatch):
    assert require("json", "tables", "MST").__name__ == "json"
    hide(monkeypatch, "json")
    assert not available("json")
    with pytest.raises(MissingExtraError) as err:
        require("json", "tables", "MST")
    assert_names_extra(err, "tables")


# ---------------------------------------------------------------- tables: MST, AIM, identity-pgm


@pytest.mark.parametrize("missing", ["polars", "mbi"])
@pytest.mark.parametrize("name", ["mst", "aim", "identity-pgm"])
def test_synthesis_without_the_tables_extra_names_it(monkeypatch, name, missing):
    from dplens.core.data.domain import Domain
    from dplens.core.queries.marginals import MarginalWorkload
    from dplens.core.tables.mechanisms import TABLE_MECHANISMS

    domain = Domain(("a", "b"), (2, 3))
    records = np.zeros((10, 2), dtype=np.int64)
    hide(monkeypatch, missing)
    with pytest.raises(MissingExtraError) as err:
        TABLE_MECHANISMS[name].run(records, MarginalWorkload.all_kway(domain, 1), 0.5, np.random.default_rng(0))
    assert_names_extra(err, "tables")
    assert str(err.value).startswith({"mst": "MST", "aim": "AIM"}.get(name, name) + " needs")


def test_sampling_without_the_tables_extra_names_it(monkeypatch):
    from dplens.core.tables.sampler import sample_records, synthesize_table

    hide(monkeypatch, "mbi")
    with pytest.raises(MissingExtraError) as err:
        sample_records(object(), 10, np.random.default_rng(0))
    assert_names_extra(err, "tables")
    hide(monkeypatch, "polars")
    with pytest.raises(MissingExtraError) as err:
        synthesize_table(object(), 10, np.random.default_rng(0))
    assert_names_extra(err, "tables")


# ---------------------------------------------------------------- cluster: Dask


@pytest.mark.parametrize("missing", ["dask", "distributed"])
def test_a_dask_scheduler_without_the_cluster_extra_names_it(monkeypatch, missing):
    from dplens.core.analysis import execution

    hide(monkeypatch, missing)
    with pytest.raises(MissingExtraError) as err:
        execution.dask_client("tcp://127.0.0.1:1")
    assert_names_extra(err, "cluster")
    with pytest.raises(MissingExtraError) as err:
        list(execution.execute({}, ["cell"], scheduler="local:1"))
    assert_names_extra(err, "cluster")


# ---------------------------------------------------------------- images: kaleido


def test_chart_images_without_the_images_extra_name_it(monkeypatch):
    import plotly.graph_objects as go

    from dplens.ui import chart_export

    hide(monkeypatch, "kaleido")
    assert not chart_export._image_export_ready()  # the page shows a caption naming the extra instead of buttons
    with pytest.raises(MissingExtraError) as err:
        chart_export._render_image(go.Figure(), "png")
    assert_names_extra(err, "images")


# ---------------------------------------------------------------- the app shows it as an error line


def test_the_app_shows_a_missing_extra_as_one_line_not_a_traceback(caplog):
    from dplens.ui.guard import error_line

    message = missing_extra_message("MST", "tables")
    assert error_line(MissingExtraError(message, name="polars")) == message
    assert not caplog.records  # a refused use, like a ValueError: not logged as a bug
