"""AIM's error against its budget on Adult (the error should fall as ρ grows), with MST beside it for memory.

Adult ($DPLENS_SHARED_DATA/adult, else ../shared/data/adult; skipped when absent) is split once (seed 0) into a
training part (80 %) that the synthesiser sees and a held-out part (20 %). Each run fits AIM (or MST) on the training
part through ``dplens.core.tables.synthesis`` and scores its synthetic records by the mean total-variation distance
over all 2-way marginals, against the training records and against the held-out ones. Every run is its own child
process, one at a time, under ``nice``; the parent reads the child's process tree with psutil every
``SAMPLE_EVERY`` s (peak RSS summed over the tree) and its CPU time from the kernel's accounting of waited
children (user + system).

Variants: ``after`` is AIM as released (``AIM()``: the authors' schedule, 1000 iterations per fit and a final fit);
``before`` is the previous schedule (300 warm-started iterations per round and no final fit), rebuilt here.

    python bench/bench_aim_budget.py [--rho 0.1 0.5 1] [--seeds 0 1 2] [--variants before after] [--mst]

Rows go to bench/results/bench_aim_budget.json; each run's line is also printed as it ends.

Memory: ``--memory`` runs MST (``--memory-variant aim-short`` instead: AIM with ``rounds=AIM_SHORT_ROUNDS``, a
shorter run that shows the same trend; ``authors``: AIM with the authors' and OpenDP's defaults, 16 rounds per
attribute and models up to 80 MB, against dplens's 50 and 20 MB) once per knob at the first ``--rho`` (seed 0), each
a child as above; peak RSS and PSS of its process tree, its CPU, and the child's own peak RSS at each step of its
run. The knobs (``KNOBS``): ``bounded`` is dplens as released (candidates scored in NumPy, JAX's caches cleared
after each fit, ``dplens.core.tables.compiled_memory``); ``jax-projections`` scores them through mbi's JAX
projections, each new shape compiled; ``unbounded`` also never clears (as before both); ``no-trim`` clears without
handing the freed pages back to the OS; the others change one thing from ``unbounded``.

    python bench/bench_aim_budget.py --memory [--knobs bounded unbounded ...] [--rho 0.1]

Rows go to bench/results/bench_synthesis_memory.json (AIM: bench_synthesis_memory_<variant>.json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
from results import Recorder, record, require, run_sampled, shared_data

ADULT = shared_data("adult")
HELD_OUT = 0.2
SPLIT_SEED = 0
VARIANTS = ("before", "after")
SAMPLE_EVERY = 1.0  # s between samples: reading a 1 GB JAX process's memory map every 0.2 s took 35 % of a core
AIM_SHORT_ROUNDS = 8  # --memory-variant aim-short: the first round's step is ρ/8 (dplens's default: ρ/50)
NO_CLEAR = {"clear": False}
KNOBS: dict[str, tuple[dict, dict]] = {  # name: (settings of the child, environment of the child)
    "bounded": ({}, {}),
    "jax-projections": ({"jax_projections": True}, {}),
    "unbounded": (NO_CLEAR | {"jax_projections": True}, {}),
    "platform-allocator": (NO_CLEAR | {"jax_projections": True}, {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform",
                                      "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}),
    "malloc-arenas-2": (NO_CLEAR | {"jax_projections": True}, {"MALLOC_ARENA_MAX": "2"}),
    "persistent-cache": (NO_CLEAR | {"jax_projections": True, "cache_dir": True}, {}),
    "no-trim": ({"trim": False}, {}),
}


def _split(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(SPLIT_SEED).permutation(len(records))
    cut = int(round(len(records) * (1 - HELD_OUT)))
    return records[order[:cut]], records[order[cut:]]


def _mechanism(variant: str):
    from dplens.core.tables.synthesis import AIM, MST

    if variant == "mst":
        return MST()
    if variant == "after":
        return AIM()
    if variant == "aim-short":
        return AIM(rounds=AIM_SHORT_ROUNDS)
    if variant == "authors":  # the authors' aim.py and OpenDP's defaults: 16 rounds per attribute, models to 80 MB
        attributes = len(json.loads((ADULT / "adult-domain.json").read_text(encoding="utf-8")))
        return AIM(rounds=16 * attributes, max_size=80.0)

    class Before(AIM):
        """The old schedule: 300 warm-started iterations per round, the last round's model released."""

        def final_fit(self, table, estimator):
            return table

    return Before(round_iters=300)


