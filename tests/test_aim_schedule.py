"""AIM's fitting schedule (McKenna et al. 2022, Alg. 1; docs/tables.md): the first fit and the final fit at
``iters``, every round's refit at ``round_iters``, warm-started; the final fit comes after the rounds, on every
measurement, and is released.

Counts the mirror-descent calls (private-pgm's algorithm, in NumPy: dplens.core.tables.mirror_descent) on a
two-attribute table (seconds); nothing is timed."""

from __future__ import annotations

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.queries.marginals import MarginalWorkload


@pytest.fixture
def fits(monkeypatch):
    """Every mirror-descent call of a run: (iterations, warm-started, measurements fitted)."""
    pytest.importorskip("mbi")
    from dplens.core.tables import mirror_descent as estimation
    calls: list[tuple[int, bool, int]] = []
    original = estimation.mirror_descent

    def counted(domain, loss_fn, *, potentials=None, iters=1000, **kwargs):
        calls.append((iters, potentials is not None, len(loss_fn)))
        return original(domain, loss_fn, potentials=potentials, iters=iters, **kwargs)

    monkeypatch.setattr(estimation, "mirror_descent", counted)
    return calls


def test_aim_fits_each_round_then_once_more_at_the_end(fits):
    from dplens.core.tables.synthesis import AIM

    domain = Domain(("a", "b"), (2, 3))
    records = np.random.default_rng(0).integers(0, domain.sizes, size=(300, 2))
    records[:, 1] = records[:, 0]
    seen: list[float] = []
    release = AIM(rounds=4, round_iters=3, iters=7, max_size=1.0).run(
        records, MarginalWorkload.all_kway(domain, 2), 2.0, np.random.default_rng(1), progress=seen.append)
    assert len(fits) >= 3 and release.params["model_fits"] == len(fits)
    first, *rounds, final = fits
    assert first[:2] == (7, False)  # the 1-way marginals, cold
    assert rounds and all(r[:2] == (3, True) for r in rounds)  # each round's refit, warm-started
    assert final[:2] == (7, True)  # the final fit, warm-started from the last round's model
    assert final[2] == rounds[-1][2]  # on every measurement: the rounds are over, nothing new was measured
    assert seen and all(a <= b for a, b in zip(seen, seen[1:], strict=False)) and seen[-1] < 1  # never backwards


def test_defaults_follow_the_authors_schedule():
    from dplens.core.tables.synthesis import AIM, ESTIMATOR_ITERS

    aim = AIM()
    assert aim.round_iters == aim.iters == ESTIMATOR_ITERS == 1000
    assert aim.fit_iters(None) == aim.fit_iters(object(), final=True) == 1000
    assert AIM(round_iters=300).fit_iters(object()) == 300
