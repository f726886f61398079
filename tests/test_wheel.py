"""The wheel runs on its own: built from a copy of the tree, installed into a new venv from requirements.lock, and run
from another folder (``dplens --version``, a release of the bundled ``smooth`` sample, ``dplens app`` answering its
health check). The venv gets the lock's pinned dependencies (from pip's cache when it has them) and then the wheel
with ``--no-deps``, so what runs is the wheel's own files, never the checkout's.

Also: the server settings ``dplens app`` passes as flags agree with ``.streamlit/config.toml`` (which a wheel does
not carry), and the file watcher is off when serving.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from dplens.cli import SERVER_SETTINGS
from tests.test_cli_app import free_port, wait_for_health

ROOT = Path(__file__).resolve().parent.parent
NOT_COPIED = (".venv", ".git", "site", "build", "dist", "test-artifacts", "__pycache__", "*.egg-info", ".hypothesis")


def test_the_server_flags_agree_with_the_checkouts_streamlit_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    flat = {f"{section}.{key}": value for section, values in config.items() for key, value in values.items()}
    as_flags = {key: str(value).lower() if isinstance(value, bool) else str(value) for key, value in flat.items()}
    serving_only = {"server.fileWatcherType"}  # a checkout's `streamlit run app.py` may reload; `dplens app` never
    assert as_flags == {k: v for k, v in SERVER_SETTINGS.items() if k not in serving_only}
    assert SERVER_SETTINGS["server.fileWatcherType"] == "none"


APP_TEST = """
from streamlit.testing.v1 import AppTest
from dplens.cli import app_script
at = AppTest.from_file(str(app_script()), default_timeout=120).run()
assert not at.exception, [e.value for e in at.exception]
assert any("smooth" in str(box.value) for box in at.selectbox), "the sidebar offers the bundled samples"
"""


def _pins(lock: str) -> dict[str, str]:
    text = (ROOT / lock).read_text(encoding="utf-8")
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", text, flags=re.MULTILINE))


def test_the_locks_are_layered_and_agree():
    run, test, docs = (_pins(f"requirements{kind}.lock") for kind in ("", "-test", "-docs"))
    assert {"streamlit", "opendp", "mbi", "kaleido"} <= set(run) and not {"pytest", "mkdocs", "dask"} & set(run)
    assert {"pytest", "mypy", "ruff", "dask"} <= set(test) and "mkdocs" in docs
    for larger in (test, docs):  # installing a larger lock over the app's only adds packages
        assert {name: larger.get(name) for name in run} == run
    assert all(test[name] == docs[name] for name in set(test) & set(docs))


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}\n" \
                                 f"{done.stderr[-4000:]}"
    return done.stdout


@pytest.mark.serial  # builds a wheel, makes a venv and starts a server
def test_the_wheel_installed_from_the_lock_runs_from_another_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"DPLENS_HOME": str(tmp_path / "home"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(*NOT_COPIED))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(tree)],
         cwd=tmp_path, env=env)
    (wheel,) = (tmp_path / "dist").glob("dplens-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for carried in ("dplens/_app/app.py", "dplens/_app/pages/release.py", "dplens/_app/data/smooth.csv",
                    "dplens/_app/data/survey-domain.json", "dplens/cli.py"):
        assert carried in names, carried
    assert not any(name.startswith(("tests/", "docs/", "bench/")) for name in names)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
    python, dplens = venv / "bin" / "python", venv / "bin" / "dplens"
    _run([str(python), "-m", "pip", "install", "-q", "--require-hashes", "-r", str(ROOT / "requirements.lock")],
         cwd=tmp_path, env=env)
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], cwd=tmp_path, env=env)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run([str(python), "-c", "import dplens.cli as c; print(c.__file__); print(c.app_script())"],
                 cwd=elsewhere, env=env).split()
    assert all(Path(p).is_relative_to(venv) for p in where), where  # the wheel's files, not the checkout's
    assert _run([str(dplens), "--version"], cwd=elsewhere, env=env).strip() == "dplens 0.1.0"
    _run([str(dplens), "release", "--input", "smooth", "--mechanism", "hb", "--workload", "prefix",
          "--epsilon", "0.5", "--budget", "5", "--output", "r.json"], cwd=elsewhere, env=env)
    assert (elsewhere / "r.json").stat().st_size > 0
    # the app's script and its first page (the Data page on the bundled smooth sample) run from the wheel's files
    _run([str(python), "-c", APP_TEST], cwd=elsewhere, env=env)

    port = free_port()
    server = subprocess.Popen([str(dplens), "app", "--port", str(port)], cwd=elsewhere, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_health(server, port, 120, "the installed dplens app")
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    from dplens.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"dplens {version('dplens')}\n"
