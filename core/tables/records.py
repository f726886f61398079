"""Tables of records: bounded CSV loading, MST synthetic data through OpenDP, and honest measures of it.

A table is an (N, d) array of integer codes with a :class:`~core.queries.marginals.TableDomain`. Input is a CSV
of records (integer codes, or categorical values mapped to codes by declared or observed levels) and
optionally a domain JSON in private-pgm's form (``{"age": 85, ...}``; a list of levels instead of a size
declares categorical levels in code order). **Missing values are refused** (one line naming the column):
recode them as an explicit level before upload; dplens neither drops rows nor invents a level silently.

MST (McKenna, Sheldon, Miklau 2021) runs through ``opendp.extras.mbi`` (not reimplemented here).

>>> table = load_table(b"sex,income\\nF,0\\nM,1\\nM,0\\n", b'{"sex": ["F", "M"], "income": 2}')
>>> table.domain.to_json(), table.records.tolist()
('{"sex": 2, "income": 2}', [[0, 0], [1, 1], [1, 0]])
"""

from __future__ import annotations

import io
import itertools
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core.data.datasets import DataError, _check_size, _decode
from core.data.fingerprint import records_fingerprint
from core.queries.marginals import MAX_LEVELS, TableDomain, marginal_counts


@dataclass(frozen=True)
class Table:
    """Integer-coded records, their domain, the levels behind each code, and notes on how they were read."""

    domain: TableDomain
    records: np.ndarray
    levels: dict[str, list[str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    fingerprint: str = ""


def _read_bytes(source: str | Path | bytes) -> bytes:
    if isinstance(source, bytes):
        _check_size(len(source))
        return source
    path = Path(source)
    if not path.is_file():
        raise DataError(f"input {str(source)!r} is not a file")
    _check_size(path.stat().st_size)  # bounded before reading (core.data.limits.MAX_UPLOAD_BYTES)
    return path.read_bytes()


def _declared(domain_bytes: bytes | None) -> dict[str, int | list[str]]:
    if domain_bytes is None:
        return {}
    try:
        mapping = json.loads(_decode(domain_bytes))
    except json.JSONDecodeError as error:
        raise DataError(f"the domain file is not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(mapping, dict) or not mapping:
        raise DataError('the domain file must be a JSON object like {"age": 85, "sex": ["F", "M"]}')
    for name, value in mapping.items():
        ok = (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_LEVELS) or (
            isinstance(value, list) and 1 <= len(value) <= MAX_LEVELS and len(set(map(str, value))) == len(value))
        if not ok:
            raise DataError(f"domain of column {name!r} is {str(value)[:40]}; the rule is a size from 1 to "
                            f"{MAX_LEVELS} or a list of distinct levels")
    return mapping


def _column_codes(name: str, cells: pd.Series, declared) -> tuple[np.ndarray, int, list[str], str | None]:
    """Codes, domain size, levels and an optional note for one column (rules in the module docstring)."""
    text = cells.str.strip()
    missing = text.eq("") | text.str.lower().isin(["na", "nan", "null", "none"])
    if missing.any():
        numeric_nan = text[missing].str.lower().eq("nan").all()
        rule = "numeric columns must hold finite integer codes" if numeric_nan else (
            "missing values are refused: recode them as an explicit level first")
        raise DataError(f"column {name!r} has a missing value in row {int(np.argmax(missing.to_numpy())) + 2}; "
                        f"{rule}")
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


def load_table(source: str | Path | bytes, domain: str | Path | bytes | None = None) -> Table:
    """Read a CSV of records (header row, one record per row) and an optional domain JSON into a :class:`Table`.

    Without a domain file the sizes come from the data, which itself discloses them (a note says so):
    declare the domain for a release whose domain must not depend on the data.

    >>> load_table(b"a\\n1\\n", b'{"a": 1}')
    Traceback (most recent call last):
    core.data.datasets.DataError: column 'a' holds code 1, outside its declared domain 0..0
    """
    data = _read_bytes(source)
    declared = _declared(_read_bytes(domain) if isinstance(domain, str | Path) else domain)
    try:
        frame = pd.read_csv(io.StringIO(_decode(data)), dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise DataError(f"the records file is not a CSV with a header row ({str(error).splitlines()[0][:80]})"
                        ) from None
    names = [str(c).strip() for c in frame.columns]
    if not names or len(set(names)) != len(names):
        raise DataError(f"the records file needs a header of distinct column names, got {names[:10]}")
    unknown = [n for n in declared if n not in names]
    if unknown:
        raise DataError(f"the domain file names {unknown[:5]}, not columns of the records file ({', '.join(names)})")
    if declared:  # the declared domain chooses (and orders) the attributes
        names = [n for n in names if n in declared]
    columns, sizes, levels, notes = [], [], {}, []
    for name in names:
        codes, size, column_levels, note = _column_codes(name, frame[name].astype(str), declared.get(name))
        columns.append(codes)
        sizes.append(size)
        levels[name] = column_levels
        if note:
            notes.append(note)
    if not declared:
        notes.insert(0, "domain inferred from the data (its sizes depend on the private records; declare a domain"
                        " file for a release)")
    records = np.column_stack(columns) if columns and len(frame) else np.zeros((0, len(names)), np.int64)
    return Table(TableDomain(tuple(names), tuple(sizes)), records, levels, tuple(notes), records_fingerprint(data))


# ---------------------------------------------------------------------------------------------- measures

def _distribution(counts: np.ndarray) -> np.ndarray:
    total = counts.sum()
    return counts / total if total > 0 else np.full(counts.shape, 1.0 / counts.size)


def marginal_tvd(domain: TableDomain, true_records: np.ndarray, synth_records: np.ndarray, k: int = 2) -> float:
    """Mean total-variation distance ``½ Σ |p − q|`` between normalised k-way marginals of two record sets.

    >>> d = TableDomain(("a", "b"), (2, 2))
    >>> marginal_tvd(d, np.array([[0, 0], [1, 1]]), np.array([[0, 0], [0, 1]]))
    0.5
    """
    return float(np.mean([0.5 * np.abs(_distribution(marginal_counts(domain, true_records, m))
                                       - _distribution(marginal_counts(domain, synth_records, m))).sum()
                          for m in itertools.combinations(domain.names, k)]))


def independence_tvd(domain: TableDomain, records: np.ndarray) -> float:
    """The non-private independence baseline: mean TVD of the product of exact 1-way marginals to each true
    2-way marginal (what a method must beat to show it learnt any correlation).

    >>> d = TableDomain(("a", "b"), (2, 2))
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


# ---------------------------------------------------------------------------------------------- MST via OpenDP

MAX_RHO_STEPS = 4096  # float steps below ρ tried for a budget split OpenDP's rounding accepts


def _prior(x: float) -> float:
    return float(np.nextafter(x, -np.inf))


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def mst_budget_accepted(rho: float, measure_split: float, attributes: int) -> bool:
    """Whether OpenDP 0.16's MST accepts its own budget split at ``rho`` (data-independent).

    Replays ``make_contingency_table``'s split (one-way half, then ``prior(prior(·))``) and MST's
    (``measure_split``, then ``attributes − 1`` equal selection rounds) and asks OpenDP's own adaptive
    composition for the selection total, the sum that overshoots by an ulp in the known trap.

    >>> mst_budget_accepted(1.0, 0.9, 14), mst_budget_accepted(0.5, 0.5, 14)
    (False, True)
    """
    dp = _opendp()
    d_multiway = _prior(_prior(rho - rho * 0.5))
    d_measure = d_multiway * measure_split
    d_select = _prior(_prior(d_multiway - d_measure))
    rounds = max(attributes - 1, 1)
    each = _prior(d_select / rounds)
    composed = dp.c.make_adaptive_composition(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
        dp.zero_concentrated_divergence(), d_in=1, d_mids=[each] * rounds).map(1)
    return composed <= d_select and d_select + d_measure <= d_multiway


def mst_handed_rho(rho: float, measure_split: float, attributes: int) -> float:
    """The largest float ρ' ≤ ρ (at most MAX_RHO_STEPS steps down) whose split OpenDP accepts; ρ is charged.

    >>> r = mst_handed_rho(1.0, 0.9, 14)
    >>> r < 1.0 and 1.0 - r < 1e-12
    True
    """
    handed = float(rho)
    for _ in range(MAX_RHO_STEPS):
        if mst_budget_accepted(handed, measure_split, attributes):
            return handed
        handed = _prior(handed)
    raise ValueError(f"OpenDP's MST refuses its own budget split at rho={rho:g}, measure_split={measure_split:g} "
                     f"for {attributes} attributes (float rounding); try another measure_split")


@dataclass(frozen=True)
class SynthRelease:
    """Synthetic records from a private model, with the privacy metadata of their release."""

    records: np.ndarray
    domain: TableDomain
    mechanism: str
    rho: float            # charged
    rho_handed: float     # given to OpenDP (≤ rho; see mst_handed_rho)
    metadata: dict


@dataclass(frozen=True)
class MST:
    """MST synthetic data (McKenna, Sheldon, Miklau 2021) through ``opendp.extras.mbi.MST``, ρ-zCDP.

    ``measure_split``: share of the multi-way budget spent measuring the selected 2-way marginals (OpenDP's
    default 0.9); ``iters``: mirror-descent iterations of private-pgm's estimator (1000 is OpenDP's default).
    Every attribute's keys are the declared codes 0..size−1, so no budget goes to discovering keys.
    """

    measure_split: float = 0.9
    iters: int = 1000
    name = "mst"

    def __post_init__(self) -> None:
        if not (isinstance(self.measure_split, float | int) and 0 < self.measure_split < 1):
            raise ValueError(f"measure_split must be in (0, 1), got {self.measure_split!r}")
        if isinstance(self.iters, bool) or not isinstance(self.iters, int) or not 1 <= self.iters <= 100_000:
            raise ValueError(f"iters must be an integer from 1 to 100000, got {self.iters!r}")

    def run(self, domain: TableDomain, records: np.ndarray, rho: float, *, rows: int | None = None) -> SynthRelease:
        if not (isinstance(rho, float | int) and math.isfinite(rho) and 0 < rho <= 1000):
            raise ValueError(f"rho must be in (0, 1000], got {rho!r}")
        if len(domain.names) < 2:
            raise ValueError(f"MST needs at least 2 attributes, got {len(domain.names)}")
        import polars as pl

        dp = _opendp()
        from mbi.estimation import mirror_descent

        iters = self.iters

        def estimator(mbi_domain, loss_fn, *, potentials=None):
            return mirror_descent(mbi_domain, loss_fn, potentials=potentials, iters=iters)

        handed = mst_handed_rho(float(rho), self.measure_split, len(domain.names))
        frame = pl.DataFrame({n: records[:, i].astype(np.int64) for i, n in enumerate(domain.names)})
        context = dp.Context.compositor(data=frame.lazy(), privacy_unit=dp.unit_of(contributions=1),
                                        privacy_loss=dp.loss_of(rho=handed), split_evenly_over=1)
        algorithm = dp.mbi.MST(measure_split=float(self.measure_split), estimator=estimator)
        query = context.query().contingency_table(
            keys={n: list(range(s)) for n, s in zip(domain.names, domain.sizes, strict=True)}, algorithm=algorithm)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # OpenDP's "rho is typically <= 0.25" advice is not an error
            try:
                table = query.release()
            except Exception as error:  # OpenDP raises OpenDPException/ValueError; one line for the user
                raise ValueError(f"OpenDP refused MST at rho={rho:g} (handed {handed!r}): "
                                 f"{' '.join(str(error).split())[:160]}") from None
            synth = table.synthesize(rows)
        # OpenDP adds a null key to every attribute (for values outside the keys); its true count is 0 here, so
        # synthetic rows that land on it are dropped (post-processing) and counted in the metadata.
        complete = synth.drop_nulls(subset=list(domain.names))
        coded = np.column_stack([complete[n].to_numpy().astype(np.int64) for n in domain.names])
        metadata = {"mechanism": "mst (opendp.extras.mbi.MST, OpenDP " + _opendp_version() + ")",
                    "privacy": "rho-zCDP, add/remove one record", "rho": float(rho), "rho_handed": handed,
                    "oneway_split": 0.5, "measure_split": float(self.measure_split), "iters": iters,
                    "rows": len(coded), "null_rows_dropped": synth.height - complete.height}
        return SynthRelease(coded, domain, "mst", float(rho), handed, metadata)


def _opendp_version() -> str:
    from importlib.metadata import version

    return version("opendp")


# ---------------------------------------------------------------------------------------------- marginal releases

def parse_marginal_workload(spec: str, domain: TableDomain):
    """``marginals:k=2`` (all k-way) or ``marginals:age+sex,race`` (a list; ``+`` joins attributes).

    >>> parse_marginal_workload("marginals:a+b,c", TableDomain(("a", "b", "c"), (2, 2, 2))).marginals
    (('a', 'b'), ('c',))
    """
    from core.queries.marginals import MarginalWorkload

    kind, _, rest = spec.partition(":")
    if kind != "marginals" or not rest:
        raise ValueError(f"--workload {spec!r}: a table takes marginals:k=K or marginals:A+B,C")
    if rest.startswith("k="):
        try:
            k = int(rest[2:])
        except ValueError:
            raise ValueError(f"--workload {spec!r}: k must be an integer") from None
        return MarginalWorkload.all_kway(domain, k)
    return MarginalWorkload(domain, tuple(tuple(part.split("+")) for part in rest.split(",")))


def identity_privacy_loss(workload, sigma: float) -> float:
    """ρ-zCDP loss of i.i.d. Gaussian noise σ on every marginal cell: Δ₂² / (2σ²) (add/remove one record)."""
    return workload.l2_sensitivity ** 2 / (2 * sigma * sigma)


def identity_marginals(workload, records: np.ndarray, rho: float, rng: np.random.Generator):
    """Each workload marginal plus i.i.d. Gaussian noise, σ² = Σ w² / (2ρ) per cell (ρ-zCDP, spec tables.md).

    Returns the noisy marginals and the per-cell standard deviation (the same for every cell).

    >>> from core.queries.marginals import MarginalWorkload
    >>> w = MarginalWorkload.all_kway(TableDomain(("a", "b"), (2, 2)), 1)
    >>> round(identity_marginals(w, np.array([[0, 1]]), 1.0, np.random.default_rng(0))[1], 4)
    1.0
    """
    sigma = workload.l2_sensitivity / math.sqrt(2 * rho)  # privacy loss Δ₂²/(2σ²) = ρ exactly
    return [m + rng.normal(0.0, sigma, size=m.shape) for m in workload.answer(records)], sigma


def marginals_to_csv(workload, estimates: list[np.ndarray], stds: list[float], levels: dict[str, list[str]]) -> str:
    """Long CSV ``marginal,cell,count,std``: one row per cell; ``marginal`` and ``cell`` join names/levels by ``|``.

    >>> from core.queries.marginals import MarginalWorkload
    >>> w = MarginalWorkload(TableDomain(("a",), (2,)), (("a",),))
    >>> print(marginals_to_csv(w, [np.array([1.0, 2.0])], [0.5], {"a": ["x", "y"]}), end="")
    marginal,cell,count,std
    a,x,1,0.5
    a,y,2,0.5
    """
    lines = ["marginal,cell,count,std"]
    for marginal, estimate, std in zip(workload.marginals, estimates, stds, strict=True):
        for cell in itertools.product(*(range(n) for n in estimate.shape)):
            label = "|".join(levels.get(a, [])[c] if levels.get(a) else str(c)
                             for a, c in zip(marginal, cell, strict=True))
            lines.append(f"{'|'.join(marginal)},{label},{estimate[cell]:.6g},{std:.6g}")
    return "\n".join(lines) + "\n"


def records_to_csv(domain: TableDomain, records: np.ndarray, levels: dict[str, list[str]]) -> str:
    """Synthetic records with the input's header, codes turned back into the input's levels."""
    frame = pd.DataFrame({n: np.asarray(levels[n], dtype=object)[records[:, i]] if n in levels else records[:, i]
                          for i, n in enumerate(domain.names)})
    return frame.to_csv(index=False)

