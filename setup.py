"""Build step: the wheel carries the app (``app.py``, ``pages/``, the samples of ``data/``) as ``dplens/_app/``.

The repository keeps them at its top level, where ``streamlit run app.py`` and an editable install (``make run``)
use them in place; ``dplens.core.data.bundle.app_root`` finds either. Everything else is in ``pyproject.toml``.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

APP_FILES = ("app.py", "pages/*.py", "data/*.csv", "data/*.json")


class BuildPyWithApp(build_py):
    """``build_py`` plus a copy of APP_FILES into the built package (not in editable mode: those use the tree)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "dplens" / "_app"
        for pattern in APP_FILES:
            for source in sorted(Path().glob(pattern)):
                (target / source).parent.mkdir(parents=True, exist_ok=True)
                self.copy_file(str(source), str(target / source))


setup(cmdclass={"build_py": BuildPyWithApp})
