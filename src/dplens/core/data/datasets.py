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
import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dplens.core.data.bundle import app_root
from dplens.core.data.domain import Histogram
from dplens.core.data.limits import (
    MAX_CELLS,
    MAX_GRID_BYTES,
    MAX_GRID_COLUMNS,
    MAX_GRID_ROWS,
    MAX_UPLOAD_BYTES,
)

# the sample histograms: the repository's data/, or the copy a wheel carries (dplens.core.data.bundle)
DATA_DIR = app_root() / "data"


class DataError(ValueError):
    """A histogram file or array is malformed; the message names the row/column and the rule."""


class NoCountColumnError(DataError):
    """A CSV with a header but no ``count`` column: often raw records (one row per person), which need binning."""


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


def check_upload_size(nbytes: int) -> None:
    if nbytes > MAX_UPLOAD_BYTES:
        raise _fail(f"file is {nbytes / 2**20:.1f} MB; the limit is {MAX_UPLOAD_BYTES / 2**20:.0f} MB")
    if nbytes == 0:
        raise _fail("file is empty")


def load_histogram(source: str | Path | bytes, *, filename: str | None = None,
                   name: str | None = None, grid_shape: tuple[int, int] | None = None,
                   notes: list[str] | None = None, levels: LevelsDeclaration | None = None) -> Histogram:
    """Load a histogram from a sample name, a path, or uploaded bytes (format sniffed or by ``filename``).

    Args:
        grid_shape: the declared (rows, cols) of a long-form ``row,col,count`` CSV, which lists only
            some cells; without it the grid is inferred from the largest row and col index.
        notes: when given, a sentence for each thing that was inferred rather than read is appended.
        levels: the declared levels of a labelled CSV (``label,count``: one list; ``A,B,count``: two), in the
            order they are released; a label in the file that is not declared is refused, a declared one the
            file does not list is 0. Without it the levels are the labels present (``shape_from_data``).

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
        check_upload_size(path.stat().st_size)
        return load_histogram(path.read_bytes(), filename=path.name, name=name or path.stem,
                              grid_shape=grid_shape, notes=notes, levels=levels)
    if not isinstance(source, bytes | bytearray):
        raise _fail(f"cannot read a histogram from {type(source).__name__}")
    data = bytes(source)
    check_upload_size(len(data))
    suffix = Path(filename).suffix.lower() if filename else ""
    name = name or (Path(filename).stem if filename else "uploaded")
    if suffix == ".npy" or data.startswith(b"\x93NUMPY"):
        counts, labels, axis_names = _parse_npy(data), (), ()
    else:
        text = decode_upload_text(data)
        stripped = text.lstrip()
        if suffix == ".json" or stripped.startswith(("{", "[")):
            counts, labels, name, axis_names = _parse_json(stripped, name)
        else:
            (counts, labels), axis_names = _parse_csv(text, data, grid_shape, notes if notes is not None else [],
                                                      levels)
    return _build(counts, labels, name, axis_names)


def decode_upload_text(data: bytes) -> str:
    if b"\x00" in data[:4096]:
        raise _fail("file looks binary (NUL bytes); expected CSV, JSON or .npy")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _fail(f"file is not UTF-8 text (byte {err.start}); expected CSV, JSON or .npy") from None


def _build(counts, labels, name: str, axis_names=()) -> Histogram:
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
        names = tuple(str(n)[:80] for n in axis_names) if len(axis_names) == array.ndim else None
        return Histogram.from_counts(array, labels=labels, name=str(name)[:80], axis_names=names)
    except ValueError as err:
        raise _fail(str(err)) from None


def _cell(array: np.ndarray, flat_index: int) -> str:
    if array.ndim == 1:
        return f"{flat_index} (row {flat_index + 1} of the data)"
    r, c = np.unravel_index(flat_index, array.shape)
    return f"({r}, {c})"


def _parse_npy(data: bytes) -> np.ndarray:
    if data.startswith(b"PK\x03\x04"):
        raise _fail("file is a .npz archive (zip), not a .npy array; save one array with numpy.save")
    buffer = io.BytesIO(data)
    try:  # the header states the shape: refuse an oversized array before reading its data
        version = np.lib.format.read_magic(buffer)
        shape, _, _ = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)(buffer)
        cells = math.prod(shape)
    except Exception as err:  # noqa: BLE001 - numpy raises many types for corrupt headers
        raise _fail("not a readable .npy array: "
                    f"{str(err).splitlines()[0][:120] if str(err) else type(err).__name__}") from None
    if cells > MAX_CELLS:
        raise _fail(f"histogram has {cells} cells; the limit is {MAX_CELLS} (2^22)")
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as err:  # noqa: BLE001 - numpy raises many types for corrupt files
        raise _fail("not a readable .npy array: "
                    f"{str(err).splitlines()[0][:120] if str(err) else type(err).__name__}") from None
    if not isinstance(array, np.ndarray):
        raise _fail(f"not a single .npy array (got {type(array).__name__}); save one array with numpy.save")
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise _fail(f".npy array must be real numbers, got dtype {array.dtype}")
    return array


def _fits_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _parse_json(text: str, name: str):
    if text.count(",") > 2 * MAX_CELLS + 1024:  # counts and labels: refused before json.loads builds the lists
        raise _fail(f"JSON has more than {2 * MAX_CELLS} values; the limit is {MAX_CELLS} cells (2^22)")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, or an integer over Python's digit limit
        what = getattr(err, "msg", None) or (str(err).splitlines()[0][:100] if str(err) else "too deeply nested")
        raise _fail(f"invalid JSON: {what} (line {getattr(err, 'lineno', '?')})") from None
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
        if isinstance(v, int) and not _fits_float(v):
            raise _fail(f'"counts" entry {i} is an integer of {len(str(abs(v)))} digits; counts must be finite numbers')
    labels = doc.get("labels") or ()
    if not isinstance(labels, list):  # e.g. "labels": 0 — ignore rather than crash (fuzz-found)
        labels = ()
    elif not all(isinstance(a, list) for a in labels):
        labels = (labels,)
    names = doc.get("axis_names")
    names = tuple(names) if isinstance(names, list) and all(isinstance(n, str) for n in names) else ()
    return np.array(counts, dtype=float), tuple(tuple(map(str, a)) for a in labels), doc.get("name", name), names


_LINE = re.compile(r"[^\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]*")  # up to str.splitlines' first break
_QUOTED = re.compile(rb'"[^"]*"')  # a quoted field ("" escapes make two adjacent ones); may span lines
_SCAN_CHUNK = 1 << 23  # bytes per numpy pass of the row scan: bounds its memory on a 50 MB upload
WIDE = 256  # header-less tables wider than this are split directly (pandas is slow on very wide frames)


def _first_line(text: str) -> str:
    """``text.strip().splitlines()[0]`` without splitting a 50 MB upload into lines ("" for blank text)."""
    stripped = text.lstrip()
    line = _LINE.match(stripped).group()  # type: ignore[union-attr]  # _LINE matches any text (maybe empty)
    rest = stripped.rstrip()
    return line if len(line) < len(rest) else rest


def _delimiter(text: str) -> str:
    first = _first_line(text)
    counts = {d: first.count(d) for d in ",;\t|"}
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] else ","


def scan_rows(data: bytes, delimiter: str) -> tuple[int, int]:
    """(non-blank rows, fields per row) of CSV bytes, refusing ragged rows; linear time, bounded memory.

    Counts delimiters per line with NumPy in chunks, after blanking out quoted fields, so it runs
    before any parsing and costs well under a second on a 50 MB upload.

    >>> scan_rows(b"label,count\\na,1\\n\\nb,2\\n", ",")
    (3, 2)
    >>> scan_rows(b"label,count\\na,1,5\\nb,2,6\\n", ",")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    dplens.core.data.datasets.DataError: row 2 has 3 values but earlier rows have 2; every row needs the same number
    of columns (ragged rows)
    """
    if b'"' in data:
        data = _QUOTED.sub(b"q", data)
    newline = b"\n" if b"\n" in data else b"\r"
    delim, nl, cr = ord(delimiter), newline[0], ord("\r")
    rows, width, line_offset, start = 0, None, 0, 0
    while start < len(data):
        stop = data.find(newline, min(start + _SCAN_CHUNK, len(data)))
        stop = len(data) if stop < 0 else stop + 1
        chunk = np.frombuffer(data, dtype=np.uint8, count=stop - start, offset=start)
        ends = np.flatnonzero(chunk == nl)
        if ends.size == 0 or ends[-1] != chunk.size - 1:
            ends = np.append(ends, chunk.size)  # the last line has no newline
        starts = np.concatenate(([0], ends[:-1] + 1))
        fields = np.bincount(np.searchsorted(ends, np.flatnonzero(chunk == delim)), minlength=ends.size) + 1
        lengths = ends - starts
        last = np.minimum(np.maximum(ends - 1, 0), chunk.size - 1)
        blank = (lengths == 0) | ((lengths == 1) & (chunk[last] == cr))
        fields, lines = fields[~blank], np.flatnonzero(~blank)
        if fields.size:
            width = int(fields[0]) if width is None else width
            bad = np.flatnonzero(fields != width)
            if bad.size:
                row = line_offset + int(lines[bad[0]]) + 1
                count = int(fields[bad[0]])
                raise _fail(f"row {row} has {count} value{'s' * (count != 1)} but earlier rows have {width}; "
                            "every row needs the same number of columns (ragged rows)")
        rows += fields.size
        line_offset += ends.size
        start = stop
    return rows, width or 0


def _is_number(cell: str) -> bool:
    try:
        float(cell.strip().strip('"'))
    except ValueError:
        return False
    return True


def _numeric(column: pd.Series, what: str, first_row: int = 2, width: int = 1) -> np.ndarray:
    """Column → floats; ``first_row`` is the file row of the first value (2 after a header).

    A header-less matrix comes as one row-major column of ``width`` values per row (one conversion
    for the whole table, linear even for a single row of 10^6 numbers); errors then name its column.
    """
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)  # tolerates spaces around numbers
    bad = ~np.isfinite(values)
    if bad.any():  # retry only the failures on stripped text (other whitespace, e.g. non-breaking spaces)
        values[bad] = pd.to_numeric(column[bad].str.strip(), errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        where = (f"row {row // width + first_row}, column {row % width + 1}" if width > 1 else
                 f"row {row + first_row}, {what if what.startswith('column') else f'column {what!r}'}")
        if not column.iloc[row].strip():
            raise _fail(f"{where}: the value is missing; every row needs a value in every column (no ragged rows)")
        raise _fail(f"{where}: {column.iloc[row][:40]!r} is not a finite number")
    return values


def _read_columns(text: str, delimiter: str, columns: list[int], *, header: bool, width: int = 0,
                  dtype="str") -> pd.DataFrame:
    """Only ``columns`` of a table already checked rectangular, with pandas' C engine, keyed by position.

    ``dtype`` is one type, or a dict position -> type (e.g. float64 for a count column: parsed in C).
    With a header of ``width`` columns, the columns are named 0 … width − 1 (duplicate names are harmless).
    """
    try:
        return pd.read_csv(io.StringIO(text), sep=delimiter, header=0 if header else None, usecols=columns,
                           names=list(range(width)) if header else None, dtype=dtype, skipinitialspace=True,
                           keep_default_na=False, index_col=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error, ValueError, OverflowError) as err:
        raise _fail(f"cannot parse CSV: {str(err).splitlines()[0][:160]}") from None


def _number_columns(text: str, delimiter: str, width: int, columns: list[int], names: list[str]) -> list[np.ndarray]:
    """Numeric columns of a headed table: parsed as floats in C, or (on any non-number) as text to name the row."""
    try:
        table = _read_columns(text, delimiter, columns, header=True, width=width, dtype="float64")
        values = [table[c].to_numpy(dtype=float) for c in columns]
        if all(np.all(np.isfinite(v)) for v in values):
            return values
    except DataError:
        pass
    table = _read_columns(text, delimiter, columns, header=True, width=width)
    return [_numeric(table[c], name) for c, name in zip(columns, names, strict=True)]


def _header(text: str, delimiter: str) -> list[str]:
    try:
        return next(csv.reader([_first_line(text)], delimiter=delimiter, skipinitialspace=True))
    except (csv.Error, StopIteration) as err:
        raise _fail(f"cannot parse the CSV header: {err}") from None


def _fast_numbers(text: str, delimiter: str, cells: int) -> np.ndarray | None:
    """Every cell of a header-less table of plain numbers as floats (one C-speed pass), else None."""
    if '"' in text or "_" in text or not text.isascii():  # Python's float() takes 1_000 and ١٢; pandas does not
        return None
    try:
        values = np.array(text.replace("\r", "\n").replace("\n", delimiter).split(delimiter), dtype=object)
        values = values[[bool(v.strip()) for v in values]] if values.size != cells else values
        numbers = values.astype(float)
    except (ValueError, TypeError, OverflowError):
        return None
    return numbers if numbers.size == cells and np.all(np.isfinite(numbers)) else None


def _wide_cells(text: str, delimiter: str, rows: int, width: int) -> np.ndarray:
    """Every cell of a wide header-less table as strings, in one linear pass (csv module, C)."""
    try:
        cells = [cell for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row for cell in row]
    except csv.Error as err:
        raise _fail(f"cannot parse CSV: {err}") from None
    if len(cells) != rows * width:  # e.g. a quoted newline the row scan could not see
        raise _fail(f"CSV has {len(cells)} values, not {rows} rows × {width} columns; "
                    "every row needs the same number of columns (ragged rows)")
    return np.array(cells, dtype=object).reshape(rows, width)  # strings only: never a numeric parse here


def _parse_csv(text: str, data: bytes, grid_shape: tuple[int, int] | None = None,
               notes: list[str] | None = None, levels: LevelsDeclaration | None = None):
    if not text.strip():
        raise _fail("file is empty")
    delimiter = _delimiter(text)
    lines = data.count(b"\n") or data.count(b"\r")
    if lines > 2 * MAX_CELLS:  # refused before scanning: even one cell per line is over the limit
        raise _fail(f"CSV has {lines:,} lines; the limit is {MAX_CELLS} cells (2^22)")
    rows, width = scan_rows(data, delimiter)
    cells = _header(text, delimiter)
    has_letters = not all(_is_number(c) for c in cells if c.strip())
    data_rows = rows - has_letters
    if data_rows * (1 if has_letters else width) > MAX_CELLS:  # refused before any parsing
        raise _fail(f"CSV has {data_rows:,} data rows × {width:,} columns; the limit is {MAX_CELLS} cells (2^22)")
    if data_rows == 0:
        raise _fail("CSV has a header but no data rows")
    if not has_letters:
        matrix = _fast_numbers(text, delimiter, rows * width)
        if matrix is None:  # something is not a plain number: the slower path names the cell
            if width > WIDE:
                grid = _wide_cells(text, delimiter, rows, width)
            else:
                grid = _read_columns(text, delimiter, list(range(width)), header=False).to_numpy(dtype=object)
            matrix = _numeric(pd.Series(grid.ravel()), "column 1", first_row=1, width=width)
        matrix = matrix.reshape(-1, width)
        return ((matrix[:, 0], ()) if width == 1 else (matrix, ())), ()
    names = [c.strip().lower() for c in cells]
    position = {name: names.index(name) for name in ("row", "col", "count") if name in names}
    if {"row", "col", "count"} <= set(position):
        rows_, cols, counts = _number_columns(text, delimiter, width, [position[k] for k in ("row", "col", "count")],
                                              ["row", "col", "count"])
        return (_grid(rows_, cols, counts, grid_shape, notes if notes is not None else []), ()), ()
    if "count" not in position:
        raise NoCountColumnError(f"CSV needs a 'count' column (or row,col,count for 2-D); found {cells[:6]}")
    intervals = [cells[i].strip() for i, name in enumerate(names) if name in INTERVAL_COLUMNS]
    if intervals and notes is not None:  # a dplens export's interval columns: not counts, not labels
        notes.append(f"columns {', '.join(intervals)} (an export's intervals) ignored")
    others = [i for i, name in enumerate(names) if name not in ("count", *INTERVAL_COLUMNS) and name]
    (counts,) = _number_columns(text, delimiter, width, [position["count"]], ["count"])
    if len(others) == 2 and not all(_is_number_column(text, delimiter, width, i) for i in others):
        axis_names = tuple(cells[i].strip() for i in others)
        return _labelled_grid(text, delimiter, width, others, counts, list(axis_names),
                              notes if notes is not None else [], levels), axis_names
    if len(others) > 2:
        raise _fail(f"CSV has {len(others)} label columns besides 'count' "
                    f"({', '.join(cells[i].strip() for i in others)});"
                    " a histogram has one (1-D) or two (2-D, as A,B,count): aggregate over the others first")
    if not others:
        return (counts, ()), ()
    if len(others) == 2 and notes is not None:  # two numeric columns: the first labels the bins, say so
        notes.append(f"column {cells[others[1]].strip()!r} ignored: 1-D histogram labelled by "
                     f"{cells[others[0]].strip()!r} (for 2-D, name the columns row,col,count or use text labels)")
    labels = _read_columns(text, delimiter, [others[0]], header=True, width=width)[others[0]]
    if levels is not None:  # the declared levels, in their order: the shape does not depend on the rows present
        (declared,) = _declared(levels, 1, [cells[others[0]].strip()])
        index = _level_index(pd.Series(labels).astype(str).str.strip(), declared, cells[others[0]].strip())
        full = np.zeros(len(declared))
        full[index] = counts
        return (full, (declared,)), (cells[others[0]].strip(),)
    return (counts, (tuple(labels),)), (cells[others[0]].strip(),)


INTERVAL_COLUMNS = ("lower", "upper", "level")


def _is_number_column(text: str, delimiter: str, width: int, column: int) -> bool:
    values = _read_columns(text, delimiter, [column], header=True, width=width)[column]
    return bool(len(values)) and all(_is_number(str(v)) for v in values)


def _labelled_grid(text: str, delimiter: str, width: int, columns: list[int], counts: np.ndarray,
                   axis_names: list[str], notes: list[str],
                   levels: LevelsDeclaration | None = None) -> tuple[np.ndarray, tuple]:
    """A 2-D histogram from long format ``A,B,count`` with text labels: the declared ``levels``, else the levels in
    order of first appearance; cells not listed are 0 (a note says how many), a repeated (A, B) pair is refused."""
    frame = _read_columns(text, delimiter, columns, header=True, width=width)
    first, second = (frame[c].astype(str).str.strip() for c in columns)
    if levels is not None:
        row_levels, col_levels = _declared(levels, 2, axis_names)
        rows = _level_index(first, row_levels, axis_names[0])
        cols = _level_index(second, col_levels, axis_names[1])
    else:
        rows, row_levels = pd.factorize(first)
        cols, col_levels = pd.factorize(second)
    if len(row_levels) * len(col_levels) > MAX_CELLS:
        raise _fail(f"{len(row_levels):,} × {len(col_levels):,} labels imply more than {MAX_CELLS} cells (2^22)")
    flat = rows * len(col_levels) + cols
    repeated = pd.Series(flat).duplicated()
    if repeated.any():
        at = int(np.argmax(repeated.to_numpy()))
        raise _fail(f"row {at + 2}: ({first.iloc[at]!r}, {second.iloc[at]!r}) is listed twice; list each cell once")
    grid = np.zeros((len(row_levels), len(col_levels)))
    grid.flat[flat] = counts
    missing = grid.size - len(flat)
    order = "the declared levels" if levels is not None else "levels in the file's order"
    notes.append(f"2-D histogram from {axis_names[0]},{axis_names[1]},count: {len(row_levels)} × {len(col_levels)} "
                 f"cells, {order}" + (f"; {missing:,} cells not listed are 0" if missing else ""))
    return grid, (tuple(str(v) for v in row_levels), tuple(str(v) for v in col_levels))


LevelsDeclaration = Sequence[Sequence[str]]  # one list of levels per label column, in the file's column order


def _declared(levels: LevelsDeclaration, axes: int, axis_names: list[str]) -> list[tuple[str, ...]]:
    """The declared levels as tuples of stripped text, checked: one non-empty list of distinct levels per axis."""
    if isinstance(levels, str | bytes) or len(levels) != axes:
        raise _fail(f"levels must declare {axes} list(s) of levels, one per label column ({', '.join(axis_names)}), "
                    f"got {len(levels) if not isinstance(levels, str | bytes) else 'a text'}")
    out = []
    for name, axis in zip(axis_names, levels, strict=True):
        if isinstance(axis, str | bytes) or not len(axis):
            raise _fail(f"levels of {name!r} must be a non-empty list of labels")
        values = tuple(str(v).strip() for v in axis)
        if len(set(values)) != len(values):
            repeated = next(v for v in values if values.count(v) > 1)
            raise _fail(f"levels of {name!r} list {repeated[:40]!r} twice; declare each level once")
        out.append(values)
    if math.prod(len(a) for a in out) > MAX_CELLS:
        raise _fail(f"the declared levels imply more than {MAX_CELLS} cells (2^22)")
    return out


def _level_index(labels: pd.Series, declared: tuple[str, ...], name: str) -> np.ndarray:
    """Each label's position among the declared levels; a label that is not declared is refused (its row named)."""
    position = {level: i for i, level in enumerate(declared)}
    index = labels.map(position)
    if index.isna().any():
        at = int(np.argmax(index.isna().to_numpy()))
        raise _fail(f"row {at + 2}: {name} {labels.iloc[at][:40]!r} is not among the declared levels of {name!r} "
                    f"({len(declared)} levels); add it to the declaration or correct the file")
    return index.to_numpy(dtype=np.int64)


