"""The files a table release is exported as, the same from the Tables page and the command line.

Every text cell (levels, attribute names, marginal names) is neutralised for spreadsheets
(``dplens.core.release.export.neutralise``), as the histogram exports are. The marginals carry ``lower, upper, level``:
exact strategy-noise intervals where the mechanism states them, else Gaussian ones where the noise is analytic.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import math

import numpy as np
import pandas as pd
from scipy import special

from dplens.core.data.signing import sign_document
from dplens.core.release.export import neutralise
from dplens.core.tables.contract import INTERVAL_LEVEL
from dplens.core.tables.records import Table, marginals_to_csv, ranges_to_csv, records_to_csv


def table_marginals_frame(release, table: Table, level: float = INTERVAL_LEVEL) -> pd.DataFrame:
    """The released marginals as a long table with per-cell intervals when the noise allows exact ones."""
    estimates = release.marginal_estimates
    text = marginals_to_csv(release.workload, estimates, release.marginal_stds or [math.nan] * len(estimates),
                            table.levels)
    frame = pd.read_csv(io.StringIO(text), keep_default_na=False)
    z = float(special.ndtri(0.5 + level / 2))
    if release.marginal_halfwidths is not None and level == INTERVAL_LEVEL:  # exact, not Gaussian: strategies' noise
        half = np.concatenate([np.ravel(h) for h in release.marginal_halfwidths])
        frame["lower"], frame["upper"] = frame["count"] - half, frame["count"] + half
        frame["level"] = level
    elif release.marginal_stds is not None:
        frame["lower"], frame["upper"] = frame["count"] - z * frame["std"], frame["count"] + z * frame["std"]
        frame["level"] = level
    return frame


def _safe_header(text: str) -> str:
    """A CSV whose header row (the input's attribute names) is neutralised; the rows are left as they are."""
    header, newline, rest = text.partition("\n")
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([neutralise(name) for name in next(csv.reader([header]), [])])
    return out.getvalue() + newline + rest


def export_stem(metadata: dict) -> str:
    """The common start of a table release's file names.

    >>> export_stem({"mechanism": "mst", "rho": 0.5})
    'mst-rho0.5'
    """
    return f"{metadata['mechanism']}-rho{metadata['rho']:g}"


def table_export_files(release, table: Table, metadata: dict) -> dict[str, tuple[str, str, str]]:
    """File name → (label, text, mime) of a table release: metadata, synthetic records (synthesisers), the
    released marginals with intervals, and range answers (range workloads). The metadata lists the SHA-256 of each
    other file under ``files`` and is signed by this installation, so it vouches for the values too."""
    stem = export_stem(metadata)
    files: dict[str, tuple[str, str, str]] = {}
    safe = dataclasses.replace(table, levels={n: [neutralise(v) for v in levels]
                                              for n, levels in table.levels.items()})
    if release.records is not None:
        files[f"{stem}-synthetic.csv"] = ("Synthetic records (CSV)", _safe_header(records_to_csv(
            table.domain, release.records, safe.levels)), "text/csv")
    marginals = table_marginals_frame(release, safe)
    marginals["marginal"] = marginals["marginal"].astype(str).map(neutralise)
    files[f"{stem}-marginals.csv"] = ("Released marginals (CSV)", marginals.to_csv(index=False), "text/csv")
    ranges = ranges_to_csv(release.workload, release.marginal_estimates, safe.levels)
    if ranges is not None:
        files[f"{stem}-ranges.csv"] = ("Range answers (CSV)", ranges, "text/csv")
    # the metadata, with the SHA-256 of every released file, signed by this installation (dplens.core.data.signing)
    signed = json.loads(json.dumps({**metadata, "files": {name: hashlib.sha256(text.encode()).hexdigest()
                                                          for name, (_, text, _) in files.items()}}, default=str))
    return {f"{stem}.meta.json": ("Privacy metadata (JSON)", sign_document(signed, indent=2),
                                  "application/json"), **files}
