"""One release for the Release page's history: what was charged, how, and how to reproduce it.

(Its intervals are computed by ``dplens.core.analysis.intervals``.)

>>> from dplens.core.mechanisms import Release
>>> from dplens.core.privacy.definitions import PureDP
>>> history_entry(Release("identity", PureDP(0.5), 0.5, np.zeros(1), None), number=1, dataset="d", workload="w",
...               seed=0, stream=0, noise_path="exploration")["number"]
1
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np

from dplens.core.mechanisms import Release


def history_entry(release: Release, *, number: int, dataset: str, workload: str, seed: int | None,
                  stream: int | None, noise_path: str, noise_sampler: str | None = None) -> dict[str, object]:
    """One row of the release history: what was charged, how, and how to reproduce it.

    >>> from dplens.core.privacy.definitions import PureDP
    >>> r = Release("identity", PureDP(0.5), 0.5, np.zeros(1), np.zeros(1), {"noise_scale": 2.0})
    >>> e = history_entry(r, number=1, dataset="smooth", workload="identity", seed=0, stream=0,
    ...                   noise_path="exploration")
    >>> e["epsilon"], e["params"]
    (0.5, '{"noise_scale": 2.0}')
    """
    return {
        "number": number,
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mechanism": release.mechanism,
        "epsilon": release.epsilon,
        "privacy_loss": release.privacy_loss,
        "privacy_loss_unit": release.loss_unit,
        "params": json.dumps(dict(release.params), sort_keys=True, default=_plain),
        "dataset": dataset,
        "workload": workload,
        "noise_path": noise_path,
        "noise_sampler": noise_sampler,
        "seed": seed,
        "stream": stream,
    }


def _plain(value: object) -> object:
    """JSON fallback for NumPy scalars/arrays and anything else (as text)."""
    return value.tolist() if isinstance(value, np.generic | np.ndarray) else str(value)
