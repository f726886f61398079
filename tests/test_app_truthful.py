"""AppTest: every screen says what its values are (true, a DP proxy's, public, released) and speaks in words."""

import re

from streamlit.testing.v1 import AppTest

from tests.test_app import APP
from tests.test_app_tuning import _run_compare


def _chart_specs(at) -> list[str]:
    return [chart.proto.spec for chart in at.get("plotly_chart")]


def _proxy_of_spiky(page: str) -> AppTest:
    """``page`` on the mostly-zero sample (95 % zeros), tuned on a DP proxy made at ε = 0.1 (noise scale 10)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["dataset_key"] = "sample:spiky"
    at.run()
    at.switch_page(page).run()
    at.session_state["tuning_proxy_epsilon"] = 0.1
    prefix = "choose" if page.endswith("choose_epsilon.py") else "compare"
    at.button(key=f"{prefix}_make_proxy").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key=f"{prefix}_tuning").value.startswith("proxy:")
    return at


def test_choose_epsilon_calls_a_proxy_bin_a_proxy_count_and_warns_that_its_rankings_may_mislead():
    at = _proxy_of_spiky("pages/choose_epsilon.py")
    warnings = [w.value for w in at.warning]
    assert any("Rankings on this DP proxy may mislead" in w and "median bin" in w for w in warnings), warnings
    captions = [c.value for c in at.caption if c.value.startswith("Bin **")]
    assert captions and re.search(r"DP proxy count \d", captions[0]), captions
    assert not re.search(r"true count \d", captions[0]), captions
    assert not any("true value" in spec for spec in _chart_specs(at))  # the risk tab's marker line
    assert any("DP proxy count" in spec for spec in _chart_specs(at))


def test_compare_on_a_proxy_never_calls_its_values_true_counts():
    at = _proxy_of_spiky("pages/compare.py")
    _run_compare(at)
    specs = _chart_specs(at)
    assert not any("true counts" in spec for spec in specs)
    assert any(re.search(r'"name": ?"DP proxy counts"', spec) for spec in specs)


def test_a_public_dataset_of_the_same_shape_is_called_public_not_true():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/choose_epsilon.py").run()
    at.selectbox(key="choose_tuning").set_value("sample:spiky").run()
    captions = [c.value for c in at.caption if c.value.startswith("Bin **")]
    assert captions and "public count" in captions[0], captions
