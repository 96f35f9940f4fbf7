"""The registry: discovery, lookup, and the parameter documentation every family must carry."""

import pytest

from accountants import registry
from accountants.errors import UnknownAlgorithmError

NON_STANDARD_KEYWORDS = {"ge", "gt", "le", "lt", "multiple_of"}


def test_dp_sgd_is_registered():
    assert "dp-sgd" in registry.ids()
    assert registry.get("dp-sgd").id == "dp-sgd"


def test_unknown_algorithm_lists_valid_ids():
    with pytest.raises(UnknownAlgorithmError) as info:
        registry.get("dp-adam")
    assert "dp-sgd" in str(info.value)
    assert "dp-sgd" in info.value.known


@pytest.mark.parametrize("family", registry.families(), ids=lambda f: f.id)
def test_every_parameter_is_documented(family):
    schema = family.describe()["parameters"]
    for name, prop in schema["properties"].items():
        assert prop.get("description"), name
        assert prop.get("examples"), name
        for option in prop.get("anyOf", [prop]):
            assert not NON_STANDARD_KEYWORDS & option.keys(), (name, option)


@pytest.mark.parametrize("family", registry.families(), ids=lambda f: f.id)
def test_describe_lists_accountants_and_bounds(family):
    description = family.describe()
    assert description["accountants"][0] == "best"
    assert set(description["accountants"]) <= set(registry.ACCOUNTANT_NAMES)
    assert description["bounds"] and all(b["source"] for b in description["bounds"])
