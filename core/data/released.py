"""Load a dplens export back as a *released* dataset: already-private output, with its metadata.

A release is post-processing-safe: anything computed from it alone costs no further privacy
(Dwork & Roth 2014, Proposition 2.1). So its values may be negative or fractional (noise), and
looking at, comparing or re-publishing them spends no budget. The true data never comes back.

>>> import numpy as np
>>> from core.release.export import release_to_json
>>> from core.mechanisms import Release
>>> r = Release("identity", 1.0, 1.0, np.array([-1.5, 2.0]), np.array([-1.5, 2.0]), {"noise_scale": 1.0})
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

from core.data.domain import Histogram

METADATA_KEYS = ("mechanism", "epsilon", "delta", "privacy_loss", "workload", "noise_path", "noise_sampler",
                 "neighbouring")  # a JSON object with all of these is a dplens release export
POST_PROCESSING = ("Already-private output: these values were released under differential privacy, so "
                   "anything computed from them alone (viewing, comparing, clipping, re-publishing) is "
                   "post-processing and costs no further privacy. No budget is spent on them.")


@dataclass(frozen=True, eq=False)
class ReleasedData:
    """Released values (``kind`` "counts" per bin or "answers" per query), their labels and metadata."""

    values: np.ndarray
    kind: str
    labels: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    name: str = "release"

    def as_histogram(self) -> Histogram:
        """A viewable histogram: negative counts clipped to 0 (post-processing). Counts exports only.

        >>> ReleasedData(np.array([-1.0, 2.5]), "counts").as_histogram().vector.tolist()
        [0.0, 2.5]
        """
        if self.kind != "counts":
            raise ValueError("this export holds workload answers, not a histogram; it can be viewed but "
                             "not used as a dataset")
        return Histogram.from_counts(np.clip(self.values, 0, None), labels=(self.labels,) if self.labels else (),
                                     name=f"released: {self.name}"[:80])


def is_release_export(data: bytes) -> bool:
    """True for a dplens JSON export (all of METADATA_KEYS) or a CSV export with a negative or fractional value.

    >>> is_release_export(b"bin,count\\n0,-2.5\\n1,3\\n"), is_release_export(b"bin,count\\n0,2\\n")
    (True, False)
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


def _csv_export(data: bytes) -> tuple[str, list[str], np.ndarray] | None:
    text = data.decode("utf-8-sig", errors="replace")
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:  # a stray CR, an over-long field: not the Release page's CSV
        return None
    if not rows or [c.strip().lower() for c in rows[0][:2]] not in (["bin", "count"], ["query", "answer"]):
        return None
    try:
        values = np.array([float(r[1]) for r in rows[1:] if r], dtype=float)
    except (ValueError, IndexError):
        return None
    if values.size == 0 or not np.all(np.isfinite(values)):
        return None
    if np.all(values >= 0) and np.all(values == np.round(values)):
        return None  # plain non-negative integer counts: an ordinary histogram, not evidently a release
    kind = "counts" if rows[0][0].strip().lower() == "bin" else "answers"
    return kind, [r[0] for r in rows[1:] if r], values


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
        metadata = {k: v for k, v in doc.items() if k not in ("counts", "answers", "labels", "lower", "upper")}
        return ReleasedData(values, kind, labels, metadata, name)
    found = None if _binary(data) else _csv_export(data)
    if found is None:
        raise ValueError("not a dplens export: expected the Release page's JSON (with mechanism, epsilon, ...) "
                         "or its CSV (bin,count or query,answer)")
    kind, labels, values = found
    plain = all(label == str(i) for i, label in enumerate(labels))
    return ReleasedData(values, kind, () if plain else tuple(labels),
                        {"note": "the CSV export holds the values only; upload the JSON export for its metadata"},
                        name)
