"""dplens.core.release.config: session config round trips and strict, specific validation."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import dplens.core.queries.workloads
from dplens.core.mechanisms import MECHANISMS
from dplens.core.queries.workloads import Explicit, Kron, Prefix, Ranges, Stack, dense, parse_workload
from dplens.core.release.config import (
    MAX_RECIPE_NUMBERS,
    ReleaseSettings,
    SessionConfig,
    build_recipe,
    check_recipe,
    config_to_json,
    parse_config,
    recipe_of,
)

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


RECIPE_CASES = {
    "drawn range": (Ranges(6, [1], [4], label="drawn range"), (6,)),
    "uploaded matrix": (Explicit(np.array([[1.0, 0, 2.5, 0], [0, 0, 0, -1]]), label="file"), (4,)),
    "sparse matrix": (Explicit(sp.csr_matrix(np.eye(5)[:3]), label="file"), (5,)),
    "drawn rectangle": (Kron((Ranges(3, [0], [1]), Ranges(4, [2], [3]))), (3, 4)),
    "stack": (Stack((Explicit(np.ones((1, 6))), Ranges(6, [0, 2], [5, 3]))), (6,)),
}


@pytest.mark.parametrize("case", RECIPE_CASES, ids=RECIPE_CASES)
def test_custom_workload_recipes_rebuild_the_same_matrix_through_a_config(case):
    workload, shape = RECIPE_CASES[case]
    config = dataclasses.replace(BASE, workload=f"custom:1:{case}", custom_workload=recipe_of(workload))
    reloaded = parse_config(config_to_json(config))
    assert reloaded == config
    np.testing.assert_array_equal(dense(build_recipe(reloaded.custom_workload, shape)), dense(workload))


def test_a_stack_recipe_keeps_registry_specs_as_specs():
    recipe = check_recipe({"stack": [{"spec": "prefix"}, recipe_of(Ranges(8, [3], [3]))]})
    built = build_recipe(recipe, (8,))
    np.testing.assert_array_equal(dense(built), np.vstack([dense(Prefix(8)), np.eye(8)[3]]))


def test_the_recipe_size_bound_is_named():
    within = Explicit(np.ones((1, MAX_RECIPE_NUMBERS // 3)))
    assert check_recipe(recipe_of(within))
    with pytest.raises(ValueError, match=f"needs {MAX_RECIPE_NUMBERS + 3:,} numbers.*MAX_RECIPE_NUMBERS="):
        recipe_of(Explicit(np.ones((1, MAX_RECIPE_NUMBERS // 3 + 1))))
    many_ranges = {"ranges": [[0, 0]] * (MAX_RECIPE_NUMBERS // 2 + 1), "n": 1}
    with pytest.raises(ValueError, match="MAX_RECIPE_NUMBERS"):
        parse_config(doc(workload="custom:1:x", custom_workload=many_ranges))


@pytest.mark.parametrize(("recipe", "message"), [
    ([1], "config 'custom_workload' must be an object with one of"),
    ({"spec": "prefix", "ranges": [[0, 1]]}, "must be an object with one of"),
    ({"spec": "prefix", "n": 3}, "must be an object with one of"),
    ({"spec": "custom:1:x"}, "config 'custom_workload.spec' must be a registry workload spec"),
    ({"stack": []}, "config 'custom_workload.stack' must be a list of one or more recipes"),
    ({"kron": [{"spec": "total"}]}, "config 'custom_workload.kron' must be a list of two recipes"),
    ({"stack": [{"spec": "total", "label": 3}]}, "config 'custom_workload.stack\\[0\\].label' must be text"),
    ({"ranges": [[3, 1]], "n": 5}, "needs lo <= hi, got \\[3, 1\\]"),
    ({"ranges": [[0, 5]], "n": 5}, "'custom_workload.ranges' must be an integer in \\[0, 4\\], got 5"),
    ({"ranges": [[0, 1]]}, "'custom_workload.n' must be an integer"),
    ({"matrix": {"shape": [2, 3], "entries": [[2, 0, 1.0]]}}, "entries row' must be an integer in \\[0, 1\\]"),
    ({"matrix": {"shape": [2, 3], "entries": [[0, 0, "x"]]}}, "values must be finite numbers, got 'x'"),
    ({"matrix": {"shape": [2], "entries": []}}, "must be {'shape': \\[m, n\\]"),
])
def test_invalid_recipes_raise_one_specific_value_error(recipe, message):
    with pytest.raises(ValueError, match=message):
        parse_config(doc(workload="custom:1:x", custom_workload=recipe))


def test_a_recipe_for_another_domain_size_is_refused_when_built():
    with pytest.raises(ValueError, match="made for 6 cells; this dataset has 4"):
        build_recipe(recipe_of(Ranges(6, [0], [1])), (4,))
    with pytest.raises(ValueError, match="a Prefix workload has no config recipe"):
        recipe_of(parse_workload("prefix", (4,)))


@pytest.mark.parametrize("field", ["workload", "custom_workload"])
@pytest.mark.parametrize("spec", ["file:{path}", " FILE : {path}"])
def test_a_file_spec_is_refused_without_reading_the_file(tmp_path, monkeypatch, field, spec):
    secret = tmp_path / "secret.csv"
    secret.write_text("1,1,1\nTOP-SECRET\n")
    def never(*args, **kwargs):
        raise AssertionError("a config must never make the server read a file")

    monkeypatch.setattr(dplens.core.queries.workloads, "explicit_from_csv", never)
    monkeypatch.setattr(Path, "read_text", never)
    monkeypatch.setattr(Path, "read_bytes", never)
    spec = spec.format(path=secret)
    text = doc(**({"workload": spec} if field == "workload" else
                  {"workload": "custom:1:x", "custom_workload": {"stack": [{"spec": "prefix"}, {"spec": spec}]}}))
    with pytest.raises(ValueError, match="names a server file .* refused: query files come only from uploads") as err:
        parse_config(text)
    assert "TOP-SECRET" not in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("dataset", ["dpbench:../../etc/passwd", "sample:a/b", "upload:..\\x"])
def test_a_dataset_reference_never_names_a_path(dataset):
    with pytest.raises(ValueError, match="no path in the name"):
        parse_config(doc(dataset=dataset))
