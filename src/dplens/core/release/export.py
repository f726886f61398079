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
import functools
import io
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO, overload

import numpy as np
import pandas as pd

from dplens import __version__
from dplens.core.data.signing import sign_document, write_signed
from dplens.core.data.streamed_json import CHUNK, NumberedNames
from dplens.core.mechanisms import NEIGHBOURING, Release
from dplens.core.privacy.noise import NOISE_PATHS, NOISE_SAMPLERS
from dplens.core.release.provenance import exported_number as _number

if TYPE_CHECKING:
    from dplens.core.analysis.intervals import Intervals
    from dplens.core.data.domain import Histogram
    from dplens.core.privacy.definitions import Privacy
    from dplens.core.queries.workloads import Workload

_FORMULA_PREFIXES = frozenset(("=", "+", "-", "@", "\t", "\r"))  # first characters a spreadsheet evaluates
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
    return "'" + text if text[:1] in _FORMULA_PREFIXES else text


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

    Unlabelled bins, and the rows of a workload too large to describe query by query, are named by a
    ``NumberedNames`` (made when read): 10^6 of them are not 10^6 strings held.

    >>> from dplens.core.data.domain import Histogram
    >>> from dplens.core.queries.workloads import Prefix
    >>> keys = ExportKeys.of(Histogram.from_counts([1, 2], labels=[["young", "old"]], axis_names=["age"]), Prefix(2))
    >>> keys.cells(), keys.query_texts
    ([('young',), ('old',)], ('bin young', 'bins young to old'))
    """

    axis_names: tuple[str, ...] = ("bin",)
    axis_labels: tuple[Sequence[str], ...] = ()
    query_texts: Sequence[str] = ()
    query_specs: Sequence[str] = ()

    @classmethod
    def of(cls, histogram: Histogram, workload: Workload | None = None) -> ExportKeys:
        """The keys of ``histogram`` (a ``dplens.core.data.domain.Histogram``), and of ``workload``'s queries if
        given."""
        from dplens.core.queries.describe import describe_queries

        names = tuple(histogram.domain.names)
        labels = tuple(tuple(histogram.labels[axis]) if axis < len(histogram.labels) else NumberedNames(size)
                       for axis, size in enumerate(histogram.domain.sizes))
        texts, specs = describe_queries(workload, labels, names) if workload is not None else ((), ())
        return cls(names, labels, _held(texts), _held(specs))

    @classmethod
    def for_release(cls, histogram: Histogram, release: Release, workload: Workload | None) -> ExportKeys:
        """The keys an export of ``release`` needs: the histogram's cells and the workload's queries (a JSON export
        carries the workload answers with their queries; a CSV of answers too)."""
        return cls.of(histogram, workload)

    def cells(self) -> list[tuple[str, ...]]:
        """One key per cell of the flattened (row-major) histogram: its label on each axis."""
        return list(itertools.product(*self.axis_labels))

    @property
    def cell_count(self) -> int:
        """How many cells the keys name (the product of the axes' lengths)."""
        return math.prod(len(axis) for axis in self.axis_labels)

    def cell_slice(self, start: int, stop: int) -> list[tuple[str, ...]]:
        """``cells()[start:stop]``, made without the others.

        >>> ExportKeys(("a", "b"), (("x", "y"), NumberedNames(3))).cell_slice(2, 4)
        [('x', '2'), ('y', '0')]
        """
        stop = min(stop, self.cell_count)
        if start >= stop:
            return []
        if len(self.axis_labels) == 1:
            return [(label,) for label in self.axis_labels[0][start:stop]]
        sizes = tuple(len(axis) for axis in self.axis_labels)
        where = np.unravel_index(np.arange(start, stop), sizes)  # row-major, as itertools.product
        columns = [[axis[i] for i in indices.tolist()] for axis, indices in zip(self.axis_labels, where, strict=True)]
        return list(zip(*columns, strict=True))


def _held(names: Sequence[str]) -> Sequence[str]:
    """Names as ``ExportKeys`` holds them: a lazy ``NumberedNames`` as it is, anything else as a tuple."""
    return names if isinstance(names, NumberedNames) else tuple(names)


@dataclass(frozen=True)
class _Column(Sequence[str]):
    """``length`` strings read a slice at a time through ``read(start, stop)``: a column of an export, written by
    ``dplens.core.data.streamed_json`` without a list of all its strings."""

    length: int
    read: Callable[[int, int], list[str]]

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.length)
            return self.read(start, stop) if step == 1 else self.read(0, self.length)[index]
        position = index + self.length if index < 0 else index
        if not 0 <= position < self.length:
            raise IndexError(f"value {index} of {self.length}")
        return self.read(position, position + 1)[0]

    def __iter__(self) -> Iterator[str]:
        for start in range(0, self.length, CHUNK):
            yield from self.read(start, start + CHUNK)