def shape_from_data(data: bytes, filename: str | None = None, *, grid_shape: tuple[int, int] | None = None,
                    levels: LevelsDeclaration | None = None) -> str | None:
    """Why the released shape of the histogram in ``data`` would come from its rows, or None when it is declared.

    An indexed ``row,col,count`` file without ``grid_shape`` is sized by its largest index: one record at
    (5, 5) turns a 4 × 4 grid into 6 × 6. A labelled ``A,B,count`` file without ``levels`` has the labels present
    as its levels: one person in a new category adds a row. Such data can be explored, compared and used to choose
    ε, but not released (the release would show the shape). A labelled 1-D ``label,count`` file (``bin,count``
    too: its bins are the rows listed) is the same: one person in a new category adds a bin. Other files (a count
    per line, a matrix, JSON, .npy) state every cell, zeros included, and are their own declaration; so are the
    built-in samples, by name.

    >>> shape_from_data(b"row,col,count\\n0,0,3\\n3,3,1\\n")[:40]
    'its grid was sized from the largest row '
    >>> shape_from_data(b"row,col,count\\n0,0,3\\n", grid_shape=(4, 4)) is None
    True
    >>> shape_from_data(b"label,count\\na,3\\n")[:36], shape_from_data(b"label,count\\na,3\\n", levels=[["a", "b"]])
    ('its bins are the labels present in t', None)
    """
    suffix = Path(filename).suffix.lower() if filename else ""
    if suffix in (".npy", ".json") or bytes(data[:6]) == b"\x93NUMPY":
        return None
    try:
        text = decode_upload_text(bytes(data[:65536]))
    except DataError:
        return None
    if text.lstrip().startswith(("{", "[")) or not text.strip():
        return None
    names = [c.strip().lower() for c in _header(text, _delimiter(text))]
    if {"row", "col", "count"} <= set(names):
        if grid_shape is None:
            return ("its grid was sized from the largest row and col index in the file, so one record at a new "
                    "index would change the released shape (a 4 × 4 grid becomes 6 × 6); declare the grid (--shape "
                    "ROWS,COLS on the command line, or Grid rows and Grid columns on the Data page) to release")
        return None
    labels = [n for n in names if n and n not in ("count", *INTERVAL_COLUMNS)]
    if "count" in names and len(labels) == 2 and levels is None:
        return ("its levels are the labels present in the file, so one person in a new category would add a row or "
                "column; declare the levels (--levels FILE on the command line, or Levels on the Data page) "
                "to release")
    if "count" in names and len(labels) == 1 and levels is None:  # label,count (or bin,count): a row per bin listed
        return ("its bins are the labels present in the file, so one person in a new category would add a bin; "
                "declare the levels (--levels FILE on the command line, or Levels on the Data page) to release")
    return None


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
    flat = rows.astype(np.int64) * shape[1] + cols.astype(np.int64)  # bincount: linear, unlike np.add.at
    listed = int(np.unique(flat).size)
    if declared is not None:
        notes.append(f"long-form CSV: {listed:,} cells listed, grid {shape[0]} × {shape[1]} as declared; "
                     "unlisted cells are 0")
    elif listed < shape[0] * shape[1]:
        notes.append(f"long-form CSV: {listed:,} cells listed, grid {shape[0]} × {shape[1]} inferred from the "
                     "largest row and col index; unlisted cells are 0. If the true grid is larger (empty last "
                     "rows or columns), declare its size")
    return np.bincount(flat, weights=counts, minlength=shape[0] * shape[1]).reshape(shape)


