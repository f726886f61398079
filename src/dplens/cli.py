"""Command line: ``dplens app|release|compare|grid|ledger|reproduce ...`` (also ``python -m dplens``; ``--help`` on
each). Bad input exits 2 with one line.

``release`` charges the dataset's persistent ledger (``dplens.core.privacy.ledger_store``; ``--ledger PATH``, default
``$DPLENS_HOME/dplens.sqlite3``) before it writes anything, and refuses an over-budget release.
"""

from __future__ import annotations

# Start-up: `--help` must not wait for NumPy, SciPy, pandas or the registries (tests/test_cli_start.py), so the
# heavy imports are inside the command handlers that need them -- the standard way to keep a CLI's start fast, and
# the one place the project uses function-local imports. The names the help lists are kept light below.
import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dplens.core.analysis.bounded import RunTimeLimitError, fork_directly
from dplens.core.data.bundle import app_root
from dplens.core.data.limits import MAX_ACTION_SECONDS, MAX_UPLOAD_BYTES
from dplens.core.papers.cli import add_reproduce_command
from dplens.core.serving import LOCAL, MODE_ENV, SHARED, is_loopback

if TYPE_CHECKING:
    from dplens.core.privacy.budget import Budget
    from dplens.core.privacy.ledger_store import LedgerStore

# The registries' names, as the help lists them; tests/test_cli_start.py checks each equals its registry
# (dplens.core.registry.histogram_mechanisms(), dplens.core.queries.workloads.WORKLOADS,
# dplens.core.analysis.metrics.METRICS, dplens.core.data.datasets.SAMPLE_DATASETS,
# dplens.core.privacy.definitions.DEFINITIONS, dplens.core.privacy.noise.NOISE_PATHS,
# dplens.core.tables.records.MISSING_CHOICES, dplens.core.privacy.ledger_store.DEFAULT_TOTAL_EPSILON).
MECHANISM_NAMES = ("identity", "laplace-on-answers", "uniform", "wda", "om", "sreb-gca", "dp-base", "cell-release",
                   "hb", "privelet", "mm-opt", "lrm", "ugrid", "agrid", "greedy-h", "dawa", "mwem", "ahp",
                   "gaussian-identity", "gaussian-answers", "gaussian-hb", "gaussian-privelet", "gaussian-greedy-h",
                   "gaussian-eigen")
WORKLOAD_NAMES = ("identity", "total", "prefix", "all-range", "random-range", "hot-spot", "random-linear", "file",
                  "marginals", "range-2d", "random-range-2d", "marginals-ranges-2d", "prefix-2d")
METRIC_NAMES = ("mae", "mse", "rmse", "scaled", "max", "mre", "kld")
SAMPLE_NAMES = ("smooth", "spiky", "heavy-tail", "dense", "tips-bill", "grid-2d")
DEFINITION_NAMES = ("pure", "approx", "zcdp")
NOISE_NAMES = ("exploration", "secure")
MISSING_CHOICES = ("refuse", "drop", "level")
DEFAULT_TOTAL_EPSILON = 5.0
# Old names of table mechanisms (with --domain), still accepted: the table 'identity' is 'gaussian-marginals' since
# mechanism names became unique across histograms and tables (the histogram 'identity' is another mechanism).
TABLE_ALIASES = {"identity": "gaussian-marginals"}
# `compare`'s defaults depend on what is compared (None on the parser means "not given"): a histogram sweeps registry
# mechanisms across epsilon on its workload, a table (--domain) sweeps table mechanisms across rho on marginals.
HISTOGRAM_COMPARE_DEFAULTS = {"workload": "identity", "mechanisms": "identity,laplace-on-answers,uniform",
                              "epsilons": "0.1,1"}
TABLE_COMPARE_DEFAULTS = {"workload": "marginals:k=2", "mechanisms": "gaussian-marginals,residual-planner",
                          "rhos": "0.1,1"}

SCHEDULER_HELP = ("where cells run: auto (default: serial when the runs are estimated under 6 s, else processes), "
                  "processes[:N] (local worker processes; N defaults to every core), serial, "
                  "local:N (a Dask LocalCluster of N workers) or tcp://HOST:8786 (an existing Dask cluster)")


class CliError(Exception):
    """A user error: printed as one line, exit code 2."""


