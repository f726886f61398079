"""Command line: ``python -m core release|compare|reproduce ...`` (``--help`` on each). Bad input exits 2 with one line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from core.cost import Deadline, RunLimits, check_cost, estimate_cost
from core.datasets import SAMPLE_DATASETS, load_histogram
from core.experiment import run_sweep, summarise
from core.export import release_to_csv, release_to_json
from core.mechanisms import MECHANISMS, NEIGHBOURING, configure
from core.metrics import METRICS
from core.noise import NOISE_PATHS, noise_sampler, noise_source
from core.reproduce import add_reproduce_command
from core.workloads import WORKLOADS, parse_workload


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
    if name not in MECHANISMS:
        raise CliError(f"unknown mechanism {name!r}; choose from {', '.join(MECHANISMS)}")
    return configure(MECHANISMS[name], params)


def cmd_release(args: argparse.Namespace) -> int:
    histogram = load_histogram(args.input)
    mechanism = _mechanism(args.mechanism, _params(args.param))
    workload = parse_workload(args.workload, histogram.domain.shape, np.random.default_rng(args.seed))
    epsilons = _floats(args.epsilon, "--epsilon")
    if len(epsilons) != 1:
        raise CliError(f"--epsilon takes one number, got {args.epsilon!r} (compare --epsilons takes a list)")
    epsilon = epsilons[0]
    warning = check_cost(estimate_cost(mechanism, workload), what=f"{mechanism.name} on this input")
    if warning:  # over the memory or time limit it raised above (exit 2, naming what to change)
        print(f"note: {warning}", file=sys.stderr)
    # secure (OpenDP) by default: the output leaves the building; integer noise where that is sound
    rng = noise_source(args.noise, args.seed, mechanism=mechanism, counts=histogram.counts)
    release = mechanism.run(histogram.counts, workload, epsilon, rng)
    output = Path(args.output)
    labels = histogram.bin_labels() if release.estimate is not None else None
    if output.suffix.lower() == ".json":
        output.write_text(release_to_json(release, workload=args.workload, seed=args.seed,
                                          noise_path=args.noise, dataset=histogram.name, labels=labels,
                                          noise_sampler=noise_sampler(rng)))
    elif output.suffix.lower() == ".csv":
        output.write_bytes(release_to_csv(release, labels))
    else:
        raise CliError(f"--output must end in .csv or .json, got {args.output!r}")
    kind = "bins" if release.estimate is not None else "query answers"
    print(f"released {len(release.estimate if release.estimate is not None else release.answers)} {kind} "
          f"with {release.mechanism} at epsilon={release.epsilon:g} (privacy loss {release.privacy_loss:g}; "
          f"neighbouring: {NEIGHBOURING}) -> {output}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    histogram = load_histogram(args.input)
    workload = parse_workload(args.workload, histogram.domain.shape, np.random.default_rng(args.seed))
    names = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    mechanisms = [_mechanism(name, {}) for name in names]
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise CliError(f"unknown metrics {unknown}; choose from {', '.join(METRICS)}")
    epsilons = _floats(args.epsilons, "--epsilons")

    def progress(done: int, total: int, label: str) -> None:
        if sys.stderr.isatty():
            print(f"\r{done}/{total} {label:<24}", end="", file=sys.stderr)

    df = run_sweep(histogram, workload, mechanisms, epsilons, args.trials, seed=args.seed,
                   metrics=metrics, progress=progress, limits=RunLimits(), deadline=Deadline())
    if sys.stderr.isatty():
        print(file=sys.stderr)
    df.to_csv(args.output, index=False)
    table = summarise(df)
    with np.printoptions(precision=4):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for name, message in {**df.attrs["left_out"], **df.attrs["errors"]}.items():
        print(f"skipped {name}: {message}", file=sys.stderr)
    if df.attrs["stopped"]:
        print(f"stopped early ({df.attrs['stop_reason']}): the table holds the runs finished so far",
              file=sys.stderr)
    print(f"wrote {len(df)} rows to {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="dplens: DP histogram releases")
    sub = parser.add_subparsers(dest="command", required=True)
    samples = ", ".join(SAMPLE_DATASETS)

    rel = sub.add_parser("release", help="release a histogram (or workload answers) with one mechanism",
                         description="Writes only released values, never the true counts.")
    rel.add_argument("--input", required=True, help=f"histogram file (CSV/JSON/NPY) or sample name ({samples})")
    rel.add_argument("--mechanism", required=True, help=f"one of: {', '.join(MECHANISMS)}")
    rel.add_argument("--epsilon", required=True, help="privacy budget epsilon > 0")
    rel.add_argument("--workload", default="identity", help=f"workload spec ({', '.join(WORKLOADS)}); "
                     "e.g. random-range:m=2000")
    rel.add_argument("--seed", type=int, default=0, help="seed of the exploration noise")
    rel.add_argument("--noise", choices=list(NOISE_PATHS), default="secure",
                     help="secure: OpenDP samplers, ignores --seed (default); exploration: seeded NumPy, reproducible")
    rel.add_argument("--param", action="append", metavar="KEY=VALUE", help="mechanism setting (repeatable)")
    rel.add_argument("--output", required=True, help="OUT.csv (bin,count) or OUT.json (values + metadata)")
    rel.set_defaults(func=cmd_release)

    cmp_ = sub.add_parser("compare", help="sweep mechanisms × epsilons × trials and write a tidy table")
    cmp_.add_argument("--input", required=True, help=f"histogram file or sample name ({samples})")
    cmp_.add_argument("--workload", default="identity", help="workload spec, e.g. random-range:m=2000")
    cmp_.add_argument("--mechanisms", default="identity,laplace-on-answers,uniform",
                      help="comma-separated registry names")
    cmp_.add_argument("--epsilons", default="0.1,1", help="comma-separated epsilons")
    cmp_.add_argument("--trials", type=int, default=10, help="trials per (mechanism, epsilon)")
    cmp_.add_argument("--seed", type=int, default=0, help="base seed")
    cmp_.add_argument("--metrics", default="mae,rmse", help=f"comma-separated: {', '.join(METRICS)}")
    cmp_.add_argument("--output", required=True, help="results CSV (mechanism,epsilon,trial,metric,value,...)")
    cmp_.set_defaults(func=cmd_compare)
    add_reproduce_command(sub)  # python -m core reproduce wda|om|sreb-gca|xiao (core/reproduce.py)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CliError, ValueError, OSError, MemoryError) as err:
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"error: {message}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - a bug: still one line (the fuzz test keeps this path unused)
        message = str(err).splitlines()[0][:200] if str(err) else ""
        print(f"error: internal error ({type(err).__name__}) {message}; please report it", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