def record_columns(data: bytes) -> list[str]:
    """The column names in a records CSV's header (what a page offers to bin).

    >>> record_columns(b"age,city\\n23,A\\n")
    ['age', 'city']
    """
    check_upload_size(len(data))
    text = decode_upload_text(data)
    if not text.strip():
        raise _fail("records file is empty")
    return [name.strip() for name in _header(text, _delimiter(text))]


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
    check_upload_size(len(data))
    text = decode_upload_text(data)
    if not text.strip():
        raise _fail("records file is empty")
    delimiter = _delimiter(text)
    rows, _ = scan_rows(data, delimiter)
    header = _header(text, delimiter)
    if rows < 2:
        raise _fail("records file has a header but no data rows")
    if column not in header:
        raise _fail(f"no column {column!r} in the records; columns are {header[:10]}")
    # one column as a categorical: the C parser stores each distinct value once (linear, compact)
    table = _read_columns(text, delimiter, [header.index(column)], header=True, width=len(header), dtype="category")
    codes = table.iloc[:, 0].cat.codes.to_numpy()
    categories = table.iloc[:, 0].cat.categories.astype(str)
    name = name or f"records:{column}"
    if edges is not None or bins is not None:
        numeric = pd.to_numeric(pd.Series(categories).str.strip(), errors="coerce").to_numpy(dtype=float)
        x = numeric[codes]
        bad = np.flatnonzero(~np.isfinite(x))
        if bad.size:
            row, value = int(bad[0]), categories[codes[bad[0]]] if codes[bad[0]] >= 0 else ""
            raise _fail(f"row {row + 2}, column {column!r}: {value[:40]!r} is not a number")
        edges = bin_edges(edges) if edges is not None else None
        if edges is None:
            if isinstance(bins, bool) or not (isinstance(bins, int | np.integer) and 1 <= bins <= MAX_CELLS):
                raise _fail(f"bins must be an integer in [1, {MAX_CELLS}], got {bins!r}")
            edges = np.linspace(x.min(), x.max() if x.max() > x.min() else x.min() + 1, bins + 1)
        counts, edges = np.histogram(x, bins=edges)
        labels = (tuple(f"[{a:g}, {b:g})" for a, b in zip(edges[:-1], edges[1:], strict=True)),)
        return Histogram.from_counts(counts, labels=labels, name=name, axis_names=(column,))
    counts = np.bincount(codes[codes >= 0], minlength=len(categories))
    if (codes < 0).any():  # missing values (pandas' NaN code) are their own category, the empty label
        categories, counts = ["", *categories], np.concatenate(([int((codes < 0).sum())], counts))
    keep = counts > 0
    categories, counts = np.asarray(categories, dtype=object)[keep], counts[keep]
    order = np.argsort(np.asarray(categories, dtype=str), kind="stable")
    categories, counts = categories[order], counts[order]
    if categories.size > MAX_CELLS:
        raise _fail(f"column {column!r} has {categories.size} categories; the limit is {MAX_CELLS}")
    return Histogram.from_counts(counts, labels=(tuple(str(c) for c in categories),), name=name, axis_names=(column,))


