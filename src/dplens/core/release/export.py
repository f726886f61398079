"""Serialise releases to CSV / JSON bytes with full metadata. Only released values leave; never true counts.

Only secure releases leave: ``release_metadata``/``release_to_json`` refuse the exploration path
(seeded noise that anyone with the seed can subtract), and no export records a seed or a noise
stream (``NEVER_EXPORTED``). The export id ties a file to its spend in the ledger.

>>> import numpy as np
>>> from dplens.core.mechanisms import Release
>>> from dplens.core.privacy.definitions import PureDP
>>> r = Release("identity", PureDP(1.0), 1.0, np.array([1.5, 2.0]), np.array([1.5, 2.0]))
>>> release_to_csv(r, ExportKeys(("age",), (("a", "=cmd|x"),))).decode().splitlines()
['age,count', 'a,1.5', "'=cmd|x,2"]
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dplens import __version__
from dplens.core.data.signing import sign_document
from dplens.core.mechanisms import NEIGHBOURING, Release
from dplens.core.privacy.noise import NOISE_PATHS, NOISE_SAMPLERS
from dplens.core.release.provenance import exported_number as _number

if TYPE_CHECKING:
    from dplens.core.analysis.intervals import Intervals
    from dplens.core.data.domain import Histogram
    from dplens.core.privacy.definitions import Privacy
    from dplens.core.queries.workloads import Workload

_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
EXPORTABLE_NOISE_PATHS = ("secure",)
NEVER_EXPORTED = ("seed", "stream")  # history keys that would let anyone regenerate exploration noise
SIMULATION_LABEL = "simulation, not a private release"


def check_exportable(noise_path: str) -> None:
    """Raise unless releases made on ``noise_path`` may leave the app.

    >>> check_exportable("exploration")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: noise path 'exploration' is a simulation, not a private release: its seeded noise can be regenerated
    and subtracted, so it is never exported; release with the secure noise path
    """
    if noise_path not in EXPORTABLE_NOISE_PATHS:
        raise ValueError(f"noise path {noise_path!r} is a {SIMULATION_LABEL}: its seeded noise can be regenerated "
                         "and subtracted, so it is never exported; release with the secure noise path")


def neutralise(cell: object) -> str:
    """Make a label safe for spreadsheets: a leading =, +, -, @, tab or CR gets a ' prefix (OWASP).

    >>> neutralise("=SUM(A1)"), neutralise("plain")
    ("'=SUM(A1)", 'plain')
    """
    text = str(cell)
    return "'" + text if text.startswith(_FORMULA_PREFIXES) else text


def _csv_text(cell: object) -> str:
    """A neutralised text cell; a CR becomes LF, which the writer (lineterminator "\\n") quotes.

    >>> _csv_text("a\\rb")
    'a\\nb'
    """
    return neutralise(cell).replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class ExportKeys:
    """What names each released value in an export: the histogram's axes as the upload named them, with
    their labels, and for workload answers each query in words and as a spec (``dplens.core.queries.describe``).

    >>> from dplens.core.data.domain import Histogram
    >>> from dplens.core.queries.workloads import Prefix
    >>> keys = ExportKeys.of(Histogram.from_counts([1, 2], labels=[["young", "old"]], axis_names=["age"]), Prefix(2))
    >>> keys.cells(), keys.query_texts
    ([('young',), ('old',)], ('bin young', 'bins young to old'))
    """

    axis_names: tuple[str, ...] = ("bin",)
    axis_labels: tuple[tuple[str, ...], ...] = ()
    query_texts: tuple[str, ...] = ()
    query_specs: tuple[str, ...] = ()

    @classmethod
    def of(cls, histogram: Histogram, workload: Workload | None = None) -> ExportKeys:
        """The keys of ``histogram`` (a ``dplens.core.data.domain.Histogram``), and of ``workload``'s queries if
        given."""
        from dplens.core.queries.describe import describe_queries

        names = tuple(histogram.domain.names)
        labels = tuple(tuple(histogram.labels[axis]) if axis < len(histogram.labels)
                       else tuple(str(i) for i in range(size)) for axis, size in enumerate(histogram.domain.sizes))
        texts, specs = describe_queries(workload, labels, names) if workload is not None else ((), ())
        return cls(names, labels, tuple(texts), tuple(specs))

    @classmethod
    def for_release(cls, histogram: Histogram, release: Release, workload: Workload | None) -> ExportKeys:
        """The keys an export of ``release`` needs: the histogram's cells and the workload's queries (a JSON export
        carries the workload answers with their queries; a CSV of answers too)."""
        return cls.of(histogram, workload)

    def cells(self) -> list[tuple[str, ...]]:
        """One key per cell of the flattened (row-major) histogram: its label on each axis."""
        return list(itertools.product(*self.axis_labels))


def release_to_csv(release: Release, keys: ExportKeys | None = None, intervals: Intervals | None = None) -> bytes:
    """CSV of the released histogram (one column per axis, named as the upload named it, then ``count``), or
    ``query,answer`` when there is no estimate (then ``description,spec`` of each query, when ``keys`` has them).

    ``intervals`` (``dplens.core.analysis.intervals.Intervals``) adds the columns ``lower,upper,level``.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    spread = ("lower", "upper", "level") if intervals is not None else ()
    lead: list[tuple[str, ...]]
    tail: list[tuple[str, ...]]
    if release.estimate is not None:
        values = release.estimate
        cells: list[tuple[str, ...]] = (keys.cells() if keys is not None and keys.axis_labels
                                        else [(str(i),) for i in range(len(values))])
        names = keys.axis_names if keys is not None and keys.axis_labels else ("bin",)
        if len(cells) != len(values):
            raise ValueError(f"{len(cells)} labelled cells for {len(values)} released values")
        header, lead, tail = (*names, "count"), cells, [()] * len(values)
    else:
        values = release.answers
        described = keys is not None and len(keys.query_texts) == len(values)
        header = ("query", "answer")
        lead = [(str(i),) for i in range(len(values))]
        tail = (list(zip(keys.query_texts, keys.query_specs, strict=True)) if keys is not None and described
                else [()] * len(values))
        spread = (*spread, *(("description", "spec") if described else ()))
    writer.writerow([_csv_text(name) for name in (*header, *spread)])  # axis names are the upload's own text
    for i, value in enumerate(values):
        extra = () if intervals is None else (_number(intervals.lower[i]), _number(intervals.upper[i]),
                                              _number(intervals.level))
        writer.writerow((*(_csv_text(k) for k in lead[i]), _number(value), *extra, *(_csv_text(t) for t in tail[i])))
    return buffer.getvalue().encode()