def _floats(text: str, what: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CliError(f"{what} must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise CliError(f"{what} needs at least one value")
    return values


def _params(items: list[str] | None) -> dict[str, str]:
    params = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise CliError(f"--param must look like key=value, got {item!r}")
        params[key.strip()] = value
    return params


def _mechanism(name: str, params: dict[str, str]):
    """The registered histogram mechanism ``name`` with ``params`` (``--param``), or one line naming the choices."""
    from dplens.core.mechanisms import configure
    from dplens.core.registry import mechanism

    return configure(mechanism(name, kind="histogram"), params)


def _table_mechanism_name(name: str) -> str:
    """The registered table mechanism's name for ``name`` (old names in TABLE_ALIASES accepted), or one line."""
    from dplens.core.registry import mechanism

    return mechanism(TABLE_ALIASES.get(name, name), kind="table").name


def _privacy(args: argparse.Namespace):
    """The privacy target of --definition with --epsilon (ε at --delta) or --rho (zCDP only)."""
    from dplens.core.privacy.definitions import ZCDP, target

    if args.rho is not None:
        if args.definition != "zcdp":
            raise CliError(f"--rho needs --definition zcdp, got --definition {args.definition}")
        if args.epsilon is not None:
            raise CliError("give --epsilon or --rho, not both")
        return ZCDP(_floats(args.rho, "--rho")[0])
    if args.epsilon is None:
        raise CliError("--epsilon is required (or --rho with --definition zcdp)")
    epsilons = _floats(args.epsilon, "--epsilon")
    if len(epsilons) != 1:
        raise CliError(f"--epsilon takes one number, got {args.epsilon!r} (compare --epsilons takes a list)")
    return target(args.definition, epsilons[0], args.delta)


def _store(args: argparse.Namespace) -> LedgerStore:
    from dplens.core.privacy.ledger_store import LedgerStore

    return LedgerStore(args.ledger) if args.ledger else LedgerStore()


def _total(args: argparse.Namespace) -> Budget | None:
    """The total from ``--budget`` (+ ``--budget-delta``) or ``--budget-rho`` (shown as ε at ``--budget-delta``,
    else ``--delta``, else 1e-6); None when neither is given."""
    from dplens.core.privacy.budget import Budget
    from dplens.core.validate import positive

    budget, rho, delta = args.budget, getattr(args, "budget_rho", None), args.budget_delta
    if budget is not None and rho is not None:
        raise CliError("give the total as --budget EPSILON or as --budget-rho RHO, not both")
    if rho is not None:
        positive("--budget-rho", rho)
        return Budget.zcdp(rho, delta or getattr(args, "delta", None) or 1e-6)
    if budget is None:
        if delta is not None:
            raise CliError("--budget-delta needs --budget (the total epsilon) or --budget-rho")
        return None
    return Budget(budget, delta or 0.0)


def _writable(path: str) -> Path:
    """``--output`` checked before any work: a release charges the ledger, so its file must be writable.

    >>> _writable("/")
    Traceback (most recent call last):
    dplens.cli.CliError: --output '/' is a directory; name a file
    """
    output = Path(path)
    if output.is_dir():
        raise CliError(f"--output {path!r} is a directory; name a file")
    if not output.parent.is_dir():
        raise CliError(f"--output {path!r}: the folder {str(output.parent)!r} does not exist")
    if (output.exists() and not os.access(output, os.W_OK)) or not os.access(output.parent, os.W_OK):
        raise CliError(f"--output {path!r} cannot be written")
    return output


def _left(ledger) -> str:
    """What remains, in the ledger's unit (ρ with its CKS ε at the total's δ, or ε)."""
    if ledger.unit == "rho":
        return (f"rho={ledger.remaining.rho:g} of {ledger.total.rho:g} (epsilon={ledger.remaining.epsilon:.4g} at "
                f"delta={ledger.total.delta:g})")
    return f"epsilon={ledger.remaining.epsilon:g} of {ledger.total.epsilon:g}"


def _record_budget(store: LedgerStore, fingerprint: str, args: argparse.Namespace, name: str) -> None:
    """``--budget`` (and ``--budget-delta``) or ``--budget-rho``: record the dataset's total (a no-op when it is
    already that; refused after a spend)."""
    total = _total(args)
    if total is None:
        return
    if store.recorded(fingerprint) and store.ledger(fingerprint).total == total:
        return
    store.set_total(fingerprint, total, name=name)


def cmd_release_table(args: argparse.Namespace) -> int:
    """``release --domain``/``--rho``: a table of records; synthesisers write records, the others marginals."""

    from dplens.core.release.kernel import TableRequest, release_table, table_metadata
    from dplens.core.release.table_export import export_stem, table_export_files
    from dplens.core.tables.mechanisms import table_mechanism
    from dplens.core.tables.records import load_table, parse_marginal_workload

    if args.rho is None:
        raise CliError("a table release (--domain) takes --rho (zCDP budget), not --epsilon")
    if args.definition not in ("pure", "zcdp"):  # "pure" is only the flag's default: tables are always zCDP
        raise CliError(f"a table release is rho-zCDP; --definition {args.definition} does not apply")
    rhos = _floats(args.rho, "--rho")
    if len(rhos) != 1 or not 0 < rhos[0] <= 1000:
        raise CliError(f"--rho takes one number in (0, 1000], got {args.rho!r}")
    rho = rhos[0]
    name = _table_mechanism_name(args.mechanism)
    mechanism = table_mechanism(name, **_params(args.param))
    output = _writable(args.output)
    if output.suffix.lower() != ".csv":
        raise CliError(f"--output must end in .csv for a table release, got {args.output!r}")
    table = load_table(args.input, args.domain, missing=args.missing)
    for note in table.notes:
        print(f"note: {note}", file=sys.stderr)
    # A synthesiser measures what it chooses; its workload (default all 2-way) only says what the metadata reports.
    spec = "marginals:k=2" if mechanism.synthesizes and args.workload == "identity" else args.workload
    workload = parse_marginal_workload(spec, table.domain)
    store, fingerprint = _store(args), table.fingerprint
    _record_budget(store, fingerprint, args, Path(args.input).name)
    # One door with the app (dplens.core.release.kernel): refused over budget or δ before any work, bounded, charged
    # once.
    request = TableRequest(mechanism, rho, workload, args.delta, domain_declared=table.domain_declared)
    with fork_directly():  # one thread here: the worker forks from this process, no fork server (see its doc)
        published = release_table(request, table.records, store=store,
                                  fingerprint=fingerprint, name=Path(args.input).name, time_limit=args.time_limit,
                                  where="command line")
    release, cost, ledger, export_id = published.release, published.charge, published.ledger, published.export_id
    metadata = table_metadata(published, request, dataset=Path(args.input).name)
    # The same files as the Tables page's downloads (dplens.core.release.table_export): the main one at --output
    # (synthetic records for a synthesiser, else the marginals with intervals), the others beside it.
    stem = export_stem(metadata)
    main_kind = "-synthetic.csv" if release.records is not None else "-marginals.csv"
    beside = []  # the files written next to --output, named in the message
    for file_name, (_, text, _) in table_export_files(release, table, metadata).items():
        kind = file_name[len(stem):]  # ".meta.json", "-synthetic.csv", "-marginals.csv" or "-ranges.csv"
        path = output if kind == main_kind else output.with_suffix("." + kind.lstrip(".-"))
        path.write_text(text)
        if path != output:
            beside.append(path.name)
    what = (f"{len(release.records)} synthetic records" if release.records is not None else workload.describe())
    print(f"released {what} with {name} at rho={rho:g} (charged epsilon={cost.epsilon:.4g}, "
          f"delta={args.delta:g}) -> {output} (+ {', '.join(beside)}); ledger {fingerprint[:12]}: "
          f"remaining {_left(ledger)} (export id {export_id})")
    return 0


def _declared_levels(path: str | None) -> list[list[str]] | None:
    """``--levels FILE``: a JSON object {column: [level, ...]} (or a list of lists), one per label column."""
    import json

    from dplens.core.data.files import read_bounded

    if path is None:
        return None
    try:
        doc = json.loads(read_bounded(path, what="levels file", limit=2**20, limit_name="the levels file limit"))
    except ValueError as err:  # JSONDecodeError included
        raise CliError(f"--levels {path!r}: {str(err).splitlines()[0]}") from None
    axes = list(doc.values()) if isinstance(doc, dict) else doc
    if not (isinstance(axes, list) and all(isinstance(a, list) and all(isinstance(v, str | int | float) for v in a)
                                           for a in axes)):
        raise CliError(f'--levels {path!r} must be a JSON object {{"column": ["level", ...], ...}} of lists of labels')
    return [[str(v) for v in axis] for axis in axes]


def _load_input(args: argparse.Namespace, *, releasing: bool):
    """``--input`` with its declared ``--shape``/``--levels``; for a release, refused when its shape would come
    from the data (``dplens.core.data.datasets.shape_from_data``: an undeclared grid or levels). Built-in samples
    are public and their files are their declaration."""
    from dplens.core.data.datasets import SAMPLE_DATASETS, load_histogram, shape_from_data

    shape, levels = getattr(args, "shape", None), _declared_levels(getattr(args, "levels", None))
    histogram = load_histogram(args.input, grid_shape=shape, levels=levels)
    if releasing and args.input not in SAMPLE_DATASETS:
        with open(args.input, "rb") as file:  # load_histogram read it: a regular file within the upload limit
            head = file.read(65536)
        if reason := shape_from_data(head, Path(args.input).name, grid_shape=shape, levels=levels):
            raise CliError(f"--input {args.input!r} is not released: {reason}. Exploring it (dplens compare) needs "
                           "no declaration")
    return histogram


def cmd_release(args: argparse.Namespace) -> int:
    import numpy as np

    from dplens.core.data.fingerprint import dataset_fingerprint
    from dplens.core.mechanisms import NEIGHBOURING
    from dplens.core.privacy.definitions import delta_warning, privacy_words
    from dplens.core.queries.workloads import parse_workload
    from dplens.core.release.export import SIMULATION_LABEL, ExportKeys
    from dplens.core.release.kernel import HistogramRequest, release_histogram, write_export

    if args.noise != "secure":  # tables and histograms alike
        raise CliError(f"--noise {args.noise} gives a {SIMULATION_LABEL}: its seeded noise can be regenerated and "
                       "subtracted, so it is never written as a release; use --noise secure (or `compare` to "
                       "simulate)")
    if args.domain is not None:
        return cmd_release_table(args)
    output = _writable(args.output)
    if output.suffix.lower() not in (".csv", ".json"):
        raise CliError(f"--output must end in .csv or .json, got {args.output!r}")
    privacy = _privacy(args)
    params = _params(args.param)
    name = _mechanism(args.mechanism, params).name  # unknown names and bad settings refused before reading data
    histogram = _load_input(args, releasing=True)
    workload = parse_workload(args.workload, histogram.domain.shape, np.random.default_rng(args.seed),
                              allow_files=True)
    request = HistogramRequest(name, params, privacy, workload, args.workload, args.delta)  # a former name resolved
    if args.definition != "pure" and (warning := delta_warning(args.delta, int(round(histogram.total)))):
        print(f"warning: {warning}", file=sys.stderr)
    store, fingerprint = _store(args), dataset_fingerprint(histogram)
    _record_budget(store, fingerprint, args, histogram.name)
    # The kernel refuses over budget or over the limits before any work, runs in a worker stopped at
    # --time-limit, and charges only a finished run (a stopped run writes nothing and charges nothing). The worker
    # forks from this single-threaded process: no fork server, a third ~200 MB process at 10^6 cells.
    with fork_directly():
        published = release_histogram(request, histogram.counts, store=store, fingerprint=fingerprint,
                                      name=histogram.name, time_limit=args.time_limit, where="command line")
    release = published.release
    partial = output.with_name(f".{output.name}.partial")  # streamed a chunk of values at a time, then moved whole
    try:
        with partial.open("wb") as out:
            write_export(out, published, request, fmt=output.suffix.lower().lstrip("."), dataset=histogram.name,
                         keys=ExportKeys.for_release(histogram, release, request.workload),
                         rng=np.random.default_rng(args.seed))
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
    kind = "bins" if release.estimate is not None else "query answers"
    print(f"released {len(release.estimate if release.estimate is not None else release.answers)} {kind} "
          f"with {release.mechanism} under {privacy_words(privacy)} (epsilon={release.epsilon:g} at delta="
          f"{release.params.get('delta', 0.0):g}, privacy loss {release.loss_unit}={release.privacy_loss:g}; "
          f"neighbouring: {NEIGHBOURING}) -> {output}; ledger {fingerprint[:12]}: remaining "
          f"{_left(published.ledger)} (export id {published.export_id})")
    return 0


def cmd_ledger(args: argparse.Namespace) -> int:
    from dplens.core.data.datasets import load_histogram
    from dplens.core.data.fingerprint import dataset_fingerprint
    from dplens.core.privacy.ledger_store import RESET_WARNING
    from dplens.core.release.export import history_to_csv

    if args.public_key or args.trust_key:
        return _ledger_keys(args)
    if not args.input:
        raise CliError("dplens ledger needs --input (the dataset whose ledger to show), or --trust-key / --public-key")
    histogram = load_histogram(args.input)
    store, fingerprint = _store(args), dataset_fingerprint(histogram)
    if args.reset:
        total = _total(args)
        if total is None:
            raise CliError("--reset needs --budget or --budget-rho (the fresh total)")
        store.reset(fingerprint, total, reason=args.reason or "")
        print(f"warning: {RESET_WARNING}", file=sys.stderr)
    else:
        _record_budget(store, fingerprint, args, histogram.name)
    ledger = store.ledger(fingerprint)
    history = store.history(fingerprint)
    if args.output:
        Path(args.output).write_bytes(history_to_csv(history))
    print(f"dataset {histogram.name}: fingerprint {fingerprint}")
    if ledger.unit == "rho":  # composed in zCDP: Σρ, shown with its CKS ε at the total's δ
        summary = (f"total rho={ledger.total.rho:g} (epsilon={ledger.total.epsilon:.4g} at "
                   f"delta={ledger.total.delta:g}), "
                 f"spent rho={ledger.spent.rho:g} (sum of rho)")
        left = f"rho={ledger.remaining.rho:g} (epsilon={ledger.remaining.epsilon:.4g})"
    else:
        summary = f"total epsilon={ledger.total.epsilon:g}, spent {ledger.spent.epsilon:g}"
        left = f"{ledger.remaining.epsilon:g}"
    print(f"{summary} in {len(ledger.spends)} release(s), remaining {left} ({len(history)} recorded action(s)"
          f"{'; history -> ' + args.output if args.output else ''})")
    return 0


def _ledger_keys(args: argparse.Namespace) -> int:
    """``dplens ledger --public-key FILE`` / ``--trust-key FILE --name N --reason R`` (dplens.core.data.signing)."""
    from dplens.core.data.files import read_bounded
    from dplens.core.data.signing import key_id, public_key, public_key_pem, read_public_key

    if args.public_key:
        Path(args.public_key).write_text(public_key_pem())
        print(f"this installation's public key {key_id(public_key())} -> {args.public_key}")
    if args.trust_key:
        try:
            # read at most 1 MB whatever the file is (a FIFO, /dev/zero); the key itself is checked to 4 KB
            raw = read_public_key(read_bounded(args.trust_key, what="public key file", limit=2**20,
                                               limit_name="the key file limit"))
        except ValueError as err:
            raise CliError(f"--trust-key {args.trust_key!r}: {err}") from None
        kid = _store(args).trust_key(raw, name=args.name or "", reason=args.reason or "")
        print(f"trusted key {kid} ({args.name.strip()}): the exports it signs load as already private for you")
    return 0


def _schedule(args: argparse.Namespace) -> list:
    """``--schedule`` as privacy values: pure ε, ρ with ``--definition zcdp``, or ε at ``--delta`` (approx) as ρ."""
    from dplens.core.privacy.definitions import ZCDP, PureDP, zcdp_rho

    values = _floats(args.schedule, "--schedule")
    if args.definition == "approx":  # epsilons at --delta, walked as the rho whose epsilon at delta each is
        return [ZCDP(zcdp_rho(v, args.delta)) for v in values]
    return [PureDP(v) for v in values] if args.definition == "pure" else [ZCDP(v) for v in values]


def _walk_line(walk, store: LedgerStore) -> str:
    from dplens.core.privacy.definitions import privacy_words
    from dplens.core.release.kernel import walk_costs

    costs = walk_costs(walk)  # what the released prefix cost: a Gaussian walk's proved bound, not its schedule
    done = privacy_words(costs[walk.released - 1]) if walk.released else "nothing"
    after = f"; next step {privacy_words(costs[walk.released])}" if walk.state == "active" else ""
    return (f"walk {walk.id} on {walk.name or walk.fingerprint[:12]} ({walk.state}): released {walk.released} of "
            f"{walk.steps} steps, {done} spent in all{after}; ledger remaining {_left(store.ledger(walk.fingerprint))}")


def _gradual_input(args: argparse.Namespace, store: LedgerStore, needs: dict[str, object]):
    """(histogram, fingerprint, workload) of ``gradual start`` or ``accuracy``: every option in ``needs`` given, the
    output folder there, the dataset's total recorded when one is given."""
    import numpy as np

    from dplens.core.data.fingerprint import dataset_fingerprint
    from dplens.core.queries.workloads import parse_workload

    if not all(needs.values()):
        raise CliError(f"gradual {args.action} needs {', '.join(needs)}")
    if not Path(args.output_dir).is_dir():
        raise CliError(f"--output-dir {args.output_dir!r} is not a folder")
    histogram = _load_input(args, releasing=True)
    fingerprint = dataset_fingerprint(histogram)
    _record_budget(store, fingerprint, args, histogram.name)
    return histogram, fingerprint, parse_workload(args.workload, histogram.counts.shape,
                                                  np.random.default_rng(args.seed))


def _accuracy_first(args: argparse.Namespace, store: LedgerStore) -> int:
    """``gradual accuracy``: Ligett et al.'s search on the secure path, the first step meeting --target released."""
    from dplens.core.release.kernel import accuracy_first_release, export_accuracy_first

    histogram, fingerprint, workload = _gradual_input(args, store, {
        "--input": args.input, "--target": args.target, "--cap": args.cap, "--output-dir": args.output_dir})
    result = accuracy_first_release(histogram.counts.ravel(), workload, args.target, store=store,
                                    fingerprint=fingerprint, name=histogram.name, epsilon_max=args.cap,
                                    steps=args.steps, metric=args.metric, where="command line")
    left = _left(store.ledger(fingerprint))
    if result.stopped_at is None:
        print(f"no step met {args.metric} {args.target:g} up to epsilon {args.cap:g}: nothing released; charged the "
              f"ex-post loss epsilon={result.charged.epsilon:.4g} (eps_A + eps_T); ledger remaining {left}")
        return 0
    output = Path(args.output_dir) / "accuracy-first.json"
    output.write_bytes(export_accuracy_first(result, args.workload, fmt="json", dataset=histogram.name))
    print(f"step {result.stopped_at} of {args.steps} met {args.metric} {args.target:g} -> {output}; charged the "
          f"ex-post loss epsilon={result.charged.epsilon:.4g} (ex-ante cap {result.ex_ante_cap:.4g}); ledger "
          f"remaining {left}")
    return 0


def cmd_gradual(args: argparse.Namespace) -> int:
    """``gradual start|next|status|abandon|accuracy``: a real noise-reduction walk (``dplens.core.release.kernel``)."""
    from dplens.core.release.kernel import export_walk_step, release_walk_step, start_walk
    from dplens.core.release.walk_store import WalkStore

    store = _store(args)
    if args.action == "accuracy":
        return _accuracy_first(args, store)
    if args.action == "start":
        histogram, fingerprint, workload = _gradual_input(args, store, {
            "--input": args.input, "--schedule": args.schedule, "--output-dir": args.output_dir})
        walk = start_walk(histogram.counts, _schedule(args), store=store, fingerprint=fingerprint,
                          name=histogram.name, mechanism=args.mechanism, settings=_params(args.param),
                          workload=workload, workload_spec=args.workload, delta=args.delta,
                          output_dir=str(Path(args.output_dir).resolve()))
        print(f"walk {walk.id}")
        return 0
    walks = WalkStore(store.path, store.owner)
    if args.action == "status" and not args.walk:  # every walk of this curator
        for walk in walks.walks():
            print(_walk_line(walk, store))
        return 0
    if not args.walk:
        raise CliError(f"gradual {args.action} needs --walk ID (printed by gradual start)")
    if args.action == "next":
        step = release_walk_step(args.walk, store=store, delta=args.delta, where="command line")
        output = Path(args.output_dir or step.walk.output_dir or ".") / f"step-{step.step}.json"
        output.write_bytes(export_walk_step(step, fmt="json", dataset=step.walk.name))
        print(f"step {step.step} -> {output}; " + _walk_line(step.walk, store))
    elif args.action == "abandon":
        print(_walk_line(walks.abandon(args.walk, args.reason or ""), store))
    else:
        print(_walk_line(walks.get(args.walk), store))
    return 0


def cmd_compare_table(args: argparse.Namespace) -> int:
    """``compare --domain``: table mechanisms across ρ on marginals, scored against the independence baseline."""
    from dplens.core.analysis.execution import ProgressBar
    from dplens.core.queries.marginals import MarginalWorkload
    from dplens.core.tables.compare import baseline_scores, compare_tables, summarise_tables
    from dplens.core.tables.records import load_table, parse_marginal_workload

    if args.epsilons is not None:
        raise CliError("a table comparison (--domain) takes --rhos (zCDP budgets), not --epsilons")
    workload_given = args.workload is not None
    _fill_defaults(args, TABLE_COMPARE_DEFAULTS)
    table = load_table(args.input, args.domain, missing=args.missing)
    for note in table.notes:
        print(f"note: {note}", file=sys.stderr)
    if not workload_given and len(table.domain.names) < 2:  # the default's 2-way marginals need two attributes
        args.workload = "marginals:k=1"
    workload = parse_marginal_workload(args.workload, table.domain)
    evaluation = MarginalWorkload.all_kway(table.domain, min(args.evaluate, len(table.domain.names)))
    names = [_table_mechanism_name(name) for name in _names(args.mechanisms, "--mechanisms")]
    rhos = _floats(args.rhos, "--rhos")
    bar, runs = ProgressBar(), len(names) * len(rhos) * args.trials
    df = compare_tables(table.records, workload, names, rhos, trials=args.trials, seed=args.seed,
                        evaluation=evaluation, progress=lambda f, text: bar(round(f * runs), runs, text))
    df.to_csv(args.output, index=False)
    print(summarise_tables(df).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    base = baseline_scores(workload, evaluation, table.records)
    print(f"independence baseline (non-private, product of exact 1-way marginals): RMSE {base['rmse']:.4g} on the "
          f"workload, mean TVD {base['tvd']:.4g} on all {evaluation.describe()}")
    print(f"wrote {len(df)} rows to {args.output}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import numpy as np

    from dplens.core.analysis.cost import Deadline, RunLimits
    from dplens.core.analysis.execution import ProgressBar
    from dplens.core.analysis.experiment import run_sweep, summarise
    from dplens.core.analysis.strategy_store import StrategyStore
    from dplens.core.privacy.definitions import EpsilonAxis
    from dplens.core.queries.workloads import parse_workload

    if args.domain is not None:
        return cmd_compare_table(args)
    if args.rhos is not None:
        raise CliError("--rhos is for tables of records (with --domain); histograms take --epsilons")
    _fill_defaults(args, HISTOGRAM_COMPARE_DEFAULTS)
    histogram = _load_input(args, releasing=False)
    workload = parse_workload(args.workload, histogram.domain.shape, np.random.default_rng(args.seed),
                              allow_files=True)
    names = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    mechanisms = [_mechanism(name, {}) for name in names]
    # only these are computed; run_sweep refuses unknown ones, and one undefined on this histogram, before any run
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    epsilons = _floats(args.epsilons, "--epsilons")

    axis = EpsilonAxis(args.definition, args.delta)  # the epsilons are "ε at --delta" under --definition
    df = run_sweep(histogram, workload, mechanisms, epsilons, args.trials, seed=args.seed,
                   metrics=metrics, progress=ProgressBar(), scheduler=args.scheduler, limits=RunLimits(),
                   deadline=Deadline(), store=StrategyStore(), axis=axis)
    df.to_csv(args.output, index=False)
    table = summarise(df)
    with np.printoptions(precision=4):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for name, message in {**df.attrs["left_out"], **df.attrs["errors"]}.items():
        print(f"skipped {name}: {message}", file=sys.stderr)
    if df.attrs["stopped"]:
        print(f"stopped early ({df.attrs['stop_reason']}): the table holds the runs finished so far",
              file=sys.stderr)
    print(f"wrote {len(df)} rows to {args.output}; its epsilon column is {axis.describe()}")
    return 0


def _fill_defaults(args: argparse.Namespace, defaults: dict[str, str]) -> None:
    """Set each option the user left out (None) to ``defaults``' value for this kind of comparison."""
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def _names(text: str, what: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise CliError(f"{what} needs at least one value")
    return names


def _optional_ints(text: str, what: str) -> list[int | None]:
    values: list[int | None] = []
    for item in _names(text, what):
        if item == "native":
            values.append(None)
        elif item.isdigit() and int(item) >= 1:
            values.append(int(item))
        else:
            raise CliError(f"{what} must be comma-separated integers >= 1 or 'native', got {item!r}")
    return values


def cmd_grid(args: argparse.Namespace) -> int:
    from dplens.core.analysis.execution import ProgressBar, parse_scheduler
    from dplens.core.analysis.grid import GridSpec, run_grid

    spec = GridSpec(datasets=tuple(_names(args.datasets, "--datasets")),
                    mechanisms=tuple(_mechanism(name, {}).name for name in _names(args.mechanisms, "--mechanisms")),
                    epsilons=tuple(_floats(args.epsilons, "--epsilons")), trials=args.trials,
                    sizes=tuple(_optional_ints(args.sizes, "--sizes")),
                    scales=tuple(_optional_ints(args.scales, "--scales")),
                    workload=args.workload, seed=args.seed, metrics=tuple(_names(args.metrics, "--metrics")))
    if not str(args.output).endswith(".parquet"):
        raise CliError(f"--output must end in .parquet, got {args.output!r}")
    if args.scheduler != "auto":
        parse_scheduler(args.scheduler)
    start = time.perf_counter()
    try:
        outcome = run_grid(spec, args.output, scheduler=args.scheduler, progress=ProgressBar())
    except KeyboardInterrupt:
        print(f"interrupted: finished cells are in {args.output}; run the same command to resume",
              file=sys.stderr)
        return 130
    for name, message in outcome.errors.items():
        print(f"skipped {name}: {message}", file=sys.stderr)
    print(f"{outcome.computed:,} runs computed, {outcome.skipped:,} already in {args.output} "
          f"({time.perf_counter() - start:.1f} s wall) -> {args.output}")
    return 0


def _delta(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"delta must be a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"delta must be in (0, 1) (exclusive), got {text!r}")
    return value


def _definition_arguments(parser: argparse.ArgumentParser, *, rho: bool) -> None:
    parser.add_argument("--definition", choices=list(DEFINITION_NAMES), default="pure",
                        help="pure: epsilon-DP (Laplace only); approx: (epsilon, delta)-DP; zcdp: rho-zCDP "
                             "(Gaussian mechanisms need approx or zcdp)")
    parser.add_argument("--delta", type=_delta, default=1e-6,
                        help="delta of (epsilon, delta), and where zCDP is reported as epsilon (default 1e-6)")
    if rho:
        parser.add_argument("--rho", help="zCDP budget rho > 0 instead of --epsilon (with --definition zcdp)")


def _ledger_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget-delta", type=_delta, metavar="DELTA",
                        help="the total's delta, with --budget (needed by (epsilon, delta) and zCDP releases, "
                             "which the ledger charges as epsilon at --delta plus delta)")
    parser.add_argument("--ledger", metavar="PATH",
                        help="the SQLite ledger file (default: $DPLENS_HOME/dplens.sqlite3, "
                             "DPLENS_HOME defaulting to ~/.local/share/dplens)")
    parser.add_argument("--budget-rho", type=float, metavar="RHO",
                        help="the dataset's total as a rho-zCDP budget instead of --budget: spends compose by sum of "
                             "rho (pure epsilon counts epsilon^2/2; (epsilon, delta) releases are refused); shown as "
                             "epsilon at --budget-delta (else --delta)")
    parser.add_argument("--budget", type=float, metavar="EPSILON",
                        help=f"the dataset's total epsilon, recorded once (fixed after its first release); "
                             f"default {DEFAULT_TOTAL_EPSILON:g} when none is recorded")


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line (``error: ...``, exit 2) like every other bad input."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message.splitlines()[0]} (see --help)\n")


def app_script() -> Path:
    """The Streamlit entry script ``app.py``: the copy a wheel carries (``dplens/_app``), else the source tree's."""
    return app_root() / "app.py"


# Streamlit's server settings, passed as flags because a wheel carries no .streamlit/config.toml (which holds the
# same values for `streamlit run app.py` in a checkout; tests/test_wheel.py checks that the two agree).
SERVER_SETTINGS = {
    "server.headless": "true",
    "server.maxUploadSize": str(MAX_UPLOAD_BYTES // 2**20),  # MB
    "server.enableXsrfProtection": "true",
    "server.enableCORS": "true",  # XSRF protection needs CORS protection on
    "server.fileWatcherType": "none",  # serving, not developing: nothing to reload, and no watch on .venv
    "client.showErrorDetails": "none",  # an uncaught error shows a generic message; its traceback stays in the log
    "client.toolbarMode": "viewer",  # no "Deploy" button (a developer option)
    "browser.gatherUsageStats": "false",
}


def cmd_app(args: argparse.Namespace) -> int:
    """Start the Streamlit app (``streamlit run app.py``) on HOST:PORT, in place of this process (so a signal
    that stops ``dplens app`` stops the server)."""
    if not (args.shared or is_loopback(args.host)):
        raise CliError(f"--host {args.host!r} serves other machines, which needs --shared (every curator signs in, "
                       "docs: Security); without it dplens app serves one curator on 127.0.0.1, localhost or ::1")
    os.environ[MODE_ENV] = SHARED if args.shared else LOCAL  # read by dplens.ui.identity in the server
    script = app_script()
    if not script.is_file():
        raise CliError(f"dplens app needs its app.py, not found at {script}; reinstall dplens (pip install "
                       "dplens[tables], or `make run` in a clone)")
    settings = [f"--{name}={value}" for name, value in SERVER_SETTINGS.items()]
    command = [sys.executable, "-m", "streamlit", "run", str(script), *settings, "--server.address", args.host,
               "--server.port", str(args.port)]
    os.execv(sys.executable, command)
    return 0  # not reached: execv replaces the process


class _VersionAction(argparse.Action):
    """``dplens --version``: the installed distribution's version (importlib.metadata), read only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import version

        print(f"dplens {version('dplens')}")  # on stdout, as argparse's own version action
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="dplens", description="dplens: DP histogram releases")
    parser.add_argument("--version", action=_VersionAction, help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    samples = ", ".join(SAMPLE_NAMES)
    for add in (_add_app, _add_release, _add_compare, _add_grid, _add_ledger, _add_gradual):
        add(sub, samples)
    add_reproduce_command(sub)  # dplens reproduce NAME (src/dplens/core/papers/cli.py)
    return parser


def _add_app(sub, samples: str) -> None:
    """``dplens app``: start the Streamlit app."""
    app = sub.add_parser("app", help="start the point-and-click app in a browser (Streamlit)",
                         description="Runs the app installed with dplens (streamlit run app.py); stop it with Ctrl+C.")
    app.add_argument("--host", default="127.0.0.1",
                     help="address to listen on (default 127.0.0.1; any non-loopback address, such as 0.0.0.0 for "
                          "every interface, needs --shared)")
    app.add_argument("--port", type=_port, default=8501, help="port to listen on (default 8501)")
    app.add_argument("--shared", action="store_true",
                     help="serve many curators: every visitor signs in (OpenID Connect, .streamlit/secrets.toml "
                          "[auth]); needed for any --host beyond loopback and behind a reverse proxy (docs: Security). "
                          "Without it: one local curator, and requests through a proxy are refused")
    app.set_defaults(func=cmd_app)


def _shape_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shape", type=_grid_shape, metavar="ROWS,COLS",
                        help="the declared grid of an indexed row,col,count file (needed to release one: without it "
                             "the grid would be sized by the data's largest index)")
    parser.add_argument("--levels", metavar="JSON",
                        help='the declared levels of a labelled A,B,count file, {"A": ["a1", ...], "B": [...]} in the '
                             "file's column order, or {\"label\": [...]} of a label,count file (needed to release "
                             "either); labels not listed are 0")


def _grid_shape(text: str) -> tuple[int, int]:
    """``--shape ROWS,COLS``: two positive integers, else one line."""
    parts = text.split(",")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if len(shape) != 2 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"must be two positive integers ROWS,COLS, got {text!r}")
    return shape[0], shape[1]


def _add_release(sub, samples: str) -> None:
    """``dplens release``: one release, charged to the ledger."""
    rel = sub.add_parser("release", help="release a histogram (or workload answers) with one mechanism",
                         description="Writes only released values, never the true counts.")
    rel.add_argument("--input", required=True, help=f"histogram file (CSV/JSON/NPY) or sample name ({samples})")
    _shape_arguments(rel)
    rel.add_argument("--mechanism", required=True, help=f"one of: {', '.join(MECHANISM_NAMES)}")
    rel.add_argument("--epsilon", help="privacy budget epsilon > 0 (with --definition approx/zcdp: epsilon at --delta)")
    _definition_arguments(rel, rho=True)
    rel.add_argument("--domain", metavar="JSON", help='a table of records: its domain file {"age": 85, ...} '
                     "(with --rho; mechanisms mst, residual-planner, gaussian-marginals (old name: identity), ...; "
                     "workload marginals:k=2)")
    rel.add_argument("--workload", default="identity", help=f"workload spec ({', '.join(WORKLOAD_NAMES)}); "
                     "e.g. random-range:m=2000")
    rel.add_argument("--seed", type=int, default=0, help="seeds a random workload's queries (never the noise)")
    rel.add_argument("--noise", choices=list(NOISE_NAMES), default="secure",
                     help="secure: OpenDP samplers (the only path written as a release); exploration is "
                          "refused here (a simulation: use `compare`)")
    rel.add_argument("--missing", choices=MISSING_CHOICES, default="refuse",
                     help="a table's missing values: refuse (default), drop their rows, or make them a level")
    rel.add_argument("--param", action="append", metavar="KEY=VALUE", help="mechanism setting (repeatable)")
    rel.add_argument("--output", required=True, help="OUT.csv (bin,count) or OUT.json (values + metadata)")
    rel.add_argument("--time-limit", type=_time_limit, default=None, metavar="SECONDS",
                     help=f"stop the run after this many seconds, releasing and charging nothing (default "
                          f"{MAX_ACTION_SECONDS:g}, from DPLENS_MAX_ACTION_SECONDS; synthesisers "
                          "DPLENS_MAX_SYNTHESIS_SECONDS)")
    _ledger_arguments(rel)
    rel.set_defaults(func=cmd_release)


def _add_compare(sub, samples: str) -> None:
    """``dplens compare``: a sweep of mechanisms × ε × trials."""
    cmp_ = sub.add_parser("compare", help="sweep mechanisms × epsilons × trials and write a tidy table")
    cmp_.add_argument("--input", required=True, help=f"histogram file or sample name ({samples})")
    _shape_arguments(cmp_)
    cmp_.add_argument("--workload", help="workload spec, e.g. random-range:m=2000 (default identity; with --domain "
                      "marginals:k=2)")
    cmp_.add_argument("--mechanisms", help="comma-separated registry names (default identity,laplace-on-answers,"
                      "uniform; with --domain gaussian-marginals,residual-planner)")
    cmp_.add_argument("--epsilons", help="comma-separated epsilons (epsilon at --delta; default 0.1,1)")
    _definition_arguments(cmp_, rho=False)
    cmp_.add_argument("--trials", type=int, default=10, help="trials per (mechanism, epsilon)")
    cmp_.add_argument("--seed", type=int, default=0, help="base seed")
    cmp_.add_argument("--metrics", default="mae,rmse", help=f"comma-separated: {', '.join(METRIC_NAMES)}")
    cmp_.add_argument("--output", required=True, help="results CSV (mechanism,epsilon,trial,metric,value,...)")
    cmp_.add_argument("--scheduler", default="auto", help=SCHEDULER_HELP)
    cmp_.add_argument("--domain", metavar="JSON", help="a table of records: its domain file; compares table "
                      "mechanisms (gaussian-marginals (old name: identity), residual-planner, mst, ...) on --workload "
                      "marginals:k=K across --rhos")
    cmp_.add_argument("--rhos", help="comma-separated zCDP budgets for a table comparison (default 0.1,1)")
    cmp_.add_argument("--missing", choices=MISSING_CHOICES, default="refuse",
                      help="a table's missing values: refuse (default), drop their rows, or make them a level")
    cmp_.add_argument("--evaluate", type=int, default=2, metavar="K",
                      help="a table comparison scores synthetic data on all K-way marginals (default 2)")
    cmp_.set_defaults(func=cmd_compare)


def _add_grid(sub, samples: str) -> None:
    """``dplens grid``: a DPBench-style grid."""
    grid = sub.add_parser("grid", help="DPBench-style grid: datasets × sizes × scales × mechanisms × epsilons",
                          description="Writes a tidy Parquet file, one row per run and metric; cells already in "
                                      "the file are skipped, so an interrupted grid resumes.")
    grid.add_argument("--datasets", required=True, help=f"comma-separated files or sample names ({samples})")
    grid.add_argument("--mechanisms", default="identity,hb,privelet,dawa,mwem,ahp,uniform",
                      help="comma-separated registry names")
    grid.add_argument("--epsilons", default="0.01,0.1,1,10", help="comma-separated epsilons")
    grid.add_argument("--sizes", default="native", help="domain sizes by coarsening (divisors of n), or native")
    grid.add_argument("--scales", default="native",
                      help="records sampled from each histogram's shape, e.g. 1000,100000; or native")
    grid.add_argument("--trials", type=int, default=10, help="trials per cell")
    grid.add_argument("--workload", default="random-range:m=2000", help="workload spec for every size")
    grid.add_argument("--seed", type=int, default=0, help="base seed (noise and scale samples)")
    grid.add_argument("--metrics", default="mae,rmse", help=f"comma-separated: {', '.join(METRIC_NAMES)}")
    grid.add_argument("--output", required=True, help="results.parquet (created, or completed if it exists)")
    grid.add_argument("--scheduler", default="auto", help=SCHEDULER_HELP)
    grid.set_defaults(func=cmd_grid)


def _add_ledger(sub, samples: str) -> None:
    """``dplens ledger``: show, export or reset a dataset's ledger."""
    led = sub.add_parser("ledger", help="show a dataset's privacy ledger, export its history, or reset it",
                         description="The ledger is keyed by the dataset's fingerprint (an HMAC-SHA-256 of counts "
                                     "and domain sizes under this installation's secret key, "
                                     "$DPLENS_HOME/installation.key); the app and `release` charge the same one.")
    led.add_argument("--input", help=f"histogram file or sample name ({samples}) (needed unless --trust-key or "
                                     "--public-key)")
    led.add_argument("--public-key", metavar="FILE",
                     help="write this installation's public key (PEM) to FILE: curators of another installation "
                          "trust it to load its signed exports as already private")
    led.add_argument("--trust-key", metavar="FILE",
                     help="trust another installation's public key (PEM, from its --public-key): its signed exports "
                          "then count as already private for you; needs --name and --reason (both recorded)")
    led.add_argument("--name", help="whose key --trust-key is (recorded)")
    led.add_argument("--output", help="write the full history (every total, spend and reset) to this CSV")
    led.add_argument("--reset", action="store_true",
                     help="start a fresh budget (needs --budget and --reason): VOIDS the privacy guarantee")
    led.add_argument("--reason", help="why the budget is reset, or why --trust-key's key is trusted (recorded)")
    _ledger_arguments(led)
    led.set_defaults(func=cmd_ledger)


def _add_gradual(sub, samples: str) -> None:
    """``dplens gradual``: a real gradual release (noise reduction), one charged step at a time."""
    walk = sub.add_parser(
        "gradual", help="release a histogram gradually: each step less noisy, the steps so far costing the last one",
        description="start draws the whole walk on the secure path and keeps it for you (nothing is charged); each "
                    "next releases one step and charges only its increment, so the ledger has spent exactly the "
                    "largest step released. Steps not yet released never leave the store.")
    walk.add_argument("action", choices=("start", "next", "status", "abandon", "accuracy"))
    walk.add_argument("--input", help=f"histogram file or sample name ({samples}) (start)")
    _shape_arguments(walk)
    walk.add_argument("--mechanism", default="identity",
                      help="a mechanism with one Laplace block on a fixed strategy (identity, hb, privelet, greedy-h, "
                           "mm-opt, laplace-on-answers, ...) or gaussian-identity (discrete Gaussian noise, each step "
                           "charged a proved rho bound) (start)")
    walk.add_argument("--workload", default="identity", help="workload spec, as for release (start)")
    walk.add_argument("--seed", type=int, default=0, help="seeds a random workload's queries, never the noise (start)")
    walk.add_argument("--param", action="append", metavar="KEY=VALUE", help="mechanism setting (repeatable) (start)")
    walk.add_argument("--schedule", help="strictly increasing epsilons (or rhos with --definition zcdp), e.g. "
                                         "0.1,0.5,1 (start)")
    walk.add_argument("--definition", choices=("pure", "approx", "zcdp"), default="pure",
                      help="pure: the schedule is epsilon; zcdp: it is rho (Laplace at epsilon = sqrt(2 rho)); "
                           "approx (gaussian-identity): epsilons at --delta, walked as rho")
    walk.add_argument("--delta", type=_delta, default=1e-6,
                      help="where rho is read as epsilon (zcdp, approx) and charged to an (epsilon, delta) ledger")
    walk.add_argument("--output-dir", help="folder for step-<k>.json (start; next may override it)")
    walk.add_argument("--walk", help="the walk's id (next, status, abandon)")
    walk.add_argument("--reason", help="why the walk is abandoned (recorded)")
    walk.add_argument("--target", type=float, help="accuracy: the error to reach on the workload (see --metric)")
    walk.add_argument("--metric", choices=("rmse", "mae", "max_abs"), default="rmse", help="accuracy: the error")
    walk.add_argument("--cap", type=float, help="accuracy: the largest epsilon the search may reach")
    walk.add_argument("--steps", type=int, default=10, help="accuracy: steps of its geometric grid (default 10)")
    _ledger_arguments(walk)
    walk.set_defaults(func=cmd_gradual)


def _number_in(kind: type, low: float, high: float, what: str, *, open_low: bool = False):
    """An argparse type: ``kind(text)`` in [low, high] (or (low, high] with ``open_low``), else one line."""
    left = "(" if open_low else "["

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not (low < value <= high if open_low else low <= value <= high):
            raise argparse.ArgumentTypeError(f"must be in {left}{low:g}, {high:g}], got {text!r}")
        return value
    return parse


_port = _number_in(int, 1, 65535, "an integer port")                                      # --port
_time_limit = _number_in(float, 0, 86400, "a number of seconds", open_low=True)          # --time-limit (seconds)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CliError, ValueError, OSError, MemoryError, RunTimeLimitError) as err:  # BudgetExceededError: exit 2
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"error: {message}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - a bug: still one line (the fuzz test keeps this path unused)
        message = str(err).splitlines()[0][:200] if str(err) else ""
        print(f"error: internal error ({type(err).__name__}) {message}; please report it", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
