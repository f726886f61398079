"""Where the app's own files are: ``app.py``, ``pages/`` and the sample data of ``data/``.

The repository keeps them at its top level. A wheel carries them as package data, ``dplens/_app/`` (``setup.py``
copies them there when it builds), read through :mod:`importlib.resources`; an editable install (``make run``)
has no ``_app`` folder and reads them from the repository it is installed from.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGED = "_app"  # the folder inside the dplens package that a wheel carries the app in (setup.py)


def app_root() -> Path:
    """The folder holding ``app.py``, ``pages/`` and ``data/``: the wheel's ``dplens/_app``, else the source tree.

    >>> (app_root() / "data" / "smooth.csv").is_file()
    True
    """
    packaged = resources.files("dplens").joinpath(PACKAGED)
    if packaged.is_dir():
        return Path(str(packaged))  # an installed wheel lies on disk: the Traversable is a real folder
    return Path(__file__).resolve().parents[4]  # src/dplens/core/data/ → the repository