def bin_edges(edges) -> np.ndarray:
    """Bin edges from numbers or text like ``"0, 18, 30"``: at least two, strictly increasing, finite.

    >>> bin_edges("0, 18,30").tolist()
    [0.0, 18.0, 30.0]
    >>> bin_edges("0,abc,5")
    Traceback (most recent call last):
    dplens.core.data.datasets.DataError: bin edge 2 is 'abc'; edges must be comma-separated numbers, e.g. 0,18,30,45
    """
    if isinstance(edges, str):
        items = [v.strip() for v in edges.split(",") if v.strip()]
    else:
        items = list(np.ravel(np.asarray(edges, dtype=object))) if edges is not None else []
    if len(items) > MAX_CELLS + 1:
        raise _fail(f"{len(items)} bin edges; the limit is {MAX_CELLS + 1} (2^22 bins)")
    values = []
    for i, item in enumerate(items):
        try:
            values.append(float(item))
        except (TypeError, ValueError, OverflowError):
            raise _fail(f"bin edge {i + 1} is {str(item)[:20]!r}; edges must be comma-separated numbers, "
                        "e.g. 0,18,30,45") from None
    array = np.array(values, dtype=float)
    if array.size < 2 or not np.all(np.isfinite(array)) or np.any(np.diff(array) <= 0):
        raise _fail("bin edges must be at least two strictly increasing numbers")
    return array


