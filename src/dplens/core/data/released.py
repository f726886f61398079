"""Load a dplens export back as a *released* dataset: already-private output, with its metadata.

A release is post-processing-safe: anything computed from it alone costs no further privacy
(Dwork & Roth 2014, Proposition 2.1). So its values may be negative or fractional (noise), and
looking at, comparing or re-publishing them spends no budget. The true data never comes back.

>>> import numpy as np
>>> from dplens.core.release.export import release_to_json
>>> from dplens.core.mechanisms import Release
>>> from dplens.core.privacy.definitions import PureDP
>>> r = Release("identity", PureDP(1.0), 1.0, np.array([-1.5, 2.0]), np.array([-1.5, 2.0]), {"noise_scale": 1.0})
>>> back = load_release(release_to_json(r, workload="identity", noise_path="secure", dataset="ages.csv").encode())
>>> back.values.tolist(), back.metadata["mechanism"], back.metadata["dataset"]
([-1.5, 2.0], 'identity', 'ages.csv')
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

import numpy as np

from dplens.core.data.domain import Histogram

METADATA_KEYS = ("mechanism", "epsilon", "delta", "privacy_loss", "workload", "noise_path", "noise_sampler",
                 "neighbouring")  # a JSON object with all of these is a dplens release export
POST_PROCESSING = ("Already-private output: these values were released under differential privacy, so "
                   "anything computed from them alone (viewing, comparing, clipping, re-publishing) is "
                   "post-processing and costs no further privacy. No budget is spent on them.")


@dataclass(frozen=True, eq=False)
class ReleasedData:
    """Released values (``kind`` "counts" per bin or "answers" per query), their labels and metadata.

    ``axis_names`` and ``axis_labels`` (per axis) give the histogram's shape and names back, 2-D included.
    """

    values: np.ndarray
    kind: str
    labels: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    name: str = "release"
    axis_names: tuple[str, ...] = ()
    axis_labels: tuple[tuple[str, ...], ...] = ()

    def as_histogram(self) -> Histogram:
        """A viewable histogram: negative counts clipped to 0 (post-processing). Counts exports only.

        >>> ReleasedData(np.array([-1.0, 2.5]), "counts").as_histogram().vector.tolist()
        [0.0, 2.5]
        """
        if self.kind != "counts":
            raise ValueError("this export holds workload answers, not a histogram; it can be viewed but "
                             "not used as a dataset")
        values = np.clip(self.values, 0, None)
        if len(self.axis_labels) == 2 and len(self.axis_labels[0]) * len(self.axis_labels[1]) == values.size:
            shape = (len(self.axis_labels[0]), len(self.axis_labels[1]))
            return Histogram.from_counts(values.reshape(shape), labels=self.axis_labels,
                                         name=f"released: {self.name}"[:80], axis_names=self.axis_names or None)
        names = self.axis_names[:1] if len(self.axis_names) == 1 else None
        return Histogram.from_counts(values, labels=(self.labels,) if self.labels else (),
                                     name=f"released: {self.name}"[:80], axis_names=names)


def is_release_export(data: bytes) -> bool:
    """True for a dplens JSON export (all of METADATA_KEYS) or a CSV export with a negative or fractional value.

    >>> is_release_export(b"bin,count\\n0,-2.5\\n1,3\\n"), is_release_export(b"bin,count\\n0,2\\n")
    (True, False)
    >>> is_release_export(b"age,sex,count\\n0-9,F,1.5\\n0-9,M,2\\n")  # axes named as the upload named them
    True
    >>> import io
    >>> buffer = io.BytesIO(); np.save(buffer, np.arange(4096)); is_release_export(buffer.getvalue())
    False
    """
    if _binary(data):  # e.g. a .npy array: neither export is binary, and csv.reader chokes on its bytes
        return False
    try:
        return _json_export(data) is not None or _csv_export(data) is not None
    except (ValueError, csv.Error):
        return False


def _binary(data: bytes) -> bool:
    """NumPy's magic or a NUL byte near the start: not a text export."""
    return data.startswith(b"\x93NUMPY") or b"\x00" in data[:4096]


def _json_export(data: bytes) -> dict | None:
    text = data.decode("utf-8-sig", errors="replace").lstrip()
    if not text.startswith("{"):
        return None
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if isinstance(doc, dict) and all(k in doc for k in METADATA_KEYS) and ("counts" in doc or "answers" in doc):
        return doc
    return None


