"""Tables of records: bounded CSV loading, honest measures of synthetic data, and marginal CSV exports.

A table is an (N, d) array of integer codes with a :class:`~dplens.core.data.domain.Domain`. Input is a CSV
of records (integer codes, or categorical values mapped to codes by declared or observed levels) and
optionally a domain JSON in private-pgm's form (``{"age": 85, ...}``; a list of levels instead of a size
declares categorical levels in code order; ``{"low": L, "high": H, "width": W}`` or ``{"edges": [...]}`` bins a
numeric column). Missing values are refused unless the curator chooses to drop their rows or to make them a
level (``load_table(..., missing=...)``); dplens never does either silently.

MST and AIM (synthetic records) live in :mod:`dplens.core.tables.synthesis`; the mechanisms' common contract in
:mod:`dplens.core.tables.mechanisms`.

>>> table = load_table(b"sex,income\\nF,0\\nM,1\\nM,0\\n", b'{"sex": ["F", "M"], "income": 2}')
>>> table.domain.to_json(), table.records.tolist()
('{"sex": 2, "income": 2}', [[0, 0], [1, 1], [1, 0]])
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dplens.core.data.datasets import DataError, check_upload_size, decode_upload_text
from dplens.core.data.domain import Domain, check_levels
from dplens.core.data.fingerprint import records_fingerprint
from dplens.core.data.limits import MAX_CELLS, MAX_LEVELS, MAX_TABLE_ENTRIES, MAX_TABLE_RECORDS
from dplens.core.queries.marginals import marginal_counts


@dataclass(frozen=True)
class Table:
    """Integer-coded records, their domain, the levels behind each code, and notes on how they were read."""

    domain: Domain
    records: np.ndarray
    levels: dict[str, list[str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    fingerprint: str = ""
    domain_declared: bool = False  # every attribute's levels came from a domain file, none from the records

    def __post_init__(self) -> None:
        check_levels(self.domain.names, self.domain.sizes)  # a table's attribute has at most MAX_LEVELS levels


def _read_bytes(source: str | Path | bytes) -> bytes:
    if isinstance(source, bytes):
        check_upload_size(len(source))
        return source
    path = Path(source)
    if not path.is_file():
        raise DataError(f"input {str(source)!r} is not a file")
    check_upload_size(path.stat().st_size)  # bounded before reading (dplens.core.data.limits.MAX_UPLOAD_BYTES)
    return path.read_bytes()


def _declared(domain_bytes: bytes | None) -> dict[str, int | list[str]]:
    if domain_bytes is None:
        return {}
    try:
        mapping = json.loads(decode_upload_text(domain_bytes))
    except json.JSONDecodeError as error:
        raise DataError(f"the domain file is not JSON ({error.msg} at line {error.lineno})") from None
    except (ValueError, RecursionError) as error:  # an integer over Python's digit limit, or 10^5 nested [
        what = str(error).splitlines()[0][:80] if str(error) else "too deeply nested"
        raise DataError(f"the domain file is not readable JSON ({what})") from None
    if not isinstance(mapping, dict) or not mapping:
        raise DataError('the domain file must be a JSON object like {"age": 85, "sex": ["F", "M"]}')
    for name, value in mapping.items():
        if isinstance(value, dict):
            mapping[name] = bin_edges(name, value)
            continue
        if isinstance(value, list):
            mapping[name] = value = _declared_levels(name, value)
        ok = (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_LEVELS) or (
            isinstance(value, list) and 1 <= len(value) <= MAX_LEVELS and len(set(value)) == len(value))
        if not ok:
            raise DataError(f"domain of column {name!r} is {str(value)[:40]}; the rule is a size from 1 to "
                            f"{MAX_LEVELS}, a list of distinct levels, or bins ({BIN_FORMS})")
    return mapping


def _declared_levels(name: str, value: list) -> list[str]:
    """A domain file's list of levels as the text a cell must hold: strings and numbers, stripped like the cells.

    ``null`` (and NaN) is refused rather than read as the text "None": whether missing values are refused, dropped
    or a level is the ``missing`` choice, never a declared level.

    >>> _declared_levels("a", [" NA", "", 3])
    ['NA', '', '3']
    """
    levels = []
    for level in value[:MAX_LEVELS + 1]:  # the length rule is checked by the caller
        if isinstance(level, float) and not math.isfinite(level) or not isinstance(level, str | int | float):
            shown = "null" if level is None else _shown(level)
            raise DataError(f"domain of column {name!r} declares the level {shown}; a level is a string "
                            "or a number (missing values are not declared: choose to refuse, drop or make them "
                            "a level)")
        levels.append(str(level).strip())
    return levels


BIN_FORMS = '{"low": L, "high": H, "width": W} or {"low": L, "high": H, "bins": K} or {"edges": [...]} or ' \
            '{"quantiles": K, "public_sample": [...]}'


def bin_edges(name: str, spec: dict) -> np.ndarray:
    """Bin edges for a numeric column, chosen **without looking at the private data**.

    Equal width over a declared [low, high], explicit edges, or quantiles of a *public* sample the curator
    supplies. Quantiles of the private column itself would make the bins (and so the release) depend on the
    data outside the privacy budget, so they are not offered.

    >>> bin_edges("age", {"low": 0, "high": 30, "width": 10}).tolist()
    [0.0, 10.0, 20.0, 30.0]
    >>> bin_edges("x", {"quantiles": 2, "public_sample": [1, 2, 3, 4, 5]}).tolist()
    [1.0, 3.0, 5.0]
    """
    def numbers(value, what: str, *, scalar: bool = False, most: int = MAX_LEVELS + 1) -> np.ndarray:
        if not scalar and not (isinstance(value, list) and len(value) <= most):
            raise DataError(f"bins of column {name!r}: {what} must be a list of at most {most:,} numbers, "
                            f"got {_shown(value)}")
        try:
            out = np.asarray(value, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise DataError(f"bins of column {name!r}: {what} must be numbers, got {_shown(value)}") from None
        if scalar and out.ndim != 0:
            raise DataError(f"bins of column {name!r}: {what} must be one number, got {_shown(value)}")
        if not np.all(np.isfinite(out)):
            raise DataError(f"bins of column {name!r}: {what} must be finite, got {_shown(value)}")
        return out

    def count_of(value, what: str) -> int:  # checked before any array of that many bins is built
        if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= MAX_LEVELS:
            raise DataError(f"bins of column {name!r}: {what} must be an integer from 2 to {MAX_LEVELS:,} "
                            f"(MAX_LEVELS), got {_shown(value)}")
        return value

    keys = set(spec)
    if keys == {"edges"}:
        edges = numbers(spec["edges"], "edges")
    elif keys in ({"low", "high", "width"}, {"low", "high", "bins"}):
        low, high = (float(numbers(spec[k], k, scalar=True)) for k in ("low", "high"))
        if not high > low or not math.isfinite(high - low):
            raise DataError(f"bins of column {name!r}: high {high:g} must exceed low {low:g} (by a finite amount)")
        if "width" in spec:
            width = float(numbers(spec["width"], "width", scalar=True))
            if not width > 0:
                raise DataError(f"bins of column {name!r}: width must be > 0, got {width:g}")
            implied = (high - low) / width
            if not implied <= MAX_LEVELS:  # refused before arange builds that many edges
                raise DataError(f"bins of column {name!r}: width {width:g} over [{low:g}, {high:g}] implies "
                                f"{implied:,.0f} bins; at most {MAX_LEVELS:,} (MAX_LEVELS) are allowed: widen the bins")
            count = math.ceil(implied - 1e-9)
            edges = np.minimum(low + width * np.arange(count + 1), high)
        else:
            edges = np.linspace(low, high, count_of(spec["bins"], "bins") + 1)
    elif keys == {"quantiles", "public_sample"}:
        count = count_of(spec["quantiles"], "quantiles")
        sample = numbers(spec["public_sample"], "public_sample", most=MAX_TABLE_RECORDS)
        if sample.size < count:
            raise DataError(f"bins of column {name!r}: quantiles must be an integer from 2 to the public sample's "
                            f"size ({sample.size}), got {count!r}")
        edges = np.unique(np.quantile(sample, np.linspace(0, 1, count + 1)))
    else:
        raise DataError(f"bins of column {name!r} are {str(spec)[:60]}; the rule is one of {BIN_FORMS}")
    if edges.size < 3 or np.any(np.diff(edges) <= 0) or edges.size - 1 > MAX_LEVELS:
        raise DataError(f"bins of column {name!r}: edges must increase strictly and make 2 to {MAX_LEVELS} bins, "
                        f"got {edges.size - 1} from {str(spec)[:60]}")
    return edges


def _shown(value) -> str:
    """A JSON value for an error message: its start only (a value may be a 50 MB list)."""
    if isinstance(value, list | dict):
        return f"a {type(value).__name__} of {len(value):,}"
    return repr(value)[:40]


def _bin_labels(edges: np.ndarray) -> list[str]:
    last = len(edges) - 2
    return [f"[{a:g}, {b:g}{']' if i == last else ')'}"
            for i, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True))]


MISSING_CHOICES = ("refuse", "drop", "level")
MISSING_LEVEL = "missing"
NA_TOKENS = ("na", "nan", "null", "none")


def missing_mask(cells: pd.Series, declared=None) -> np.ndarray:
    """Empty cells are missing values; so are NA/NaN/null/None (any case), unless the column's declared levels
    hold that very value: a declared level (even ``""``) is a category, never a missing value.

    >>> cells = pd.Series(["NA", "", "None", "x"])
    >>> missing_mask(cells).tolist(), missing_mask(cells, ["NA", "None", "x"]).tolist()
    ([True, True, True, False], [False, True, False, False])
    >>> missing_mask(cells, ["", "x"]).tolist()
    [True, False, True, False]
    """
    text = cells.str.strip()
    absent = text.eq("") | text.str.lower().isin(NA_TOKENS)
    if isinstance(declared, list):
        absent &= ~text.isin([str(v) for v in declared])
    return absent.to_numpy()


def missing_label(levels: list[str]) -> str:
    """The label of the level that ``missing="level"`` adds: ``"missing"``, or when a real category already has
    that name, the first of ``"missing (2)"``, ``"missing (3)"``, ... that is not a level (labels stay unique).

    >>> missing_label(["a", "b"]), missing_label(["missing", "missing (2)"])
    ('missing', 'missing (3)')
    """
    taken, label, suffix = set(levels), MISSING_LEVEL, 1
    while label in taken:
        suffix += 1
        label = f"{MISSING_LEVEL} ({suffix})"
    return label


def _column_codes(name: str, cells: pd.Series, declared, missing: str = "refuse"
                  ) -> tuple[np.ndarray, int, list[str], str | None]:
    """Codes, domain size, levels and an optional note for one column (rules in the module docstring)."""
    text = cells.str.strip()
    absent = missing_mask(cells, declared)
    if missing == "level":  # code the present values, then one more level for the missing: whenever chosen, so
        # the released domain's shape never tells whether some record had a missing value
        codes, size, levels, note = _column_codes(name, text[~absent].reset_index(drop=True), declared)
        out = np.full(len(text), size, dtype=np.int64)
        out[~absent] = codes
        label = missing_label(levels)
        note = "; ".join(filter(None, [note, f"{name}: missing values are the level {label!r}"]))
        return out, size + 1, [*levels, label], note
    if absent.any():
        numeric_nan = text[absent].str.lower().eq("nan").all()
        rule = "numeric columns must hold finite integer codes" if numeric_nan else (
            "missing values are refused: choose to drop those rows or to make missing a level")
        raise DataError(f"column {name!r} has a missing value in row {int(np.argmax(absent)) + 2}; {rule}")
    if isinstance(declared, np.ndarray):  # numeric bins (bin_edges)
        values = pd.to_numeric(text, errors="coerce").to_numpy(float)
        if not np.isfinite(values).all():
            bad = text[~np.isfinite(values)].iloc[0]
            raise DataError(f"column {name!r} holds {bad[:40]!r}; a binned column must hold finite numbers")
        codes = np.clip(np.searchsorted(declared, values, side="right") - 1, 0, declared.size - 2)
        return (codes.astype(np.int64), declared.size - 1, _bin_labels(declared),
                f"{name}: {declared.size - 1} declared bins; values outside [{declared[0]:g}, {declared[-1]:g}] "
                "are counted in the end bins")
    if isinstance(declared, list):
        levels = [str(v) for v in declared]
        index = {level: code for code, level in enumerate(levels)}
        codes = text.map(index)
        if codes.isna().any():
            bad = text[codes.isna()].iloc[0]
            raise DataError(f"column {name!r} holds {bad[:40]!r}, not one of its {len(levels)} declared levels")
        return codes.to_numpy(np.int64), len(levels), levels, None
    numbers = pd.to_numeric(text, errors="coerce")
    if numbers.notna().all():
        values = numbers.to_numpy(float)
        if not np.isfinite(values).all():
            raise DataError(f"column {name!r} holds {text[~np.isfinite(values)].iloc[0]!r}; numeric columns must "
                            f"hold finite integer codes")
        if (values != np.round(values)).any() or (values < 0).any():
            bad = text[(values != np.round(values)) | (values < 0)].iloc[0]
            raise DataError(f"column {name!r} holds {bad!r}; numeric columns must hold integer codes >= 0 "
                            f"(bin numeric values to codes first)")
        codes = values.astype(np.int64)
        top = int(codes.max()) if codes.size else 0
        if declared is None:
            size = top + 1
            if size > MAX_LEVELS:
                raise DataError(f"column {name!r} has codes up to {top}; the rule is at most {MAX_LEVELS} levels")
            return codes, size, [str(c) for c in range(size)], f"{name}: size {size} inferred from the data"
        if top >= declared:
            raise DataError(f"column {name!r} holds code {top}, outside its declared domain 0..{declared - 1}")
        return codes, declared, [str(c) for c in range(declared)], None
    levels = sorted(text.unique())
    if declared is not None:
        raise DataError(f"column {name!r} holds non-numeric values (e.g. {text[numbers.isna()].iloc[0][:40]!r}); "
                        f"declare its levels as a list in the domain file, not a size")
    if len(levels) > MAX_LEVELS:
        raise DataError(f"column {name!r} has {len(levels):,} levels; the rule is at most {MAX_LEVELS}")
    codes = text.map({level: code for code, level in enumerate(levels)}).to_numpy(np.int64)
    return codes, len(levels), levels, f"{name}: {len(levels)} levels read from the data (sorted)"


COUNT_COLUMN = "count"


def load_table(source: str | Path | bytes, domain: str | Path | bytes | None = None, *,
               missing: str = "refuse") -> Table:
    """Read a CSV of records (header row, one record per row) and an optional domain JSON into a :class:`Table`.

    A final column named ``count`` makes the file a pre-aggregated long table (``attr1,...,attrk,count``):
    each row stands for ``count`` identical records. ``missing`` chooses what missing values do:
    ``"refuse"`` (one line naming the column), ``"drop"`` (rows with one are dropped, and a note says how
    many: shown to the curator only, it is computed from the private data), or ``"level"`` (a ``"missing"``
    level added to that column: :func:`missing_label` keeps its label distinct from a real category named
    "missing"). Only empty cells, and NA/NaN/null/None where the domain file does not declare that value as a
    level, are missing (:func:`missing_mask`). Without a domain file the sizes come from the data, which itself
    discloses them (a note says so): declare the domain for a release whose domain must not depend on the data.

    >>> load_table(b"a\\n1\\n", b'{"a": 2}').records.tolist()
    [[1]]
    >>> load_table(b"sex,count\\nF,2\\nM,1\\n", b'{"sex": ["F", "M"]}').records.tolist()
    [[0], [0], [1]]
    >>> load_table(b"a,b\\n1,x\\n,y\\n", missing="level").levels["a"]
    ['0', '1', 'missing']
    >>> load_table(b"a,b\\n1,x\\n0,y\\n", missing="level").levels["b"]  # the level exists whenever chosen
    ['x', 'y', 'missing']
    """
    if missing not in MISSING_CHOICES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_CHOICES)}, got {missing!r}")
    data = _read_bytes(source)
    declared = _declared(_read_bytes(domain) if isinstance(domain, str | Path) else domain)
    try:
        frame = pd.read_csv(io.StringIO(decode_upload_text(data)), dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise DataError(f"the records file is not a CSV with a header row ({str(error).splitlines()[0][:80]})"
                        ) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    names = list(frame.columns)
    if not names or len(set(names)) != len(names):
        raise DataError(f"the records file needs a header of distinct column names, got {names[:10]}")
    counts = None
    if names[-1].lower() == COUNT_COLUMN and names[-1] not in declared and len(names) > 1:
        counts, names = _counts(frame[names[-1]]), names[:-1]
    unknown = [n for n in declared if n not in names]
    if unknown:
        raise DataError(f"the domain file names {unknown[:5]}, not columns of the records file ({', '.join(names)})")
    if declared:  # the declared domain chooses (and orders) the attributes
        names = [n for n in names if n in declared]
    notes = []
    if missing == "drop":
        absent = np.zeros(len(frame), dtype=bool)
        for name in names:
            absent |= missing_mask(frame[name].astype(str), declared.get(name))
        if absent.any():
            frame = frame.loc[~absent].reset_index(drop=True)
            counts = None if counts is None else counts[~absent]
            notes.append(f"{int(absent.sum()):,} row(s) with a missing value dropped (a count from the private "
                         "data: for your eyes, not for publication)")
    columns, sizes, levels = [], [], {}
    for name in names:
        codes, size, column_levels, note = _column_codes(name, frame[name].astype(str), declared.get(name), missing)
        if size < 2:
            raise DataError(f"column {name!r} has one level; it carries no information: drop it from the file "
                            "or from the domain (the rule is at least 2 levels)")
        columns.append(codes)
        sizes.append(size)
        levels[name] = column_levels
        if note:
            notes.append(note)
    if not declared:
        notes.insert(0, "domain inferred from the data (its sizes depend on the private records; declare a domain"
                        " file for a release)")
    if counts is not None:
        _check_expansion(names, sizes, int(counts.sum()))
    records = np.column_stack(columns) if columns and len(frame) else np.zeros((0, len(names)), np.int64)
    if counts is not None:
        records = np.repeat(records, counts, axis=0)
        notes.append(f"pre-aggregated table: the {COUNT_COLUMN!r} column gives each row's number of records")
    declared_all = bool(declared) and all(declared.get(name) is not None for name in names)
    return Table(Domain(tuple(names), tuple(sizes)), records, levels, tuple(notes), records_fingerprint(data),
                 declared_all)


def _check_expansion(names: list[str], sizes: list[int], records: int) -> None:
    """Refuse a pre-aggregated table whose implied domain or expanded records are too large, before expanding.

    >>> _check_expansion([f"c{i}" for i in range(30)], [2] * 30, 2)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    dplens.core.data.datasets.DataError: pre-aggregated table implies 1,073,741,824 cells (30 columns); at most
    4,194,304 (MAX_CELLS) are allowed: drop or merge columns
    """
    cells = math.prod(sizes)
    if cells > MAX_CELLS:
        raise DataError(f"pre-aggregated table implies {cells:,} cells ({len(sizes)} columns); at most {MAX_CELLS:,} "
                        "(MAX_CELLS) are allowed: drop or merge columns")
    if records * len(names) > MAX_TABLE_ENTRIES:
        raise DataError(f"pre-aggregated table expands to {records:,} records × {len(names)} columns = "
                        f"{records * len(names):,} values; at most {MAX_TABLE_ENTRIES:,} (MAX_TABLE_ENTRIES) are "
                        "allowed: drop columns or upload fewer records")


def _counts(cells: pd.Series) -> np.ndarray:
    values = pd.to_numeric(cells.str.strip(), errors="coerce").to_numpy(float)
    bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
    if bad.any():
        row = int(np.argmax(bad))
        raise DataError(f"column {cells.name!r} holds {cells.iloc[row][:40]!r} in row {row + 2}; counts of a "
                        "pre-aggregated table must be integers >= 0")
    if values.sum() > MAX_TABLE_RECORDS:
        raise DataError(f"column {cells.name!r} sums to {values.sum():,.0f} records; at most {MAX_TABLE_RECORDS:,} "
                        "(MAX_TABLE_RECORDS) are allowed")
    return values.astype(np.int64)


# ---------------------------------------------------------------------------------------------- measures

def _distribution(counts: np.ndarray) -> np.ndarray:
    total = counts.sum()
    return counts / total if total > 0 else np.full(counts.shape, 1.0 / counts.size)


def marginal_tvd(domain: Domain, true_records: np.ndarray, synth_records: np.ndarray, k: int = 2) -> float:
    """Mean total-variation distance ``½ Σ |p − q|`` between normalised k-way marginals of two record sets.

    >>> d = Domain(("a", "b"), (2, 2))
    >>> marginal_tvd(d, np.array([[0, 0], [1, 1]]), np.array([[0, 0], [0, 1]]))
    0.5
    """
    return float(np.mean([0.5 * np.abs(_distribution(marginal_counts(domain, true_records, m))
                                       - _distribution(marginal_counts(domain, synth_records, m))).sum()
                          for m in itertools.combinations(domain.names, k)]))


def independence_tvd(domain: Domain, records: np.ndarray) -> float:
    """The non-private independence baseline: mean TVD of the product of exact 1-way marginals to each true
    2-way marginal (what a method must beat to show it learnt any correlation).

    >>> d = Domain(("a", "b"), (2, 2))
    >>> independence_tvd(d, np.array([[0, 0], [1, 1]]))
    0.5
    """
    distances = []
    for a, b in itertools.combinations(domain.names, 2):
        joint = _distribution(marginal_counts(domain, records, (a, b)))
        product = np.outer(_distribution(marginal_counts(domain, records, (a,))),
                           _distribution(marginal_counts(domain, records, (b,))))
        distances.append(0.5 * np.abs(joint - product).sum())
    return float(np.mean(distances))


# ---------------------------------------------------------------------------------------------- marginal releases

def parse_marginal_workload(spec: str, domain: Domain):
    """``marginals:k=2`` (all k-way) or ``marginals:age+sex*2,race`` (a list; ``+`` joins attributes, ``*w`` weights).

    An entry ``ranges:age|sex`` asks every range of the ordinal attribute age within each level of sex
    (attributes after ``|`` joined by ``|`` or ``+``).

    >>> w = parse_marginal_workload("marginals:a+b*2,c,ranges:a|c", Domain(("a", "b", "c"), (2, 2, 2)))
    >>> w.marginals, w.weights, w.ranges
    ((('a', 'b'), ('c',), ('a', 'c')), (2.0, 1.0, 1.0), (None, None, 'a'))
    """
    from dplens.core.queries.marginals import MarginalWorkload

    kind, _, rest = spec.partition(":")
    if kind == "ranges":
        kind, rest = "marginals", spec
    if kind != "marginals" or not rest:
        raise ValueError(f"--workload {spec!r}: a table takes marginals:k=K or marginals:A+B,C or ranges:A|B")
    if rest.startswith("k="):
        try:
            k = int(rest[2:])
        except ValueError:
            raise ValueError(f"--workload {spec!r}: k must be an integer") from None
        return MarginalWorkload.all_kway(domain, k)
    marginals, weights, ranges = [], [], []
    for part in rest.split(","):
        names, star, weight = part.partition("*")
        try:
            weights.append(float(weight) if star else 1.0)
        except ValueError:
            raise ValueError(f"marginal {part!r}: the weight after * must be a number, got {weight!r}") from None
        names = names.strip()
        ordinal = None
        if names.startswith("ranges:"):
            names = names[len("ranges:"):].replace("|", "+")
            ordinal = names.split("+")[0].strip()
        marginals.append(tuple(n.strip() for n in names.split("+")))
        ranges.append(ordinal)
    return MarginalWorkload(domain, tuple(marginals), tuple(weights), tuple(ranges))


def marginals_to_csv(workload, estimates: list[np.ndarray], stds: list[float], levels: dict[str, list[str]]) -> str:
    """Long CSV ``marginal,cell,count,std``: one row per cell; ``marginal`` and ``cell`` join names/levels by ``|``.

    >>> from dplens.core.queries.marginals import MarginalWorkload
    >>> w = MarginalWorkload(Domain(("a",), (2,)), (("a",),))
    >>> print(marginals_to_csv(w, [np.array([1.0, 2.0])], [0.5], {"a": ["x", "y"]}), end="")
    marginal,cell,count,std
    a,x,1,0.5
    a,y,2,0.5
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")  # quotes a level or name holding a comma, quote or newline
    writer.writerow(["marginal", "cell", "count", "std"])
    for marginal, estimate, std in zip(workload.marginals, estimates, stds, strict=True):
        for cell in itertools.product(*(range(n) for n in estimate.shape)):
            label = "|".join(levels.get(a, [])[c] if levels.get(a) else str(c)
                             for a, c in zip(marginal, cell, strict=True))
            writer.writerow(["|".join(marginal), label, f"{estimate[cell]:.6g}", f"{std:.6g}"])
    return out.getvalue()