def load_parquet(data: bytes, columns: list[str], *, what: str = "grid file") -> pd.DataFrame:
    """The ``columns`` of an uploaded parquet file, refusing an oversized one from its footer before reading it.

    Rows, columns and the decoded size of the data come from the file's metadata (``MAX_GRID_ROWS``,
    ``MAX_GRID_COLUMNS``, ``MAX_GRID_BYTES``): a compressed file of 2 MB can hold gigabytes. Text columns are
    read dictionary-encoded and their decoded size checked before they are expanded.

    >>> load_parquet(b"PAR1 not really", ["dataset"])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    dplens.core.data.datasets.DataError: not a readable parquet grid file: Parquet magic bytes not found in footer.
    Either the file is corrupted or this is not a parquet file.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    check_upload_size(len(data))
    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        meta, schema = file.metadata, file.schema_arrow
    except (pa.ArrowException, OSError, ValueError, TypeError) as err:
        raise _fail(f"not a readable parquet {what}: {_first(err)}") from None
    if meta.num_columns > MAX_GRID_COLUMNS:
        raise _fail(f"{what} has {meta.num_columns:,} columns; at most {MAX_GRID_COLUMNS:,} (MAX_GRID_COLUMNS) "
                    "are allowed")
    if meta.num_rows > MAX_GRID_ROWS:
        raise _fail(f"{what} has {meta.num_rows:,} rows; at most {MAX_GRID_ROWS:,} (MAX_GRID_ROWS) are allowed: "
                    "split the grid (python -m dplens grid --datasets ...) or keep fewer trials")
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise _fail(f"not a dplens {what}: columns {missing} are missing")
    stored = sum(group.column(i).total_uncompressed_size for group in (meta.row_group(g) for g in
                 range(meta.num_row_groups)) for i in range(group.num_columns)
                 if group.column(i).path_in_schema.split(".")[0] in columns)
    if stored > MAX_GRID_BYTES:
        raise _fail(f"{what} holds {stored:,} bytes of data once decompressed; at most {MAX_GRID_BYTES:,} "
                    "(MAX_GRID_BYTES) are allowed")
    try:
        text = [c for c in columns if _is_text(schema.field(c).type)]
        table = pq.ParquetFile(pa.BufferReader(data), read_dictionary=text).read(columns=columns)
        encoded = [c for c in columns if pa.types.is_dictionary(table.schema.field(c).type)]  # text, or stored so
        decoded = sum(int(pc.sum(pc.take(pc.binary_length(chunk.dictionary), chunk.indices)).as_py() or 0)
                      if _is_text(chunk.dictionary.type) else 8 * len(chunk)
                      for c in encoded for chunk in table.column(c).chunks)
        if decoded > MAX_GRID_BYTES:  # a long text repeated on every row: small on disk, huge decoded
            raise _fail(f"{what}'s dictionary-encoded columns hold {decoded:,} bytes once decoded; at most "
                        f"{MAX_GRID_BYTES:,} (MAX_GRID_BYTES) are allowed")
        for c in encoded:
            column = table.column(c)
            table = table.set_column(table.schema.get_field_index(c), c, pa.chunked_array(
                [chunk.dictionary_decode() for chunk in column.chunks], type=column.type.value_type))
        return table.to_pandas()[columns]
    except (pa.ArrowException, OSError, TypeError, KeyError) as err:  # e.g. a column name given twice
        raise _fail(f"not a readable parquet {what}: {_first(err)}") from None


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)


def _first(err: BaseException) -> str:
    return str(err).splitlines()[0][:160] if str(err).strip() else type(err).__name__
