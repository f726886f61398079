"""Generate dplens's sample histograms into data/ (run: python data/make_samples.py).

Every dataset is synthetic and seeded, except tips-bill, which bins plotly's bundled `tips` dataset.
Shapes mimic the DPBench benchmarks: smooth (INCOME), sparse/spiky (NETTRACE), heavy-tailed
(SEARCHLOGS), dense (PATENT), and a 2-D grid.
"""

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def write_1d(name: str, counts: np.ndarray) -> None:
    lines = ["bin,count"] + [f"{i},{int(c)}" for i, c in enumerate(counts)]
    (HERE / name).write_text("\n".join(lines) + "\n")


def main() -> None:
    rng = np.random.default_rng(20261121)
    n = 4096
    grid = np.arange(n)

    # smooth: mixture of four bumps, 100,000 records
    shape = sum(w * np.exp(-0.5 * ((grid - mu) / sd) ** 2)
                for w, mu, sd in ((1.0, 700, 250), (0.6, 1800, 400), (0.3, 2900, 200), (0.2, 3600, 150)))
    write_1d("smooth.csv", rng.multinomial(100_000, shape / shape.sum()))

    # spiky: 95 % zeros, a few hundred occupied bins with heavy spikes (like NETTRACE)
    spiky = np.zeros(n)
    occupied = rng.choice(n, size=200, replace=False)
    spiky[occupied] = np.ceil(rng.pareto(1.2, size=200) * 5)
    write_1d("spiky.csv", spiky)

    # heavy-tail: Zipf-like decay over a random permutation of a coarse ordering (like SEARCHLOGS)
    ranks = np.arange(1, n + 1)
    zipf = 200_000 / ranks**1.1
    order = np.argsort(rng.normal(size=n) + np.linspace(0, 6, n))
    write_1d("heavy_tail.csv", rng.poisson(zipf[np.argsort(order)]))

    # dense: 512 bins, every bin occupied
    write_1d("dense.csv", rng.poisson(800 + 400 * np.sin(np.linspace(0, 6 * np.pi, 512))) + 1)

    # grid-2d: two Gaussian blobs on 64 × 64
    r, c = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    blobs = np.exp(-((r - 20) ** 2 + (c - 22) ** 2) / 60) + 0.5 * np.exp(-((r - 45) ** 2 + (c - 40) ** 2) / 150)
    counts2d = rng.multinomial(50_000, (blobs / blobs.sum()).ravel()).reshape(64, 64)
    rows = ["row,col,count"] + [f"{i},{j},{counts2d[i, j]}" for i in range(64) for j in range(64)]
    (HERE / "grid_2d.csv").write_text("\n".join(rows) + "\n")

    # tips-bill: plotly's bundled tips dataset (real, 244 bills), $1 bins from $0 to $51
    import plotly.data

    bills = plotly.data.tips()["total_bill"].to_numpy()
    counts, edges = np.histogram(bills, bins=np.arange(0, 52))
    lines = ["label,count"] + [f"${a}-{b},{c}" for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True)]
    (HERE / "tips_bill.csv").write_text("\n".join(lines) + "\n")
    write_survey(np.random.default_rng(20261125))


SURVEY_LEVELS = {
    "age": ["17-24", "25-34", "35-44", "45-54", "55-64", "65+"],
    "sex": ["F", "M"],
    "education": ["primary", "secondary", "vocational", "bachelor", "master+"],
    "hours": ["<20", "20-34", "35-44", "45-59", "60+"],
    "region": ["north", "south", "east", "west"],
    "income": ["<=50K", ">50K"],
}


def write_survey(rng: np.random.Generator, count: int = 6000) -> None:
    """survey.csv + survey-domain.json: a synthetic table of records with Adult-like correlations.

    Education and age drive income; age and sex drive hours; region is nearly independent. The sample gives the
    Tables page a default whose 2-way marginals differ from the product of its 1-way marginals.
    """
    age = rng.choice(6, size=count, p=[0.14, 0.22, 0.22, 0.19, 0.14, 0.09])
    sex = rng.choice(2, size=count, p=[0.48, 0.52])
    education = np.clip(rng.binomial(4, 0.35 + 0.04 * np.minimum(age, 3)), 0, 4)
    hours_mean = 2.0 + 0.5 * sex - 0.7 * (age == 0) - 1.2 * (age == 5)
    hours = np.clip(np.rint(rng.normal(hours_mean, 0.8)), 0, 4).astype(int)
    region = rng.choice(4, size=count, p=[0.3, 0.25, 0.25, 0.2])
    logit = -3.2 + 0.65 * education + 0.35 * np.minimum(age, 3) + 0.4 * sex + 0.3 * (hours >= 3)
    income = (rng.random(count) < 1 / (1 + np.exp(-logit))).astype(int)
    codes = np.column_stack([age, sex, education, hours, region, income])
    names = list(SURVEY_LEVELS)
    lines = [",".join(names)] + [",".join(SURVEY_LEVELS[n][c] for n, c in zip(names, row, strict=True)) for row in codes]
    (HERE / "survey.csv").write_text("\n".join(lines) + "\n")
    (HERE / "survey-domain.json").write_text(json.dumps(SURVEY_LEVELS, indent=1) + "\n")


if __name__ == "__main__":
    main()
