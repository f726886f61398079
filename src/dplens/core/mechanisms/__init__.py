"""The MECHANISMS registry, with the mechanism contract (``dplens.core.mechanisms.contract``: ``Release``,
``Mechanism``, the shared checks and accounting helpers) re-exported beside it (see docs/architecture.md).

A mechanism is a frozen dataclass that holds only its own settings. Data, workload, epsilon and the
noise source are arguments to ``run``:

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> release = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Prefix(3), 1.0, np.random.default_rng(0))
>>> release.answers.shape, release.privacy_loss <= release.epsilon
((3,), True)

Randomness: mechanisms draw noise only through ``rng.laplace(scale=..., size=...)``, uniform draws
through ``rng.random``/``rng.integers``/``rng.permutation``, and selections through
``exponential_mechanism`` (in the contract), so that the noise source can be a seeded ``np.random.Generator``
(exploration) or a secure sampler with the same methods (exports).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from dplens.core.catalogue import add, view
from dplens.core.mechanisms.ahp import AHP
from dplens.core.mechanisms.contract import (  # re-exported: the contract beside the registry
    NEIGHBOURING,
    Mechanism,
    Range,
    Release,
    answers_from_estimate,
    check_budget_epsilon,
    check_epsilon,
    check_inputs,
    check_parameters,
    check_ratio,
    configure,
    exponential_mechanism,
    grid_shape,
    laplace_privacy_loss,
    parameter_ranges,
)
from dplens.core.mechanisms.dawa import DAWA
from dplens.core.mechanisms.gaussian import GaussianEigenDesign
from dplens.core.mechanisms.greedy_h import GreedyH
from dplens.core.mechanisms.grids import AdaptiveGrid, UniformGrid
from dplens.core.mechanisms.hierarchical import Hierarchical
from dplens.core.mechanisms.laplace import LaplaceIdentity, LaplaceOnAnswers, Uniform
from dplens.core.mechanisms.lrm import LRM
from dplens.core.mechanisms.matrix import MatrixMechanism
from dplens.core.mechanisms.mwem import MWEM
from dplens.core.mechanisms.om import OM
from dplens.core.mechanisms.privelet import Privelet
from dplens.core.mechanisms.sreb_gca import SrebGca
from dplens.core.mechanisms.wda import WDA
from dplens.core.mechanisms.xiao import CellRelease

# The built-in histogram mechanisms, stored in the one catalogue in the order the pickers list them.
for _builtin in (
    LaplaceIdentity(),
    LaplaceOnAnswers(),
    Uniform(),
    WDA(),
    OM(),
    SrebGca(),
    LaplaceIdentity(name="dp-base"),  # SReB_GCA's baseline: Identity under the paper's name (Chen et al. 2024)
    CellRelease(),
    Hierarchical(),
    Privelet(),
    MatrixMechanism(),
    LRM(),
    UniformGrid(),
    AdaptiveGrid(),
    GreedyH(),
    DAWA(),
    MWEM(),
    AHP(),
    # Gaussian noise: configurations of the plans above (the noise is a setting), calibrated to the (ε, δ) or ρ-zCDP
    # value they run at; and the eigen design, built for L2
    LaplaceIdentity(name="gaussian-identity", noise="gaussian"),
    LaplaceOnAnswers(name="gaussian-answers", noise="gaussian"),
    Hierarchical(name="gaussian-hb", noise="gaussian"),
    Privelet(name="gaussian-privelet", noise="gaussian"),
    GreedyH(name="gaussian-greedy-h", noise="gaussian"),
    GaussianEigenDesign(),
):
    add(_builtin, "histogram")
del _builtin
# Read-only and always current: dplens.core.registry.register adds to the same catalogue.
MECHANISMS: Mapping[str, Mechanism] = view("histogram")

# Registry aliases: other names under which a registered mechanism is known in a paper.
ALIASES: dict[str, str] = {"dp-base": "identity"}
# Former names of registered mechanisms, still accepted where a name is read (command line, session configs).
RENAMED: dict[str, str] = {"gaussian-mm-opt": "gaussian-eigen"}  # the eigen design is not mm-opt with Gaussian noise



def gaussian_twins() -> dict[str, str]:
    """Each registered Laplace plan whose strategy a registered configuration measures with Gaussian noise (the same
    plan, ``noise="gaussian"``), by name: plan → its Gaussian configuration. Read from the registry.

    >>> gaussian_twins()["hb"], "gaussian-eigen" in gaussian_twins().values()
    ('gaussian-hb', False)
    """
    twins: dict[str, str] = {}
    for twin in MECHANISMS.values():
        if getattr(twin, "noise", "laplace") != "gaussian" or "noise" not in _setting_names(twin):
            continue
        parent = next((m for m in MECHANISMS.values() if type(m) is type(twin) and m.noise == "laplace"  # type: ignore[attr-defined]
                       and m.name not in twins and m.name not in ALIASES), None)
        if parent is not None:
            twins[parent.name] = twin.name
    return twins


def _setting_names(mechanism: Mechanism) -> set[str]:
    return {f.name for f in dataclasses.fields(mechanism)} if dataclasses.is_dataclass(mechanism) else set()


__all__ = [
    "ALIASES", "MECHANISMS", "RENAMED", "gaussian_twins", "NEIGHBOURING", "Mechanism", "Range", "Release",
    "answers_from_estimate", "check_budget_epsilon", "check_epsilon", "check_inputs", "check_parameters",
    "check_ratio", "configure", "exponential_mechanism", "grid_shape", "laplace_privacy_loss",
    "parameter_ranges",
]
