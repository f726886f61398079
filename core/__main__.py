"""Command line: ``python -m core release|compare|reproduce ...`` (``--help`` on each). Bad input exits 2 with one line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from core.datasets import SAMPLE_DATASETS, load_histogram
from core.experiment import run_sweep, summarise
from core.export import release_to_csv, release_to_json
from core.mechanisms import MECHANISMS, NEIGHBOURING, configure
from core.mechanisms.gaussian import Matched, for_privacy
from core.metrics import METRICS
from core.noise import NOISE_PATHS, noise_sampler, noise_source
from core.privacy import DEFINITIONS, ZCDP, target
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


def _privacy(args: argparse.Namespace):
    """The privacy target of --definition with --epsilon (ε at --delta) or --rho (zCDP only)."""
    if args.rho is not None:
        if args.definition != "zcdp":
            raise CliError(f"--rho needs --definition zcdp, got --definition {args.definition}")
        if args.epsilon is not None:
            raise CliError("give --epsilon or --rho, not both")
        return ZCDP(_floats(args.rho, "--rho")[0])
    if args.epsilon is None:
        raise CliError("--epsilon is required (or --rho with --definition zcdp)")
    epsilon = _floats(args.epsilon, "--epsilon")[0]
    return target(args.definition, epsilon, args.delta)


def cmd_release(args: argparse.Namespace) -> int:
    histogram = load_histogram(args.input)
    privacy = _privacy(args)
    base = _mechanism(args.mechanism, _params(args.param))
    if args.definition == "pure":
        runner, epsilon = for_privacy(base, privacy)  # refuses Gaussian mechanisms
    else:  # ε at δ: Laplace at √(2ρ) or ε, Gaussian calibrated; the release states definition, δ and ρ
        runner, epsilon = Matched(base, args.definition, args.delta), privacy.to_approx(args.delta).epsilon
    mechanism = runner.resolve(epsilon)[0] if isinstance(runner, Matched) else runner
    workload = parse_workload(args.workload, histogram.domain.shape, np.random.default_rng(args.seed))
    # secure (OpenDP) by default: the output leaves the building; integer noise where that is sound
    rng = noise_source(args.noise, args.seed, mechanism=mechanism, counts=histogram.counts)
    release = runner.run(histogram.counts, workload, epsilon, rng)
    output = Path(args.output)
    labels = histogram.bin_labels() if release.estimate is not None else None
    if output.suffix.lower() == ".json":
        output.write_text(release_to_json(release, workload=args.workload, seed=args.seed,
                                          noise_path=args.noise, dataset=histogram.name, labels=labels,
                                          noise_sampler=noise_sampler(rng, mechanism)))
    elif output.suffix.lower() == ".csv":
        output.write_bytes(release_to_csv(release, labels))
    else:
        raise CliError(f"--output must end in .csv or .json, got {args.output!r}")
    kind = "bins" if release.estimate is not None else "query answers"
    print(f"released {len(release.estimate if release.estimate is not None else release.answers)} {kind} "
          f"with {release.mechanism} under {privacy} (epsilon={release.epsilon:g}, privacy loss "
          f"{release.privacy_loss:g}; neighbouring: {NEIGHBOURING}) -> {output}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    histogram = load_histogram(args.input)
    workload = parse_workload(args.workload, histogram.domain.shape, np.random.default_rng(args.seed))
    names = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    # every mechanism at matched privacy: the epsilons are "ε at --delta" under --definition
    mechanisms = [_mechanism(name, {}) for name in names]
    if args.definition != "pure":
        mechanisms = [Matched(m, args.definition, args.delta) for m in mechanisms]
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise CliError(f"unknown metrics {unknown}; choose from {', '.join(METRICS)}")
    epsilons = _floats(args.epsilons, "--epsilons")

    def progress(done: int, total: int, label: str) -> None:
        if sys.stderr.isatty():
            print(f"\r{done}/{total} {label:<24}", end="", file=sys.stderr)

    df = run_sweep(histogram, workload, mechanisms, epsilons, args.trials, seed=args.seed,
                   metrics=metrics, progress=progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    df.to_csv(args.output, index=False)
    table = summarise(df)
    with np.printoptions(precision=4):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for name, message in df.attrs["errors"].items():
        print(f"skipped {name}: {message}", file=sys.stderr)
    print(f"wrote {len(df)} rows to {args.output}")
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
    parser.add_argument("--definition", choices=list(DEFINITIONS), default="pure",
                        help="pure: epsilon-DP (Laplace only); approx: (epsilon, delta)-DP; zcdp: rho-zCDP "
                             "(Gaussian mechanisms need approx or zcdp)")
    parser.add_argument("--delta", type=_delta, default=1e-6,
                        help="delta of (epsilon, delta), and where zCDP is reported as epsilon (default 1e-6)")
    if rho:
        parser.add_argument("--rho", help="zCDP budget rho > 0 instead of --epsilon (with --definition zcdp)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="dplens: DP histogram releases")
    sub = parser.add_subparsers(dest="command", required=True)
    samples = ", ".join(SAMPLE_DATASETS)

    rel = sub.add_parser("release", help="release a histogram (or workload answers) with one mechanism",
                         description="Writes only released values, never the true counts.")
    rel.add_argument("--input", required=True, help=f"histogram file (CSV/JSON/NPY) or sample name ({samples})")
    rel.add_argument("--mechanism", required=True, help=f"one of: {', '.join(MECHANISMS)}")
    rel.add_argument("--epsilon", help="privacy budget epsilon > 0 (with --definition approx/zcdp: epsilon at --delta)")
    _definition_arguments(rel, rho=True)
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
    cmp_.add_argument("--epsilons", default="0.1,1", help="comma-separated epsilons (epsilon at --delta)")
    _definition_arguments(cmp_, rho=False)
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
    except (CliError, ValueError, OSError) as err:
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