def ranges_to_csv(workload, estimates: list[np.ndarray], levels: dict[str, list[str]]) -> str | None:
    """Long CSV ``marginal,low,high,cell,answer`` of every range query, answered from the released cells
    (post-processing); ``cell`` labels the other attributes' levels joined by ``|``. None without ranges.

    >>> from dplens.core.queries.marginals import MarginalWorkload
    >>> w = MarginalWorkload(Domain(("a",), (2,)), (("a",),), ranges=("a",))
    >>> print(ranges_to_csv(w, [np.array([1.0, 2.0])], {"a": ["x", "y"]}), end="")
    marginal,low,high,cell,answer
    ranges:a,x,x,,1
    ranges:a,x,y,,3
    ranges:a,y,y,,2
    """
    if all(o is None for o in workload.ranges):
        return None
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["marginal", "low", "high", "cell", "answer"])
    for index, (marginal, ordinal) in enumerate(zip(workload.marginals, workload.ranges, strict=True)):
        if ordinal is None:
            continue
        answers = workload.answer_queries(index, estimates[index])
        size = workload.domain.sizes_of((ordinal,))[0]
        names = levels.get(ordinal) or [str(c) for c in range(size)]
        others = [a for a in marginal if a != ordinal]
        cells = ["|".join((levels.get(a) or [str(c) for c in range(n)])[c] for a, c, n in
                          zip(others, cell, workload.domain.sizes_of(tuple(others)) if others else (), strict=True))
                 for cell in itertools.product(*(range(n) for n in workload.domain.sizes_of(tuple(others))))]
        label = "ranges:" + "|".join([ordinal] + others)
        position = 0
        for low in range(size):
            for high in range(low, size):
                for cell in cells:
                    writer.writerow([label, names[low], names[high], cell, f"{answers[position]:.6g}"])
                    position += 1
    return out.getvalue()


def records_to_csv(domain: Domain, records: np.ndarray, levels: dict[str, list[str]]) -> str:
    """Synthetic records with the input's header, codes turned back into the input's levels."""
    frame = pd.DataFrame({n: np.asarray(levels[n], dtype=object)[records[:, i]] if n in levels else records[:, i]
                          for i, n in enumerate(domain.names)})
    return frame.to_csv(index=False)

