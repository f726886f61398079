"""One Domain serves histograms and tables: its checks, project, and where each bound applies."""

from __future__ import annotations

import numpy as np
import pytest

from dplens.core.data import domain as domain_module
from dplens.core.data.domain import Domain, Histogram
from dplens.core.data.limits import MAX_CELLS, MAX_LEVELS
from dplens.core.queries import marginals
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.records import Table, load_table


def test_a_histograms_domain_is_a_table_domain():
    histogram = Histogram.from_counts(np.arange(6.0).reshape(2, 3), axis_names=("sex", "age"))
    assert type(histogram.domain) is Domain and marginals.Domain is domain_module.Domain
    assert not hasattr(marginals, "TableDomain")
    workload = MarginalWorkload(histogram.domain, (("age",),))  # a marginal of the histogram, as of a table
    records = np.array([[0, 2], [1, 2], [1, 0]])
    assert workload.answer(records)[0].tolist() == [1.0, 0.0, 2.0]
    assert histogram.domain.to_json() == '{"sex": 2, "age": 3}'


def test_project_keeps_the_given_order_and_sizes():
    domain = Domain(("age", "sex", "income"), (85, 2, 3))
    assert domain.project(("income", "age")) == Domain(("income", "age"), (3, 85))
    assert domain.project(("sex",)).size == 2
    assert domain.sizes_of(("income", "age")) == (85, 3)  # sizes_of keeps the domain's order
    with pytest.raises(ValueError, match=r"names \['zz'\], not attributes of this table"):
        domain.project(("age", "zz"))
    with pytest.raises(ValueError, match="repeats an attribute"):
        domain.project(("age", "age"))


def test_domain_is_frozen_hashable_and_normalised():
    domain = Domain(["a", "b"], [np.int64(2), 3])
    assert domain.names == ("a", "b") and domain.sizes == (2, 3) and type(domain.sizes[0]) is int
    assert hash(domain) == hash(Domain(("a", "b"), (2, 3))) and domain.shape == (2, 3)
    with pytest.raises(AttributeError):
        domain.sizes = (4, 4)


@pytest.mark.parametrize(("names", "sizes", "message"), [
    (("a", "b"), (2,), "a domain needs one size per attribute, got 2 names and 1 sizes"),
    ((), (), "a domain needs at least one attribute"),
    (("a", "a"), (2, 2), "attribute names must be unique, got ['a', 'a']"),
    (("a", "b"), (2, 0), "attribute 'b' has 0 levels; the rule is an integer from 1 to 4194304"),
    (("a",), (2.5,), "attribute 'a' has 2.5 levels; the rule is an integer from 1 to 4194304"),
    (("a",), (True,), "attribute 'a' has True levels; the rule is an integer from 1 to 4194304"),
    (("x",), (MAX_CELLS + 1,), f"attribute 'x' has {MAX_CELLS + 1} levels; the rule is an integer from 1 to "
                               f"{MAX_CELLS}"),
])
def test_checks_name_the_parameter_value_and_rule(names, sizes, message):
    with pytest.raises(ValueError) as error:
        Domain(names, sizes)
    assert str(error.value) == message


def test_histogram_rules_live_on_the_histogram():
    cube = Domain(("a", "b", "c"), (2, 2, 2))  # a fine table domain, not a histogram's
    with pytest.raises(ValueError, match="Domain must be 1-D or 2-D, got 3 axes"):
        Histogram(cube, np.zeros((2, 2, 2)))
    wide = Domain(("row", "col"), (4096, 1025))
    with pytest.raises(ValueError, match=rf"Domain has {4096 * 1025} cells; the limit is {MAX_CELLS} \(2\^22\)"):
        Histogram(wide, np.zeros((1, 1)))


def test_a_one_dimensional_histogram_of_max_cells_bins_is_allowed():
    histogram = Histogram.from_counts(np.zeros(MAX_CELLS, dtype=np.uint8))
    assert histogram.domain.sizes == (MAX_CELLS,) and MAX_CELLS > MAX_LEVELS


def test_a_table_attribute_over_max_levels_is_refused_where_a_table_is_read():
    too_many = MAX_LEVELS + 1
    rule = f"attribute 'b' has {too_many} levels; the rule is an integer from 1 to {MAX_LEVELS}"
    assert Domain(("a", "b"), (2, too_many)).size == 2 * too_many  # the domain itself allows it (a histogram's axis)
    with pytest.raises(ValueError) as error:
        Domain.from_json(f'{{"a": 2, "b": {too_many}}}')
    assert str(error.value) == rule
    with pytest.raises(ValueError) as error:
        Table(Domain(("a", "b"), (2, too_many)), np.zeros((0, 2), dtype=np.int64))
    assert str(error.value) == rule
    with pytest.raises(ValueError, match=f"the rule is a size from 1 to {MAX_LEVELS}"):
        load_table(b"a,b\n0,1\n", f'{{"a": 2, "b": {too_many}}}'.encode())
    with pytest.raises(ValueError, match=f"the rule is at most {MAX_LEVELS} levels"):
        load_table(f"a,b\n0,{MAX_LEVELS}\n1,0\n".encode())
