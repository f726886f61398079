"""Load histograms from files, bytes or built-in samples; every bad input becomes a one-line DataError.

Accepted formats:
- CSV with a ``count`` column (and optionally a label column) → 1-D;
- CSV with ``row,col,count`` columns, or a header-less numeric matrix → 2-D
  (a header-less single column of numbers is read as 1-D counts);
- JSON ``{"counts": [...]}`` (nested lists for 2-D; optional ``"labels"`` and ``"name"``);
- ``.npy`` with a 1-D or 2-D numeric array;
- raw records: a CSV of rows + a column name + a bin count or bin edges (``histogram_from_records``).

>>> h = load_histogram(b"label,count\\na,3\\nb,0\\nc,5\\n")
>>> h.vector.tolist(), h.labels
([3.0, 0.0, 5.0], (('a', 'b', 'c'),))
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import Histogram
from core.limits import MAX_CELLS, MAX_UPLOAD_BYTES

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


class DataError(ValueError):
    """A histogram file or array is malformed; the message names the row/column and the rule."""


# name -> (file in data/, one-line description)
SAMPLE_DATASETS: dict[str, tuple[str, str]] = {
    "smooth": ("smooth.csv", "1-D, 4096 bins: smooth mixture of bumps, 100,000 records (like INCOME)"),
    "spiky": ("spiky.csv", "1-D, 4096 bins: sparse and spiky, 95% zeros (like NETTRACE)"),
    "heavy-tail": ("heavy_tail.csv", "1-D, 4096 bins: Zipf-like heavy tail (like SEARCHLOGS)"),
    "dense": ("dense.csv", "1-D, 512 bins: dense, no empty bins (like PATENT)"),
    "tips-bill": ("tips_bill.csv", "1-D, 51 bins: restaurant bills in $1 bins (plotly's tips dataset, real)"),
    "grid-2d": ("grid_2d.csv", "2-D, 64 × 64: two blobs on a grid, row,col,count (like a 2-D census grid)"),
}
DEFAULT_DATASET = "smooth"


def _fail(message: str) -> DataError:
    return DataError(message)


def _check_size(nbytes: int) -> None:
    if nbytes > MAX_UPLOAD_BYTES:
        raise _fail(f"file is {nbytes / 2**20:.1f} MB; the limit is {MAX_UPLOAD_BYTES / 2**20:.0f} MB")
    if nbytes == 0:
        raise _fail("file is empty")


def load_histogram(source: str | Path | bytes, *, filename: str | None = None,
                   name: str | None = None, grid_shape: tuple[int, int] | None = None,
                   notes: list[str] | None = None) -> Histogram:
    """Load a histogram from a sample name, a path, or uploaded bytes (format sniffed or by ``filename``).

    Args:
        grid_shape: the declared (rows, cols) of a long-form ``row,col,count`` CSV, which lists only
            some cells; without it the grid is inferred from the largest row and col index.
        notes: when given, a sentence for each thing that was inferred rather than read is appended.

    >>> notes = []
    >>> load_histogram(b"row,col,count\\n0,1,5\\n2,0,1\\n", notes=notes).domain.shape
    (3, 2)
    >>> notes[0][:55]
    'long-form CSV: 2 cells listed, grid 3 × 2 inferred from'

    Raises:
        DataError: with a one-line message naming the row/column and the rule that failed.
    """
    if isinstance(source, str) and source in SAMPLE_DATASETS:
        path = DATA_DIR / SAMPLE_DATASETS[source][0]
        return load_histogram(path.read_bytes(), filename=path.name, name=source)
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            samples = ", ".join(SAMPLE_DATASETS)
            raise _fail(f"no file {str(path)!r} and no sample dataset of that name (samples: {samples})")
        _check_size(path.stat().st_size)
        return load_histogram(path.read_bytes(), filename=path.name, name=name or path.stem,
                              grid_shape=grid_shape, notes=notes)
    if not isinstance(source, bytes | bytearray):
        raise _fail(f"cannot read a histogram from {type(source).__name__}")
    data = bytes(source)
    _check_size(len(data))
    suffix = Path(filename).suffix.lower() if filename else ""
    name = name or (Path(filename).stem if filename else "uploaded")
    if suffix == ".npy" or data.startswith(b"\x93NUMPY"):
        counts, labels = _parse_npy(data), ()
    else:
        text = _decode(data)
        stripped = text.lstrip()
        if suffix == ".json" or stripped.startswith(("{", "[")):
            counts, labels, name = _parse_json(stripped, name)
        else:
            counts, labels = _parse_csv(text, grid_shape, notes if notes is not None else [])
    return _build(counts, labels, name)


def _decode(data: bytes) -> str:
    if b"\x00" in data[:4096]:
        raise _fail("file looks binary (NUL bytes); expected CSV, JSON or .npy")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _fail(f"file is not UTF-8 text (byte {err.start}); expected CSV, JSON or .npy") from None


def _build(counts, labels, name: str) -> Histogram:
    array = np.asarray(counts, dtype=float)
    if array.ndim not in (1, 2) or array.size == 0:
        raise _fail(f"counts must be a non-empty 1-D or 2-D array, got shape {array.shape}")
    if array.size > MAX_CELLS:
        raise _fail(f"histogram has {array.size} cells; the limit is {MAX_CELLS} (2^22)")
    flat = array.ravel()
    bad = np.flatnonzero(~np.isfinite(flat))
    if bad.size:
        raise _fail(f"cell {_cell(array, bad[0])} is {flat[bad[0]]}; counts must be finite numbers")
    negative = np.flatnonzero(flat < 0)
    if negative.size:
        raise _fail(f"cell {_cell(array, negative[0])} is {flat[negative[0]]:g}; counts must be >= 0")
    try:
        return Histogram.from_counts(array, labels=labels, name=str(name)[:80])
    except ValueError as err:
        raise _fail(str(err)) from None


def _cell(array: np.ndarray, flat_index: int) -> str:
    if array.ndim == 1:
        return f"{flat_index} (row {flat_index + 1} of the data)"
    r, c = np.unravel_index(flat_index, array.shape)
    return f"({r}, {c})"


def _parse_npy(data: bytes) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as err:  # noqa: BLE001 - numpy raises many types for corrupt files
        raise _fail(f"not a readable .npy array: {str(err).splitlines()[0][:120]}") from None
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise _fail(f".npy array must be real numbers, got dtype {array.dtype}")
    return array


def _parse_json(text: str, name: str):
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise _fail(f"invalid JSON: {getattr(err, 'msg', 'too deeply nested')} "
                    f"(line {getattr(err, 'lineno', '?')})") from None
    if isinstance(doc, list):
        doc = {"counts": doc}
    if not isinstance(doc, dict) or "counts" not in doc:
        raise _fail('JSON must be an object with a "counts" list, e.g. {"counts": [3, 0, 5]}')
    counts = doc["counts"]
    if not isinstance(counts, list) or not counts:
        raise _fail('"counts" must be a non-empty list (nested lists for 2-D)')
    if all(isinstance(row, list) for row in counts):
        widths = {len(row) for row in counts}
        if len(widths) != 1:
            raise _fail(f'"counts" is ragged: rows have lengths {sorted(widths)[:5]}; every row needs the same')
        cells = [v for row in counts for v in row]
    else:
        cells = counts
    for i, v in enumerate(cells):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _fail(f'"counts" entry {i} is {str(v)[:40]!r}; every entry must be a number')
    labels = doc.get("labels") or ()
    if not isinstance(labels, list):  # e.g. "labels": 0 — ignore rather than crash (fuzz-found)
        labels = ()
    elif not all(isinstance(a, list) for a in labels):
        labels = (labels,)
    return np.array(counts, dtype=float), tuple(tuple(map(str, a)) for a in labels), doc.get("name", name)


_LINE = re.compile(r"[^\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]*")  # up to str.splitlines' first break


def _first_line(text: str) -> str:
    """``text.strip().splitlines()[0]`` without splitting a 50 MB upload into lines ("" for blank text)."""
    stripped = text.lstrip()
    line = _LINE.match(stripped).group()
    rest = stripped.rstrip()
    return line if len(line) < len(rest) else rest


def _delimiter(text: str) -> str:
    first = _first_line(text)
    counts = {d: first.count(d) for d in ",;\t|"}
    best = max(counts, key=counts.get)
    return best if counts[best] else ","


def _read_table(text: str, header) -> pd.DataFrame:
    try:
        return pd.read_csv(io.StringIO(text), sep=_delimiter(text), header=header, dtype=str,
                           skipinitialspace=True, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error, ValueError) as err:
        ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(err))
        if ragged:  # pandas' tokenizer message, reworded to name the rule
            expected, line, saw = ragged.groups()
            raise _fail(f"row {line} has {saw} values but earlier rows have {expected}; "
                        "every row needs the same number of columns (ragged rows)") from None
        raise _fail(f"cannot parse CSV: {str(err).splitlines()[0][:160]}") from None


def _is_number(cell: str) -> bool:
    try:
        float(cell.strip().strip('"'))
    except ValueError:
        return False
    return True


def _numeric(column: pd.Series, what: str, first_row: int = 2) -> np.ndarray:
    """Column → floats; ``first_row`` is the file row of the first value (2 after a header)."""
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)  # tolerates spaces around numbers
    bad = ~np.isfinite(values)
    if bad.any():  # retry only the failures on stripped text (other whitespace, e.g. non-breaking spaces)
        values[bad] = pd.to_numeric(column[bad].str.strip(), errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        where = f"row {row + first_row}, {what if what.startswith('column') else f'column {what!r}'}"
        if not column.iloc[row].strip():
            raise _fail(f"{where}: the value is missing; every row needs a value in every column (no ragged rows)")
        raise _fail(f"{where}: {column.iloc[row][:40]!r} is not a finite number")
    return values


def _parse_csv(text: str, grid_shape: tuple[int, int] | None = None, notes: list[str] | None = None):
    if not text.strip():
        raise _fail("file is empty")
    cells = next(csv.reader([_first_line(text)], delimiter=_delimiter(text)))
    has_letters = not all(_is_number(c) for c in cells if c.strip())
    table = _read_table(text, header=0 if has_letters else None)
    if table.empty:
        raise _fail("CSV has a header but no data rows")
    if has_letters:
        columns = {str(c).strip().lower(): c for c in table.columns}
        if {"row", "col", "count"} <= set(columns):
            rows = _numeric(table[columns["row"]], "row")
            cols = _numeric(table[columns["col"]], "col")
            counts = _numeric(table[columns["count"]], "count")
            return _grid(rows, cols, counts, grid_shape, notes if notes is not None else []), ()
        if "count" not in columns:
            raise _fail(f"CSV needs a 'count' column (or row,col,count for 2-D); found {list(table.columns)[:6]}")
        counts = _numeric(table[columns["count"]], "count")
        others = [c for key, c in columns.items() if key != "count"]
        labels = (tuple(table[others[0]].astype(str)),) if others else ()
        return counts, labels
    matrix = np.column_stack([_numeric(table[c], f"column {i + 1}", first_row=1)
                              for i, c in enumerate(table.columns)])
    return (matrix[:, 0], ()) if matrix.shape[1] == 1 else (matrix, ())


def _grid(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, declared: tuple[int, int] | None,
          notes: list[str]) -> np.ndarray:
    """Long form → grid. Only non-zero cells need listing, so the shape comes from ``declared`` sizes or,
    failing that, the largest index (trailing empty rows/columns are then lost, which the note says)."""
    for what, idx in (("row", rows), ("col", cols)):
        if np.any(idx != np.round(idx)) or np.any(idx < 0):
            raise _fail(f"column {what!r} must hold non-negative integer indices")
    largest = (int(rows.max()) + 1, int(cols.max()) + 1)
    if declared is not None:
        shape = tuple(int(s) for s in declared)
        if len(shape) != 2 or min(shape) < 1:
            raise _fail(f"grid size must be two positive integers (rows, cols), got {declared!r}")
        for what, size, need in zip(("rows", "cols"), shape, largest, strict=True):
            if need > size:
                raise _fail(f"the file has {what[:-1]} index {need - 1} but the declared grid has {size} {what}; "
                            f"declare at least {need} {what}")
    else:
        shape = largest
    if shape[0] * shape[1] > MAX_CELLS:
        raise _fail(f"grid {shape[0]} × {shape[1]} has more than {MAX_CELLS} cells (2^22)")
    listed = len(set(zip(rows.astype(int).tolist(), cols.astype(int).tolist(), strict=True)))
    if declared is not None:
        notes.append(f"long-form CSV: {listed:,} cells listed, grid {shape[0]} × {shape[1]} as declared; "
                     "unlisted cells are 0")
    elif listed < shape[0] * shape[1]:
        notes.append(f"long-form CSV: {listed:,} cells listed, grid {shape[0]} × {shape[1]} inferred from the "
                     "largest row and col index; unlisted cells are 0. If the true grid is larger (empty last "
                     "rows or columns), declare its size")
    grid = np.zeros(shape)
    np.add.at(grid, (rows.astype(int), cols.astype(int)), counts)
    return grid


def histogram_from_records(source: str | Path | bytes, column: str, *, bins: int | None = None,
                           edges=None, name: str | None = None) -> Histogram:
    """Bin raw records (a CSV of rows) on one column: numeric with ``bins`` or ``edges``, else categorical.

    Choose bins or edges from public knowledge of the domain, not from the data, when the result
    will be released: data-derived edges (the min/max default) leak a little.

    >>> csv = b"age,city\\n23,A\\n35,B\\n41,A\\n"
    >>> histogram_from_records(csv, "age", edges=[0, 30, 60]).vector.tolist()
    [1.0, 2.0]
    >>> histogram_from_records(csv, "city").vector.tolist()
    [2.0, 1.0]
    """
    if isinstance(source, str | Path) and not Path(source).is_file():
        raise _fail(f"no records file {str(source)!r}")
    data = Path(source).read_bytes() if isinstance(source, str | Path) else bytes(source)
    _check_size(len(data))
    table = _read_table(_decode(data), header=0)
    if table.empty:
        raise _fail("records file has a header but no data rows")
    if column not in table.columns:
        raise _fail(f"no column {column!r} in the records; columns are {list(table.columns)[:10]}")
    values = table[column].str.strip()
    numeric = pd.to_numeric(values, errors="coerce")
    name = name or f"records:{column}"
    if edges is not None or bins is not None:
        if numeric.isna().any():
            row = int(np.flatnonzero(numeric.isna().to_numpy())[0])
            raise _fail(f"row {row + 2}, column {column!r}: {values.iloc[row][:40]!r} is not a number")
        x = numeric.to_numpy(dtype=float)
        if not np.all(np.isfinite(x)):
            raise _fail(f"column {column!r} contains NaN or inf")
        if edges is not None:
            edges = np.asarray(edges, dtype=float)
            if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
                raise _fail("bin edges must be at least two strictly increasing numbers")
        else:
            if not (isinstance(bins, int) and 1 <= bins <= MAX_CELLS):
                raise _fail(f"bins must be an integer in [1, {MAX_CELLS}], got {bins!r}")
            edges = np.linspace(x.min(), x.max() if x.max() > x.min() else x.min() + 1, bins + 1)
        counts, edges = np.histogram(x, bins=edges)
        labels = (tuple(f"[{a:g}, {b:g})" for a, b in zip(edges[:-1], edges[1:], strict=True)),)
        return Histogram.from_counts(counts, labels=labels, name=name)
    categories, counts = np.unique(values.to_numpy(dtype=str), return_counts=True)
    if categories.size > MAX_CELLS:
        raise _fail(f"column {column!r} has {categories.size} categories; the limit is {MAX_CELLS}")
    return Histogram.from_counts(counts, labels=(tuple(categories),), name=name)
