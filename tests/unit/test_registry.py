"""The registry: discovery, lookup, and the parameter documentation every family must carry."""

import pytest

from accountants import registry
from accountants.errors import UnknownAlgorithmError
from accountants.plan_accounting import ACCOUNTANT_NAMES
from app.schemas import AlgorithmDetail

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
    schema = AlgorithmDetail.from_family(family).parameters
    for name, prop in schema["properties"].items():
        assert prop.get("description"), name
        assert prop.get("examples"), name
        for option in prop.get("anyOf", [prop]):
            assert not NON_STANDARD_KEYWORDS & option.keys(), (name, option)


@pytest.mark.parametrize("family", registry.families(), ids=lambda f: f.id)
def test_describe_lists_accountants_and_bounds(family):
    description = AlgorithmDetail.from_family(family).model_dump()
    assert description["accountants"][0] == "best"
    assert set(description["accountants"]) <= set(ACCOUNTANT_NAMES)
    assert description["bounds"] and all(b["source"] for b in description["bounds"])


@pytest.mark.parametrize("family", registry.families(), ids=lambda f: f.id)
def test_calibration_ignores_the_knob_given_in_params_and_says_so(family):
    """Written once in AlgorithmFamily.calibrate: the knob fields are removed before the family sees them."""
    accountant = "rdp" if "rdp" in family.supported_accountants() else "best"
    target = 2.0
    without = family.calibrate(family.calibration_example(), target, 1e-6, accountant)
    given = [name for name in family.noise_fields if name in family.example]
    assert given, family.example
    with_knob = family.calibrate(dict(family.example), target, 1e-6, accountant)
    assert with_knob.calibrated_value == without.calibrated_value and with_knob.epsilon == without.epsilon
    names = " and ".join(given)
    assert with_knob.warnings[0].startswith(f"the {names} given in params was ignored: calibration computes")
    assert with_knob.warnings[1:] == without.warnings
    assert not any("given in params was ignored" in w for w in without.warnings)


def test_best_never_chooses_a_paper_statement_that_is_not_certified():
    """One chooser for every family: the guarantee is data (reports.Guarantee), not a sentence to compare."""
    from accountants.errors import UnsupportedAccountantError
    from accountants.reports import AccountantResult, Guarantee, choose_accountant

    rdp = AccountantResult("rdp", True, 2.0, "certified upper bound")
    printed = AccountantResult("paper", True, 0.5, "as printed", kind=Guarantee.PAPER_AS_PRINTED)
    valid = AccountantResult("paper", True, 0.5, "confirmed", kind=Guarantee.PAPER_VALID)
    assert choose_accountant([rdp, printed], "best") is rdp
    assert choose_accountant([rdp, valid], "best") is valid
    assert choose_accountant([rdp, printed], "paper") is printed  # asked for by name, it is answered
    with pytest.raises(UnsupportedAccountantError, match=r"no certified accountant applies.*paper: not certified"):
        choose_accountant([AccountantResult("rdp", False, reason="none"), printed], "best")


def test_the_registry_is_an_attribute_of_the_library():
    """``import accountants; accountants.registry.get(...)`` as the library's docstring says (it was an
    AttributeError until something imported the submodule)."""
    import subprocess
    import sys

    code = "import accountants; print(accountants.registry.get('dp-sgd').id)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "dp-sgd", run.stderr


def test_every_familys_relation_is_a_value_a_request_can_send_back():
    """conventions.neighbouring holds only the relation (phased output perturbation's was "replace-one (Def. 1)", so
    a client could not feed it to /v1/compose and the statement could not explain it)."""
    from accountants import registry

    for family in registry.families():
        answer = family.privacy(family.example, 1e-5, statement=True)
        relations = ("add-remove", "replace-one", *(("zero-out",) if family.id == "dp-mf" else ()))
        assert answer.conventions.neighbouring in relations, family.id
        assert answer.statement is not None and "two datasets are neighbours when" in answer.statement, family.id