def _apply_knob(knob: str) -> None:
    """Set up this child for ``knob`` (``KNOBS``) before anything compiles."""
    import tempfile

    import jax

    from dplens.core.tables import compiled_memory

    settings = KNOBS[knob][0]
    if not settings.get("clear", True):
        compiled_memory.clear_compiled = lambda: None
    if not settings.get("trim", True):
        compiled_memory.release_freed = lambda: False
    if settings.get("jax_projections"):  # the fitted model as mbi returns it: its projections compile in JAX
        compiled_memory.bounded = lambda model: model
    if settings.get("cache_dir"):
        jax.config.update("jax_compilation_cache_dir", tempfile.mkdtemp(prefix="dplens-bench-jax-"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def child(variant: str, rho: float, seed: int, knob: str = "bounded") -> None:
    """One run: fit on the training part, print one JSON line with its scores."""
    from dplens.core.queries.marginals import MarginalWorkload
    from dplens.core.tables.records import load_table, marginal_tvd

    _apply_knob(knob)

    table = load_table(ADULT / "adult.csv", ADULT / "adult-domain.json")
    train, test = _split(table.records)
    workload = MarginalWorkload.all_kway(table.domain, 2)
    mechanism = _mechanism(variant)
    plan = mechanism.progress_plan(workload)
    grown: list[tuple[float, float]] = []  # (the child's max RSS in MB, where the run was) at each progress report

    def progress(fraction: float) -> None:
        grown.append((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, fraction))

    wall = time.perf_counter()
    release = mechanism.run(train, workload, rho, np.random.default_rng(seed), progress=progress)
    wall = time.perf_counter() - wall
    top = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    where = next((plan.describe(f) for mb, f in grown if mb >= 0.9 * top), "sampling or after")
    by_step: dict[str, float] = {}  # the child's peak RSS (MB) when each step of the run was last reported
    for mb, fraction in grown:
        by_step[plan.describe(fraction)] = round(mb)
    print(json.dumps({"rss_by_step_mb": by_step, "tvd_train": marginal_tvd(table.domain, train, release.records),
                      "tvd_held_out": marginal_tvd(table.domain, test, release.records),
                      "run_wall_s": wall, "model_fits": release.params["model_fits"],
                      "rows": release.params["rows"], "child_max_rss_mb": top, "rss_reached_90pct_at": where}),
          flush=True)


def measured(variant: str, rho: float, seed: int, knob: str = "bounded") -> dict:
    """Run one child under ``nice``; its scores with wall, CPU (the tree's) and peak tree RSS and PSS
    (``run_sampled``)."""
    run = run_sampled(["nice", "-n", "10", sys.executable, __file__, "--child", variant, str(rho), str(seed), knob],
                      env=os.environ | {"PYTHONWARNINGS": "ignore"} | KNOBS[knob][1], every=SAMPLE_EVERY)
    if run.returncode:
        raise RuntimeError(f"{variant} rho={rho} seed={seed} knob={knob} failed (exit {run.returncode}): "
                           f"{run.stderr.strip()[-300:]}")
    row = json.loads(run.stdout.strip().splitlines()[-1])
    return row | {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "peak_mb": run.peak_rss / 2**20,
                  "peak_pss_mb": run.peak_pss / 2**20}


def memory(args) -> None:
    """One run per knob (``KNOBS``) at the first ρ, seed 0: peak tree RSS/PSS and CPU next to wall time."""
    rho = args.rho[0]
    suffix = "" if args.memory_variant == "mst" else f"_{args.memory_variant}"
    with Recorder(f"bench_synthesis_memory{suffix}", args):
        for knob in args.knobs:
            row = measured(args.memory_variant, rho, 0, knob)
            print(f"{args.memory_variant} rho={rho:g} {knob}: peak tree RSS {row['peak_mb']:.0f} MB, PSS "
                  f"{row['peak_pss_mb']:.0f} MB; {row['cpu_s']:.0f} s CPU / {row['wall_s']:.0f} s wall; TVD train "
                  f"{row['tvd_train']:.4f}; {row['model_fits']} fits; child's RSS by step {row['rss_by_step_mb']}",
                  flush=True)
            record(name=f"{args.memory_variant}, ρ={rho:g}, {knob}", variant=args.memory_variant, knob=knob, rho=rho,
                   seed=0, **row)


def main() -> None:
    if len(sys.argv) in (5, 6) and sys.argv[1] == "--child":
        child(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), *sys.argv[5:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rho", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--mst", action="store_true", help="first, one MST run per ρ (seed 0), for its memory")
    parser.add_argument("--memory", action="store_true", help="MST's (or AIM's) memory, one run per knob")
    parser.add_argument("--memory-variant", choices=("mst", "aim-short", "after", "authors"), default="mst")
    parser.add_argument("--knobs", nargs="+", choices=list(KNOBS), default=["unbounded", "bounded"])
    args = parser.parse_args()
    require(ADULT / "adult.csv", ADULT / "adult-domain.json")
    if args.memory:
        memory(args)
        return
    with Recorder("bench_aim_budget", args):
        if args.mst:
            for rho in args.rho:
                row = measured("mst", rho, 0)
                print(f"MST rho={rho:g}: TVD train {row['tvd_train']:.4f}, held-out {row['tvd_held_out']:.4f}; "
                      f"{row['wall_s']:.0f} s wall / {row['cpu_s']:.0f} s CPU; peak tree RSS {row['peak_mb']:.0f} MB "
                      f"(90 % reached: {row['rss_reached_90pct_at']})", flush=True)
                record(name=f"MST, ρ={rho:g}", variant="mst", rho=rho, seed=0, **row)
        for seed in args.seeds:  # seed-major: a partial bench still has every ρ and variant
            for rho in args.rho:
                for variant in args.variants:
                    row = measured(variant, rho, seed)
                    print(f"AIM {variant} rho={rho:g} seed={seed}: TVD train {row['tvd_train']:.4f}, held-out "
                          f"{row['tvd_held_out']:.4f}; {row['model_fits']} fits; {row['wall_s']:.0f} s wall / "
                          f"{row['cpu_s']:.0f} s CPU; peak tree RSS {row['peak_mb']:.0f} MB (90 % reached: "
                          f"{row['rss_reached_90pct_at']})", flush=True)
                    record(name=f"AIM {variant}, ρ={rho:g}, seed {seed}", variant=variant, rho=rho, seed=seed, **row)


if __name__ == "__main__":
    main()
