"""Session configuration as JSON: what to reload to get the same session back (never the ledger's spends).

A config references the data (it never embeds counts), the workload spec, the mechanisms and ε grid
of a comparison, the seed, the total budget and the Release page's settings. ``parse_config`` is strict:
every problem is one ``ValueError`` naming the field, the value and the rule.

>>> cfg = SessionConfig(dataset="sample:smooth", workload="prefix", mechanisms=("identity",),
...                     epsilons=(0.1, 1.0), seed=3, total_epsilon=2.0)
>>> parse_config(config_to_json(cfg)) == cfg
True
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from core import __version__
from core.mechanisms import MECHANISMS

FORMAT = "dplens-session"
DATASET_KINDS = ("sample", "dpbench", "upload")
MAX_SEED = 2**31 - 1


@dataclass(frozen=True)
class ReleaseSettings:
    """The Release page's choices: mechanism, its parameters (as text), ε and the noise path."""

    mechanism: str = "identity"
    params: tuple[tuple[str, str], ...] = ()
    epsilon: float = 1.0
    noise_path: str = "secure"


@dataclass(frozen=True)
class SessionConfig:
    """Everything needed to rebuild a session's settings (see module docstring)."""

    dataset: str
    workload: str | None
    mechanisms: tuple[str, ...]
    epsilons: tuple[float, ...]
    seed: int
    total_epsilon: float
    release: ReleaseSettings = field(default_factory=ReleaseSettings)


def config_to_json(config: SessionConfig) -> str:
    """Serialise a config (with format tag and app version)."""
    doc = {"format": FORMAT, "version": __version__, **asdict(config)}
    doc["release"]["params"] = dict(config.release.params)
    return json.dumps(doc, indent=1, allow_nan=False)


def _require(doc: dict, key: str, kind: type, what: str):
    if key not in doc:
        raise ValueError(f"config is missing {key!r} ({what})")
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, kind):  # JSON true is not an integer seed
        raise ValueError(f"config {key!r} must be {what}, got {value!r}")
    return value


def _positive(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"config {key!r} must be a finite number > 0, got {value!r}")
    return float(value)


def _mechanism(key: str, name: object) -> str:
    if not isinstance(name, str) or name not in MECHANISMS:
        raise ValueError(f"config {key!r} names unknown mechanism {name!r}; known: {', '.join(MECHANISMS)}")
    return name


def parse_config(text: str | bytes) -> SessionConfig:
    """Parse and validate a config written by ``config_to_json``.

    >>> parse_config('{"format": "other"}')
    Traceback (most recent call last):
    ...
    ValueError: not a dplens session config: 'format' must be 'dplens-session', got 'other'
    """
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"config is not valid JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"not a dplens session config: 'format' must be {FORMAT!r}, got {got!r}")
    dataset = _require(doc, "dataset", str, "a dataset reference such as 'sample:smooth'")
    if dataset.partition(":")[0] not in DATASET_KINDS or not dataset.partition(":")[2]:
        raise ValueError(f"config 'dataset' must look like kind:name with kind in {DATASET_KINDS}, got {dataset!r}")
    workload = doc.get("workload")
    if workload is not None and not (isinstance(workload, str) and workload.strip()):
        raise ValueError(f"config 'workload' must be a workload spec or null, got {workload!r}")
    mechanisms = tuple(_mechanism("mechanisms", m) for m in _require(doc, "mechanisms", list, "a list of names"))
    epsilons = tuple(_positive("epsilons", e) for e in _require(doc, "epsilons", list, "a list of numbers"))
    seed = _require(doc, "seed", int, f"an integer in [0, {MAX_SEED}]")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"config 'seed' must be an integer in [0, {MAX_SEED}], got {seed!r}")
    total = _positive("total_epsilon", doc.get("total_epsilon"))
    rel = doc.get("release", {})
    if not isinstance(rel, dict):
        raise ValueError(f"config 'release' must be an object, got {rel!r}")
    params = rel.get("params", {})
    if not isinstance(params, dict):
        raise ValueError(f"config 'release.params' must be an object, got {params!r}")
    noise_path = rel.get("noise_path", "secure")
    if noise_path not in ("secure", "exploration"):
        raise ValueError(f"config 'release.noise_path' must be 'secure' or 'exploration', got {noise_path!r}")
    release = ReleaseSettings(mechanism=_mechanism("release.mechanism", rel.get("mechanism", "identity")),
                              params=tuple((str(k), str(v)) for k, v in params.items()),
                              epsilon=_positive("release.epsilon", rel.get("epsilon", 1.0)),
                              noise_path=noise_path)
    return SessionConfig(dataset=dataset, workload=workload, mechanisms=mechanisms, epsilons=epsilons,
                         seed=seed, total_epsilon=total, release=release)