def _neutralised(names: Sequence[str], start: int, stop: int) -> list[str]:
    """``neutralise`` of each of ``names[start:stop]`` (inlined: 10^6 labels, several columns, two passes)."""
    return ["'" + text if text[:1] in _FORMULA_PREFIXES else text for text in map(str, names[start:stop])]


def _cell_labels(keys: ExportKeys, start: int, stop: int) -> list[str]:
    if len(keys.axis_labels) == 1:  # a 1-D cell's label is its bin's
        return _neutralised(keys.axis_labels[0], start, min(stop, keys.cell_count))
    return ["|".join(neutralise(v) for v in cell) for cell in keys.cell_slice(start, stop)]


def _released(values: Any) -> np.ndarray:
    """Released values as the float array an export writes (each value as ``float(v)`` gives it)."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"an export writes a flat vector of released values, got shape {array.shape}")
    return array


def release_to_csv(release: Release, keys: ExportKeys | None = None, intervals: Intervals | None = None) -> bytes:
    """CSV of the released histogram (one column per axis, named as the upload named it, then ``count``), or
    ``query,answer`` when there is no estimate (then ``description,spec`` of each query, when ``keys`` has them).

    ``intervals`` (``dplens.core.analysis.intervals.Intervals``) adds the columns ``lower,upper,level``.
    """
    buffer = io.StringIO()
    write_release_csv(buffer, release, keys, intervals)
    return buffer.getvalue().encode()


def write_release_csv(out: TextIO, release: Release, keys: ExportKeys | None = None,
                      intervals: Intervals | None = None) -> None:
    """Write ``release_to_csv``'s text to ``out`` (a text file opened with ``newline=""``), ``CHUNK`` rows at a time:
    no list of every row's labels."""
    writer = csv.writer(out, lineterminator="\n")
    spread = ("lower", "upper", "level") if intervals is not None else ()
    lead: Callable[[int, int], Sequence[tuple[str, ...]]] = _index_rows
    tail: Callable[[int, int], Sequence[tuple[str, ...]]] = _no_rows
    if release.estimate is not None:
        values = release.estimate
        labelled = keys is not None and bool(keys.axis_labels)
        count = keys.cell_count if keys is not None and labelled else len(values)
        if count != len(values):
            raise ValueError(f"{count} labelled cells for {len(values)} released values")
        header = (*(keys.axis_names if keys is not None and labelled else ("bin",)), "count")
        if keys is not None and labelled:
            lead = keys.cell_slice
    else:
        values = release.answers
        described = keys is not None and len(keys.query_texts) == len(values)
        header = ("query", "answer")
        if keys is not None and described:
            tail = functools.partial(_query_rows, keys)
        spread = (*spread, *(("description", "spec") if described else ()))
    writer.writerow([_csv_text(name) for name in (*header, *spread)])  # axis names are the upload's own text
    for start in range(0, len(values), CHUNK):
        stop = min(start + CHUNK, len(values))
        for i, keys_, texts in zip(range(start, stop), lead(start, stop), tail(start, stop), strict=True):
            extra = () if intervals is None else (_number(intervals.lower[i]), _number(intervals.upper[i]),
                                                  _number(intervals.level))
            writer.writerow((*(_csv_text(k) for k in keys_), _number(values[i]), *extra,
                             *(_csv_text(t) for t in texts)))


