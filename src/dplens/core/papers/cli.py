"""The ``reproduce`` subcommand's parser, kept light: building it imports nothing heavy, and its handler imports
``dplens.core.papers.reproduce`` (NumPy, SciPy, pandas, the mechanisms) only when a reproduction runs.

``PAPERS`` lists ``dplens.core.papers.reproduce.REPRODUCTIONS``'s names (tests/test_cli_start.py checks they are equal).
"""

from __future__ import annotations

PAPERS = ("wda", "om", "om-times", "sreb-gca", "xiao", "zhao")


def add_reproduce_command(subparsers) -> None:
    """Register ``reproduce NAME --output DIR [--data D] [--epsilons E,..] [--trials T]`` on the CLI."""
    parser = subparsers.add_parser("reproduce", help="re-run a paper's headline experiment (CSV + HTML)",
                                   description="Writes tidy CSV tables (with the verdict on every claim) and an "
                                               "HTML page with the paper's claim, what we measure, and the figures.")
    parser.add_argument("name", choices=list(PAPERS), help="which paper")
    parser.add_argument("--output", required=True, help="output directory (created if missing)")
    parser.add_argument("--data", help="a histogram file, a sample name or a DPBench name (e.g. PATENT)")
    parser.add_argument("--epsilons", help="comma-separated ε values (α for xiao; Table 3's ε for zhao)")
    parser.add_argument("--trials", type=int, help="trials per setting (released versions for xiao)")
    parser.add_argument("--seed", type=int, default=0, help="base seed")
    parser.set_defaults(func=run_reproduce_command)


def run_reproduce_command(args) -> int:
    """CLI handler: ``dplens.core.papers.reproduce.run_reproduce_command``, imported when a reproduction runs."""
    from dplens.core.papers import reproduce  # heavy: only here, so that `--help` starts fast

    return reproduce.run_reproduce_command(args)
