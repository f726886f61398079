"""core.config: session config round trips and strict, specific validation."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.config import ReleaseSettings, SessionConfig, config_to_json, parse_config
from core.mechanisms import MECHANISMS

BASE = SessionConfig(dataset="sample:smooth", workload="random-range:m=2000,seed=0",
                     mechanisms=("identity", "hb"), epsilons=(0.01, 0.1, 1.0), seed=7, total_epsilon=5.0,
                     release=ReleaseSettings("hb", (("branching", "4"),), 0.5, "exploration"))


def doc(**changes) -> str:
    base = json.loads(config_to_json(BASE))
    base.update(changes)
    return json.dumps(base)


@given(dataset=st.sampled_from(["sample:smooth", "dpbench:adult", "upload:ab12::"]),
       workload=st.one_of(st.none(), st.sampled_from(["prefix", "identity", "random-range:m=5"])),
       mechanisms=st.lists(st.sampled_from(sorted(MECHANISMS)), max_size=4).map(tuple),
       epsilons=st.lists(st.floats(1e-6, 1e6), min_size=1, max_size=12).map(tuple),
       seed=st.integers(0, 2**31 - 1), total=st.floats(1e-3, 1e3),
       release_epsilon=st.floats(1e-3, 10), path=st.sampled_from(["secure", "exploration"]))
def test_round_trip(dataset, workload, mechanisms, epsilons, seed, total, release_epsilon, path):
    config = SessionConfig(dataset, workload, mechanisms, epsilons, seed, total,
                           ReleaseSettings("identity", (), release_epsilon, path))
    assert parse_config(config_to_json(config)) == config
    assert parse_config(config_to_json(config).encode()) == config


def test_export_carries_format_and_version_and_no_data():
    exported = json.loads(config_to_json(BASE))
    assert exported["format"] == "dplens-session" and exported["version"]
    assert exported["release"]["params"] == {"branching": "4"}
    assert not {"counts", "ledger", "spends"} & set(exported)


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "config is not valid JSON"),
    ("[1, 2]", "not a dplens session config: 'format' must be 'dplens-session', got 'list'"),
    (doc(format="x"), "'format' must be 'dplens-session', got 'x'"),
    (doc(dataset="smooth"), "config 'dataset' must look like kind:name"),
    (doc(dataset="web:http://x"), "config 'dataset' must look like kind:name"),
    (doc(workload=""), "config 'workload' must be a workload spec or null"),
    (doc(mechanisms="identity"), "config 'mechanisms' must be a list of names"),
    (doc(mechanisms=["nope"]), "config 'mechanisms' names unknown mechanism 'nope'"),
    (doc(epsilons=[1.0, 0]), "config 'epsilons' must be a finite number > 0, got 0"),
    (doc(epsilons=[True]), "config 'epsilons' must be a finite number > 0, got True"),
    (doc(seed=True), "config 'seed' must be an integer"),
    (doc(seed=-1), "config 'seed' must be an integer in \\[0, 2147483647\\], got -1"),
    (doc(seed=1.5), "config 'seed' must be an integer"),
    (doc(total_epsilon=None), "config 'total_epsilon' must be a finite number > 0, got None"),
    (doc(release=[]), "config 'release' must be an object"),
    (doc(release={"mechanism": "zzz"}), "config 'release.mechanism' names unknown mechanism 'zzz'"),
    (doc(release={"noise_path": "fast"}), "'release.noise_path' must be 'secure' or 'exploration', got 'fast'"),
    (doc(release={"epsilon": -1}), "config 'release.epsilon' must be a finite number > 0, got -1"),
    (doc(release={"params": [1]}), "config 'release.params' must be an object"),
])
def test_invalid_configs_raise_one_specific_value_error(text, message):
    with pytest.raises(ValueError, match=message):
        parse_config(text)


def test_missing_field_is_named():
    base = json.loads(config_to_json(BASE))
    del base["seed"]
    with pytest.raises(ValueError, match="config is missing 'seed'"):
        parse_config(json.dumps(base))


def test_release_section_defaults_to_the_secure_path():
    base = json.loads(config_to_json(BASE))
    del base["release"]
    assert parse_config(json.dumps(base)).release == ReleaseSettings()
    assert ReleaseSettings().noise_path == "secure"