def _index_rows(start: int, stop: int) -> list[tuple[str, ...]]:
    return [(str(i),) for i in range(start, stop)]


def _no_rows(start: int, stop: int) -> list[tuple[str, ...]]:
    return [()] * (stop - start)


def _query_rows(keys: ExportKeys, start: int, stop: int) -> list[tuple[str, ...]]:
    return list(zip(keys.query_texts[start:stop], keys.query_specs[start:stop], strict=True))


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
    return sign_document(release_document(release, workload=workload, noise_path=noise_path, dataset=dataset,
                                           keys=keys, noise_sampler=noise_sampler, export_id=export_id,
                                           intervals=intervals, tuned_on=tuned_on))


def write_release_json(out: BinaryIO, release: Release, *, workload: str, noise_path: str, dataset: str | None = None,
                       keys: ExportKeys | None = None, noise_sampler: str | None = None,
                       export_id: str | None = None, intervals: Intervals | None = None,
                       tuned_on: str | None = None) -> None:
    """Write ``release_to_json``'s text to ``out`` as bytes, a chunk of values at a time
    (``dplens.core.data.signing.write_signed``): the same file, without the whole text or a list of its values."""
    write_signed(release_document(release, workload=workload, noise_path=noise_path, dataset=dataset, keys=keys,
                                  noise_sampler=noise_sampler, export_id=export_id, intervals=intervals,
                                  tuned_on=tuned_on), out)


def release_document(release: Release, *, workload: str, noise_path: str, dataset: str | None = None,
                     keys: ExportKeys | None = None, noise_sampler: str | None = None,
                     export_id: str | None = None, intervals: Intervals | None = None,
                     tuned_on: str | None = None) -> dict[str, Any]:
    """The JSON export's members before signing (``release_to_json``): its arrays as NumPy float arrays and lazy
    columns, which ``dplens.core.data.streamed_json`` writes as the lists they stand for.

    Raises:
        ValueError: for a release on a path that may not leave (``check_exportable``), or keys naming another
            number of cells than the release has.
    """
    doc = release_metadata(release, workload=workload, noise_path=noise_path, dataset=dataset,
                           noise_sampler=noise_sampler, export_id=export_id)
    if tuned_on is not None:  # what the choice of mechanism and ε was tuned on (public data, a DP proxy, ...)
        doc["tuned_on"] = neutralise(tuned_on)
    if release.estimate is not None:
        doc["counts"] = _released(release.estimate)
        if keys is not None and keys.axis_labels:
            if keys.cell_count != len(doc["counts"]):
                raise ValueError(f"{keys.cell_count} labelled cells for {len(doc['counts'])} released values")
            doc.update(axis_names=[neutralise(n) for n in keys.axis_names],
                       axis_labels=[_Column(len(axis), functools.partial(_neutralised, axis))
                                    for axis in keys.axis_labels],
                       labels=_Column(keys.cell_count, functools.partial(_cell_labels, keys)))
        if keys is not None and len(keys.query_texts) == len(release.answers):  # the query design, post-processed
            doc.update(workload_answers=_released(release.answers),
                       query_descriptions=_Column(len(keys.query_texts),
                                                  functools.partial(_neutralised, keys.query_texts)),
                       query_specs=keys.query_specs)
    else:
        doc["answers"] = _released(release.answers)
        if keys is not None and len(keys.query_texts) == len(doc["answers"]):
            doc.update(query_descriptions=_Column(len(keys.query_texts),
                                                  functools.partial(_neutralised, keys.query_texts)),
                       query_specs=keys.query_specs)
    if intervals is not None:  # dplens.core.analysis.intervals.Intervals, from the released output only
        doc.update(lower=_released(intervals.lower), upper=_released(intervals.upper),
                   level=intervals.level, simultaneous=intervals.simultaneous, interval_method=intervals.method)
    return doc


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