def _csv_export(data: bytes) -> tuple[str, list[str], list[list[str]], np.ndarray] | None:
    """(kind, header, rows, values) of a CSV export: key columns (one per axis, any names) then ``count``, or
    ``query,answer``; None when the CSV is not shaped like one or its values are plain non-negative integers."""
    text = data.decode("utf-8-sig", errors="replace")
    try:
        rows = [r for r in csv.reader(io.StringIO(text)) if r]
    except csv.Error:  # a stray CR, an over-long field: not the Release page's CSV
        return None
    header = [c.strip().lower() for c in rows[0]] if rows else []
    if header[:2] == ["query", "answer"]:
        kind, at = "answers", 1
    elif "count" in header and header.index("count") in (1, 2):
        kind, at = "counts", header.index("count")
    else:
        return None
    try:
        values = np.array([float(r[at]) for r in rows[1:]], dtype=float)
    except (ValueError, IndexError):
        return None
    if values.size == 0 or not np.all(np.isfinite(values)):
        return None
    if np.all(values >= 0) and np.all(values == np.round(values)):
        return None  # plain non-negative integer counts: an ordinary histogram, not evidently a release
    return kind, [c.strip() for c in rows[0][:at]], [r[:at] for r in rows[1:]], values


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null", int: "number",
               float: "number"}


def load_release(data: bytes, filename: str | None = None) -> ReleasedData:
    """Parse a dplens export (JSON with metadata, or the values-only CSV) as released data.

    Raises:
        ValueError: when the bytes are not a dplens export (say which format was expected).
    """
    name = (filename or "release").rsplit("/", 1)[-1]
    doc = None if _binary(data) else _json_export(data)
    if doc is not None:
        kind = "counts" if "counts" in doc else "answers"
        rule = f'the export\'s "{kind}" must be a non-empty list of finite numbers'
        if not isinstance(doc[kind], list):
            raise ValueError(f"{rule}, got a JSON {_JSON_TYPES.get(type(doc[kind]), 'value')}")
        bad = next((i for i, v in enumerate(doc[kind]) if isinstance(v, bool) or not isinstance(v, int | float)), None)
        if bad is not None:
            raise ValueError(f"{rule}; entry {bad} is a JSON {_JSON_TYPES.get(type(doc[kind][bad]), 'value')}")
        try:
            values = np.asarray(doc[kind], dtype=float)
        except OverflowError:  # an integer beyond float range
            raise ValueError(f"{rule}; one is too large") from None
        if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
            raise ValueError(rule)
        raw_labels = doc.get("labels") or ()
        if not isinstance(raw_labels, list | tuple):
            raise ValueError(f'the export\'s "labels" must be a list, got {type(raw_labels).__name__}')
        labels = tuple(str(v) for v in raw_labels)
        if labels and len(labels) != values.size:
            raise ValueError(f"the export has {len(labels)} labels for {values.size} values")
        metadata = {k: v for k, v in doc.items()
                    if k not in ("counts", "answers", "labels", "lower", "upper", "axis_names", "axis_labels",
                                 "workload_answers", "query_descriptions", "query_specs")}
        names, levels = doc.get("axis_names"), doc.get("axis_labels")
        names = tuple(str(n) for n in names) if isinstance(names, list) else ()
        levels = tuple(tuple(str(v) for v in axis) for axis in levels) if isinstance(levels, list) and all(
            isinstance(axis, list) for axis in levels) else ()
        return ReleasedData(values, kind, labels, metadata, name, names, levels)
    found = None if _binary(data) else _csv_export(data)
    if found is None:
        raise ValueError("not a dplens export: expected the Release page's JSON (with mechanism, epsilon, ...) "
                         "or its CSV (a column per axis then count, or query,answer)")
    kind, names, keys, values = found
    note = {"note": "the CSV export holds the values only; upload the JSON export for its metadata"}
    if len(names) == 2:  # A,B,count: levels in order of first appearance, row-major as exported
        levels = tuple(tuple(dict.fromkeys(key[axis] for key in keys)) for axis in (0, 1))
        return ReleasedData(values, kind, tuple("|".join(key) for key in keys), note, name, tuple(names), levels)
    cell_labels = [key[0] for key in keys]
    plain = all(label == str(i) for i, label in enumerate(cell_labels))
    axis = tuple(names) if kind == "counts" and names != ["bin"] else ()
    return ReleasedData(values, kind, () if plain else tuple(cell_labels), note, name, axis)