def release_metadata(release: Release, *, workload: str, noise_path: str, dataset: str | None = None,
                     noise_sampler: str | None = None, export_id: str | None = None) -> dict:
    """The metadata every export carries (mechanism, params, ε, loss, neighbouring notion, export id, ...).

    ``noise_sampler`` is ``dplens.core.privacy.noise.noise_sampler(source)``: which sampler the path actually used.
    ``export_id`` is the id of the ledger spend that paid for it. Never a seed.

    Raises:
        ValueError: for a release on a path that may not leave (``check_exportable``).
    """
    check_exportable(noise_path)
    return {
        "mechanism": release.mechanism,
        **privacy_metadata(release),
        "privacy_loss": release.privacy_loss,
        "privacy_loss_unit": release.loss_unit,
        "params": {k: jsonable(v) for k, v in release.params.items()},
        "workload": workload,
        "noise_path": noise_path,
        "noise_sampler": noise_sampler,
        "noise_policy": noise_policy(noise_path, noise_sampler),
        "neighbouring": NEIGHBOURING,
        "dataset": neutralise(dataset) if dataset else None,
        "export_id": export_id,
        "version": __version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def noise_policy(noise_path: str, noise_sampler: str | None) -> str:
    """The noise policy in words (what produced the noise, and that no seed can regenerate it).

    >>> noise_policy("secure", "opendp-integer-laplace")[:60]
    'secure path: OpenDP samplers (exact discrete Laplace on a la'
    """
    sampler = f"; sampler: {NOISE_SAMPLERS[noise_sampler]}" if noise_sampler in NOISE_SAMPLERS else ""
    return (f"{noise_path} path: {NOISE_PATHS.get(noise_path, 'unknown')}{sampler}. No seed is kept: the noise "
            "cannot be regenerated or subtracted.")


def privacy_metadata(release: Release) -> dict:
    """The privacy definition and parameters of a release: definition, ε, δ, ρ and σ (Gaussian) or scale.

    ``rho`` is the zCDP cost (ε²/2 for pure ε-DP; None for (ε, δ), which implies no ρ);
    ``charged`` is the cost in the definition's own unit (what a ledger subtracts).

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> from dplens.core.queries.workloads import Identity
    >>> release = MECHANISMS["identity"].run(np.ones(2), Identity(2), 1.0, np.random.default_rng(0))
    >>> privacy_metadata(release)["rho"], privacy_metadata(release)["noise_scale"]
    (0.5, 1.0)
    """
    from dplens.core.privacy.definitions import ZCDP, PureDP

    cost = release.budget
    definition = release.params.get("definition", "pure")
    rho = cost.to_zcdp().rho if isinstance(cost, PureDP | ZCDP) else None
    gaussian = release.params.get("noise") == "gaussian"
    return {
        "definition": definition,
        "epsilon": release.epsilon,
        "delta": float(release.params.get("delta", 0.0)),
        "rho": rho,
        "noise": "gaussian" if gaussian else "laplace",
        "sigma": release.params.get("sigma") if gaussian else None,
        "noise_scale": None if gaussian else release.params.get("noise_scale"),
        "charged": {"epsilon": cost.epsilon} if isinstance(cost, PureDP) else (
            {"rho": cost.rho} if isinstance(cost, ZCDP) else {"epsilon": cost.epsilon, "delta": cost.delta}),
    }


def privacy_from_metadata(doc: Mapping[str, Any]) -> Privacy:
    """The privacy value an exported release's metadata states (round-trip of ``privacy_metadata``).

    >>> privacy_from_metadata({"definition": "zcdp", "charged": {"rho": 0.1}})
    ZCDP(rho=0.1)
    """
    from dplens.core.privacy.definitions import ZCDP, ApproxDP, PureDP

    charged = doc["charged"]
    if doc["definition"] == "zcdp":
        return ZCDP(charged["rho"])
    if doc["definition"] == "approx":
        return ApproxDP(charged["epsilon"], charged["delta"])
    return PureDP(charged["epsilon"])


def jsonable(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value if isinstance(value, int | float | str | bool | type(None)) else str(value)


def release_to_json(release: Release, *, workload: str, noise_path: str, dataset: str | None = None,
                    keys: ExportKeys | None = None, noise_sampler: str | None = None,
                    export_id: str | None = None, intervals: Intervals | None = None,
                    tuned_on: str | None = None) -> str:
    """JSON with the metadata and the released values (``counts`` or ``answers``); secure releases only; signed
    by this installation (``dplens.core.data.signing``: a re-upload is already private where its key is trusted).

    With ``keys``: counts carry ``axis_names``, ``axis_labels`` (per axis) and ``labels`` (per cell, axes joined
    by "|"), and the ``workload_answers`` computed from them; answers carry ``query_descriptions`` and
    ``query_specs`` (one per answer).
    """
    doc = release_metadata(release, workload=workload, noise_path=noise_path, dataset=dataset,
                           noise_sampler=noise_sampler, export_id=export_id)
    if tuned_on is not None:  # what the choice of mechanism and ε was tuned on (public data, a DP proxy, ...)
        doc["tuned_on"] = neutralise(tuned_on)
    if release.estimate is not None:
        doc["counts"] = [float(v) for v in release.estimate]
        if keys is not None and keys.axis_labels:
            cells = keys.cells()
            if len(cells) != len(doc["counts"]):
                raise ValueError(f"{len(cells)} labelled cells for {len(doc['counts'])} released values")
            doc.update(axis_names=[neutralise(n) for n in keys.axis_names],
                       axis_labels=[[neutralise(v) for v in axis] for axis in keys.axis_labels],
                       labels=["|".join(neutralise(v) for v in cell) for cell in cells])
        if keys is not None and len(keys.query_texts) == len(release.answers):  # the query design, post-processed
            doc.update(workload_answers=[float(v) for v in release.answers],
                       query_descriptions=[neutralise(t) for t in keys.query_texts], query_specs=list(keys.query_specs))
    else:
        doc["answers"] = [float(v) for v in release.answers]
        if keys is not None and len(keys.query_texts) == len(doc["answers"]):
            doc.update(query_descriptions=[neutralise(t) for t in keys.query_texts],
                       query_specs=list(keys.query_specs))
    if intervals is not None:  # dplens.core.analysis.intervals.Intervals, from the released output only
        doc.update(lower=[float(v) for v in intervals.lower], upper=[float(v) for v in intervals.upper],
                   level=intervals.level, simultaneous=intervals.simultaneous, interval_method=intervals.method)
    return sign_document(doc)  # this installation's Ed25519 signature over values and metadata


def history_to_csv(entries: Sequence[Mapping[str, object]]) -> bytes:
    """Release history (one row per charge) as CSV; the header and label-like fields are neutralised, seeds left out.

    >>> history_to_csv([{"epsilon": 0.5, "seed": 7, "stream": 0}]).decode().split()
    ['epsilon', '0.5']
    """
    buffer = io.StringIO()
    entries = [{k: v for k, v in e.items() if k not in NEVER_EXPORTED} for e in entries]
    columns = sorted({k for e in entries for k in e}) or ["label", "epsilon"]
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([_csv_text(column) for column in columns])
    for entry in entries:
        writer.writerow([_csv_text(v) if isinstance(v, str) else v for v in (entry.get(c) for c in columns)])
    return buffer.getvalue().encode()


def frame_to_csv(frame: pd.DataFrame) -> bytes:
    """``frame`` as the bytes of a CSV download, its header and text cells neutralised (``neutralise_frame``)."""
    text: str = neutralise_frame(frame).to_csv(index=False)
    return text.encode()


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` safe for spreadsheets: its column names and text cells neutralised, numbers untouched.

    For every table a page offers as a CSV download: dataset names (an upload's file name) and labels are text of
    the uploader's choosing.

    >>> import pandas as pd
    >>> neutralise_frame(pd.DataFrame({"=a": ["=b", "c"], "n": [-1, 2]})).to_csv(index=False).split()
    ["'=a,n", "'=b,-1", 'c,2']
    """
    safe = frame.rename(columns=lambda c: _csv_text(c) if isinstance(c, str) else c)
    for position in range(safe.shape[1]):
        column = safe.iloc[:, position]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_datetime64_any_dtype(column)):
            safe.isetitem(position, column.astype(object).map(lambda v: _csv_text(v) if isinstance(v, str) else v))
    return safe
