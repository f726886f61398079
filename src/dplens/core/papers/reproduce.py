"""The papers' headline experiments by name (``REPRODUCTIONS``), their readings, and the ``reproduce`` command.

One module per paper, each with a pure (seeded, no files written) ``reproduce_*`` returning a ``Reproduction``
(``dplens.core.papers.reproduction``: the claim, one ``Verdict`` row per claim judged by the one rule of
``dplens.core.papers.verdicts``, the errata side by side as ``Reading`` rows, findings and tidy tables):

* ``li_wda``: Li et al. §5 (WDA); ``huang_om``: Huang et al. §5 (OM) and its time claims;
* ``chen_sreb_gca``: Chen et al. §6 (SReB_GCA); ``xiao``: Xiao et al. §8;
* ``zhao``: Zhao §3–§5 (Lee & Clifton's worked example, Koufogiannis et al.'s gradual release, Ligett et al.'s
  accuracy-first search).

``dplens.core.papers.report`` draws the figures and writes CSV files and one HTML page;
``dplens reproduce wda|om|om-times|sreb-gca|xiao|zhao --output DIR [--data D] [--epsilons E] [--trials T]``
runs one. DPBench histograms are read from ``../shared/data/dpbench-1d`` (or ``$DPLENS_DPBENCH_DIR``) when present;
otherwise a bundled sample stands in, and the reproduction says which data it used.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from dplens.core.data.domain import Histogram
from dplens.core.papers.chen_sreb_gca import reproduce_sreb_gca, sreb_readings
from dplens.core.papers.huang_om import om_readings, om_times_readings, reproduce_om, reproduce_om_times
from dplens.core.papers.li_wda import reproduce_wda, wda_readings
from dplens.core.papers.report import write
from dplens.core.papers.reproduction import (
    Reading,
    Reproduction,
    check_epsilons,
    check_runs,
)
from dplens.core.papers.xiao import reproduce_xiao
from dplens.core.papers.zhao import reproduce_zhao, zhao_readings


def paper_readings(name: str) -> tuple[Reading, ...]:
    """Claim / literal / corrected for one paper without running its experiment (Xiao's readings need its
    Table 2 run and max query at the reproduction's full default size, ~2 s, so they match the CLI's; only the
    2-D and parity experiments, which no reading uses, are cut down).

    >>> paper_readings("wda")[0].corrected
    '4.9158 (Δ(W2) = 2; > 4: it hurts)'
    """
    static = {"wda": wda_readings, "om": om_readings, "om-times": om_times_readings, "sreb-gca": sreb_readings,
              "zhao": zhao_readings}
    if name in static:
        return static[name]()
    if name == "xiao":
        return reproduce_xiao(queries_2d=100, versions_2d=2, parity_repetitions=11).readings
    raise ValueError(f"paper must be one of {', '.join([*static, 'xiao'])}, got {name!r}")




REPRODUCTIONS: dict[str, Callable[..., Reproduction]] = {
    "wda": reproduce_wda,
    "om": reproduce_om,
    "om-times": reproduce_om_times,
    "sreb-gca": reproduce_sreb_gca,
    "xiao": reproduce_xiao,
    "zhao": reproduce_zhao,
}



def parse_epsilons(text: str) -> tuple[float, ...]:
    """A comma-separated list of ε values, each finite and > 0.

    >>> parse_epsilons("1, 0.1")
    (1.0, 0.1)
    """
    try:
        values = tuple(float(part) for part in str(text).split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--epsilons must be comma-separated numbers > 0, got {text!r}") from None
    return check_epsilons(values, "--epsilons")


def run_reproduction(name: str, *, data: str | Histogram | None = None, epsilons: str | tuple | None = None,
                     trials: int | None = None, seed: int = 0) -> Reproduction:
    """Run one reproduction with the options the CLI and the page share (only those given are passed)."""
    if name not in REPRODUCTIONS:
        raise ValueError(f"reproduction must be one of {', '.join(REPRODUCTIONS)}, got {name!r}")
    options: dict[str, object] = {"seed": seed}
    if data:
        options["data"] = data
    if epsilons:
        options["epsilons"] = parse_epsilons(epsilons) if isinstance(epsilons, str) else check_epsilons(epsilons)
    if trials is not None:
        options["trials"] = check_runs(trials)
    return REPRODUCTIONS[name](**options)


def run_reproduce_command(args) -> int:
    """CLI handler: run one reproduction, write its files, print the verdicts and findings."""
    start = time.perf_counter()
    reproduction = run_reproduction(args.name, data=getattr(args, "data", None),
                                    epsilons=getattr(args, "epsilons", None), trials=getattr(args, "trials", None),
                                    seed=args.seed)
    paths = write(reproduction, args.output)
    print(reproduction.title)
    print(f"data: {reproduction.data}")
    print(f"claims and verdicts (also in {Path(args.output) / (reproduction.name + '-verdicts.csv')}: claim, paper, "
          "literal reading, corrected, interval, verdict):")
    for row in reproduction.verdicts:
        print(f"  {row.line()}")
    print("findings:")
    for finding in reproduction.findings:
        print(f"  {finding}")
    if reproduction.not_reproduced:
        print(f"not reproduced: {reproduction.not_reproduced}")
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - start:.1f} s")
    return 0
