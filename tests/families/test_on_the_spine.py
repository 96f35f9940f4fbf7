"""A family on the spine (:class:`~accountants.planned.PlannedFamily`) answers exactly as a composition of its own
algorithm node: /v1/privacy equals /v1/compose, and /v1/calibrate equals /v1/compose/calibrate on the family's noise
pointer, for every plan accountant and several configurations (the same event tree through the same accountants,
so equal to the last digit, not within a tolerance). The numbers themselves are checked against independent sources
in each family's tests; this one checks that there is one engine."""

from __future__ import annotations

import pytest

from accountants import registry
from accountants.errors import ParameterError, UnsupportedAccountantError
from accountants.family import Cost, Operation
from accountants.pipeline import Composition, calibrate, privacy
from accountants.planned import PlannedFamily

from ..support.params import (
    BILEVEL_MINI_BATCH,
    BILEVEL_REFERENCE,
    LAST_ITERATE_FIG1,
    MIRROR_GAME,
    NSEG_BILINEAR,
    POP_TEST_VECTORS,
)
from .toy_family import registered

DELTA = 1e-6

DP_SGD = [
    {"dataset_size": 60000, "batch_size": 256, "epochs": 2, "noise_multiplier": 1.1},
    {"dataset_size": 1000, "batch_size": 1000, "steps": 50, "noise_multiplier": 3.0},  # full batch
    {"dataset_size": 5000, "batch_size": 50, "steps": 200, "noise_multiplier": 1.3, "neighbouring": "replace-one"},
    {"dataset_size": 5000, "batch_size": 50, "steps": 200, "noise_multiplier": 1.3, "sampling": "fixed-size",
     "neighbouring": "replace-one"},
    {"dataset_size": 2000, "batch_size": 100, "epochs": 3, "noise_multiplier": 2.0, "sampling": "shuffle"},
    {"dataset_size": 4000, "batch_size": 40, "steps": 100, "noise_std": 0.9},
]  # fmt: skip
DP_MF = [
    {"dataset_size": 10000, "batch_size": 100, "steps": 1000, "noise_multiplier": 1.0,
     "strategy": {"type": "toeplitz", "coefficients": [0.87, 0.44, 0.22, 0.11]}, "participation": "cyclic-poisson"},
    {"dataset_size": 1000, "batch_size": 100, "steps": 200, "noise_multiplier": 2.0, "strategy": {"type": "tree"}},
    {"dataset_size": 1000, "batch_size": 10, "steps": 100, "noise_multiplier": 1.5,
     "strategy": {"type": "tree", "completion": True}, "participation": "single-epoch", "neighbouring": "replace-one"},
    {"dataset_size": 6000, "batch_size": 60, "steps": 300, "noise_std": 2.0, "strategy": {"type": "identity"},
     "participation": "poisson"},
    {"dataset_size": 2000, "batch_size": 100, "steps": 60, "noise_multiplier": 0.9, "participation": "cyclic",
     "strategy": {"type": "matrix", "rows": [[1.0] * (t + 1) for t in range(60)]}, "min_separation": 7},
]  # fmt: skip
LAST_ITERATE = [
    LAST_ITERATE_FIG1 | {"steps": 1000, "weak_convexity": 0.0, "clipping": "inactive", "noise_multiplier": 1.0},
    LAST_ITERATE_FIG1 | {"steps": 10**4, "weak_convexity": 100.0, "noise_multiplier": 2.0},
    LAST_ITERATE_FIG1 | {"steps": 10**5, "weak_convexity": 1e3, "clipping": "inactive", "noise_multiplier": 0.7},
    LAST_ITERATE_FIG1 | {"steps": 10**5, "weak_convexity": 10.0, "constant": "proof", "noise_multiplier": 3.0},
    LAST_ITERATE_FIG1 | {"steps": 500, "weak_convexity": 1.0, "noise_std": 2e-5},
]
POP = [
    params | {"noise_multiplier": z}
    for params, z in zip(POP_TEST_VECTORS.values(), (4.0, 9.0, 2.5, 6.0, 12.0), strict=True)
]
MIRROR = [
    MIRROR_GAME | {"stepsize": 0.01},
    MIRROR_GAME | {"stepsize": 0.1, "steps": 50},
    MIRROR_GAME | {"variant": "first-order", "stepsize": 0.003},
    MIRROR_GAME | {"variant": "bias-reduced", "second_order_smoothness": 1.0, "stepsize": 0.02},
    {
        "variant": "sco",
        "dataset_size": 4000,
        "dimension_x": 16,
        "lipschitz": 1.0,
        "smoothness": 0.0,
        "batch_size": 20,
        "stepsize": 0.05,
    },
]
NOISY_VI = [
    ("nseg", NSEG_BILINEAR | {"dataset_size": 4000, "batch_size": 20, "noise_multiplier": 3.0}),
    ("nseg", NSEG_BILINEAR | {"dataset_size": 100, "batch_size": 1, "passes": "multi", "noise_multiplier": 5.0}),
    (
        "nseg",
        NSEG_BILINEAR
        | {
            "dataset_size": 500,
            "batch_size": 5,
            "passes": "multi",
            "sampling": "uniform",
            "steps": 300,
            "noise_std": 4.0,
        },
    ),
    ("nispp", NSEG_BILINEAR | {"dataset_size": 1600, "batch_size": 40, "noise_multiplier": 2.0}),
    ("nispp", NSEG_BILINEAR | {"dataset_size": 1600, "batch_size": 40, "passes": "multi", "noise_multiplier": 4.0}),
]
BILEVEL = [
    BILEVEL_REFERENCE | {"noise_multiplier": 40.0},
    BILEVEL_REFERENCE | {"steps": 100, "noise_multiplier": 80.0, "inner_noise_multiplier": 5000.0},
    BILEVEL_REFERENCE | BILEVEL_MINI_BATCH | {"steps": 20, "inner_steps": 200, "noise_multiplier": 5.0},
    BILEVEL_REFERENCE
    | BILEVEL_MINI_BATCH
    | {"steps": 10, "inner_steps": 100, "noise_multiplier": 3.0, "inner_noise_multiplier": 100.0},
    BILEVEL_REFERENCE | {"dataset_size": 10000, "steps": 5, "inner_steps": 50, "noise_multiplier": 10.0},
]
PAPER = {  # configurations where the family's own statement applies (its conditions hold), five per family
    "dp-bilevel": [
        BILEVEL_REFERENCE | {"noise_multiplier": 400.0},
        BILEVEL_REFERENCE | {"steps": 100, "noise_multiplier": 3000.0, "inner_noise_multiplier": 5e5},
        BILEVEL[2] | {"noise_multiplier": 50.0},
        BILEVEL[3] | {"noise_multiplier": 30.0, "inner_noise_multiplier": 1e4},
        BILEVEL[4] | {"noise_multiplier": 300.0},
    ],
    "phased-output-perturbation": [
        params | {"noise_multiplier": z}
        for params, z in zip(POP_TEST_VECTORS.values(), (8.0, 9.0, 12.0, 6.0, 12.0), strict=True)
    ],
    "private-mirror-descent": [*MIRROR[:4], MIRROR[4] | {"stepsize": 0.002}],
    "nseg": [
        *(params for algorithm, params in NOISY_VI if algorithm == "nseg"),
        NSEG_BILINEAR | {"dataset_size": 2000, "batch_size": 10, "noise_multiplier": 6.0},
        NSEG_BILINEAR
        | {"dataset_size": 800, "batch_size": 8, "passes": "multi", "steps": 150, "noise_multiplier": 8.0},
    ],
    "nispp": [
        *(params for algorithm, params in NOISY_VI if algorithm == "nispp"),
        NSEG_BILINEAR | {"dataset_size": 3000, "batch_size": 30, "noise_multiplier": 1.5},
        NSEG_BILINEAR
        | {
            "dataset_size": 500,
            "batch_size": 5,
            "passes": "multi",
            "sampling": "uniform",
            "steps": 200,
            "noise_multiplier": 6.0,
        },
        NSEG_BILINEAR | {"dataset_size": 1000, "batch_size": 10, "passes": "multi", "noise_multiplier": 6.0},
    ],
}
TOY = [{"releases": k, "clip_norm": 1.0, "noise_multiplier": z} for k, z in ((1, 1.0), (10, 2.0), (500, 9.0))]


def _node(algorithm: str, params: dict[str, object]) -> dict[str, object]:
    return {"type": "algorithm", "algorithm": algorithm, "params": params}


def _same_privacy(family: PlannedFamily, params: dict[str, object], accountant: str) -> None:
    own = family.privacy(params, DELTA, accountant)
    relation = family.plan(params, DELTA).neighbouring
    composed = privacy(Composition(_node(family.id, params), DELTA, accountant, relation))
    assert own.accountant == composed.accountant and own.epsilon == composed.epsilon, (params, accountant)
    theirs = {a.name: a.epsilon for a in composed.accountants}
    for result in own.accountants:
        if result.name in theirs:
            assert result.epsilon == theirs[result.name], (params, accountant, result.name)


def _same_calibration(family: PlannedFamily, params: dict[str, object], accountant: str, target: float) -> None:
    knob = family.knob.field
    given = {k: v for k, v in params.items() if k not in family.noise_fields}
    own = family.calibrate(given, target, DELTA, accountant)
    relation = family.plan(params, DELTA).neighbouring
    node = _node(family.id, given | {knob: 1.0})
    composed = calibrate(Composition(node, DELTA, accountant, relation), target, f"/params/{knob}")
    assert own.calibrated_value == composed.calibrated_value, (params, accountant)
    assert own.epsilon == composed.epsilon and own.accountant == composed.accountant


@pytest.mark.parametrize("params", DP_SGD)
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_dp_sgd_privacy_is_its_composition(params, accountant):
    _same_privacy(registry.get("dp-sgd"), params, accountant)


@pytest.mark.slow
@pytest.mark.parametrize("params", DP_SGD[1:])
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_dp_sgd_calibration_is_its_composition(params, accountant):
    _same_calibration(registry.get("dp-sgd"), params, accountant, 2.0)


@pytest.mark.parametrize("params", DP_MF)
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_dp_mf_is_its_composition(params, accountant):
    family = registry.get("dp-mf")
    _same_privacy(family, params, accountant)
    _same_calibration(family, params, accountant, 2.0)


@pytest.mark.parametrize("params", TOY)
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_a_new_family_is_its_composition(params, accountant):
    with registered() as family:
        _same_privacy(family, params, accountant)
        _same_calibration(family, params, accountant, 1.5)


@pytest.mark.parametrize("params", LAST_ITERATE)
@pytest.mark.parametrize("accountant", ["rdp", "best"])
def test_last_iterate_is_its_composition(params, accountant):
    """Only rdp reads a Rényi bound (tight is not applicable on both sides, with the same reason)."""
    family = registry.get("dp-sgd-last-iterate")
    _same_privacy(family, params, accountant)
    _same_calibration(family, params, accountant, 2.0)


@pytest.mark.parametrize("params", POP)
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_phased_output_perturbation_is_its_composition(params, accountant):
    """The solver's failure probability is δ spent outside the releases on both sides."""
    family = registry.get("phased-output-perturbation")
    _same_privacy(family, params, accountant)
    _same_calibration(family, params, accountant, 0.8)


@pytest.mark.parametrize("params", MIRROR)
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_private_mirror_descent_privacy_is_its_composition(params, accountant):
    """The knob is the stepsize (smaller is more private); tight reads bounded-range samples in blocks."""
    _same_privacy(registry.get("private-mirror-descent"), params, accountant)


@pytest.mark.parametrize("params", MIRROR)
def test_private_mirror_descent_rdp_calibration_is_its_composition(params):
    _same_calibration(registry.get("private-mirror-descent"), params, "rdp", 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("params", MIRROR)
@pytest.mark.parametrize("accountant", ["tight", "best"])
def test_private_mirror_descent_calibration_is_its_composition(params, accountant):
    _same_calibration(registry.get("private-mirror-descent"), params, accountant, 1.0)


@pytest.mark.parametrize(("algorithm", "params"), NOISY_VI)
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_nseg_and_nispp_are_their_compositions(algorithm, params, accountant):
    """One Gaussian per record for a single pass; composed subsampled releases under replace-one for several."""
    family = registry.get(algorithm)
    _same_privacy(family, params, accountant)
    _same_calibration(family, params, accountant, 1.0)


@pytest.mark.parametrize("params", BILEVEL)
@pytest.mark.parametrize("accountant", ["rdp", "tight", "best"])
def test_dp_bilevel_is_its_composition(params, accountant):
    """The knob is the outer multiplier; the inner one follows z·√K or stays as given, on both sides."""
    family = registry.get("dp-bilevel")
    _same_privacy(family, params, accountant)
    _same_calibration(family, params, accountant, 1.0)


@pytest.mark.parametrize(("algorithm", "params"), [(a, p) for a, configs in PAPER.items() for p in configs])
def test_the_papers_statement_is_its_composition(algorithm, params):
    """``paper`` is an algorithm's own statement, not an accountant of trees: a composition that is one algorithm node
    answers it as the family does (privacy, and calibration of the family's knob)."""
    family = registry.get(algorithm)
    assert family.privacy(params, DELTA, "paper").accountant == "paper"  # its conditions hold here
    _same_privacy(family, params, "paper")
    _same_calibration(family, params, "paper", 1.0)


def test_paper_is_refused_for_any_other_tree():
    """Inside a sequence (or for a family without a paper statement) the request gets 4xx with the reason."""
    node = _node("nseg", PAPER["nseg"][0])
    with pytest.raises(ParameterError, match="must be one algorithm node"):
        privacy(Composition({"type": "sequence", "mechanisms": [node, node]}, DELTA, "paper", "replace-one"))
    with pytest.raises(UnsupportedAccountantError, match="paper"):
        privacy(Composition(_node("dp-sgd", DP_SGD[0]), DELTA, "paper"))
    with pytest.raises(ParameterError, match="calibrate: a paper calibration moves one of nseg's knobs"):
        calibrate(Composition(node, DELTA, "paper", "replace-one"), 1.0, "/params/dataset_size")


@pytest.mark.parametrize(
    ("target", "delta"),
    [(1.0, 1e-5), pytest.param(2.0, 1e-5, marks=pytest.mark.slow), pytest.param(2.0, 1e-7, marks=pytest.mark.slow)],
)
def test_a_calibrated_noise_is_answered_with_the_calibrations_epsilon(target, delta):
    """One number for one mechanism: /v1/privacy at the σ /v1/calibrate returns gives the calibration's ε, at most the
    target. (A PLD picks its grid per question: at these configurations the search's own noise was answered 6e-6 to
    2e-5 above the target by a fresh query, until the calibration answered as the privacy request does.)"""
    family = registry.get("dp-sgd")
    params = {"dataset_size": 1000, "batch_size": 10, "steps": 20000, "neighbouring": "replace-one"}
    calibrated = family.calibrate(params, target, delta, "tight")
    again = family.privacy(params | {"noise_multiplier": calibrated.noise_multiplier}, delta, "tight")
    assert again.epsilon == calibrated.epsilon <= target


@pytest.mark.parametrize(
    ("algorithm", "params", "accountant", "heavy"),
    [
        ("dp-sgd", DP_SGD[0], "best", True),  # the PLD of Poisson-sampled Gaussians
        ("dp-sgd", DP_SGD[0], "rdp", False),
        ("dp-sgd", DP_SGD[1], "tight", False),  # full batches: exact Gaussian DP, a closed form
        ("dp-sgd-last-iterate", LAST_ITERATE[0], "best", False),  # a zCDP release: no PLD reads it
        ("dp-bilevel", BILEVEL[2], "tight", True),  # batches drawn without replacement
        ("dp-bilevel", BILEVEL[2] | {"sampling": "with-replacement"}, "best", False),  # no accountant reads it
        ("phased-output-perturbation", POP[0], "best", False),
    ],
)
def test_heavy_exactly_where_a_numerical_accountant_reads_the_plan(algorithm, params, accountant, heavy):
    """A request runs in a bounded process where an accountant it asks for computes (the PLD reading a tree that is
    not all Gaussian); a closed form, or a tree no such accountant reads, is answered at once."""
    family = registry.get(algorithm)
    assert (family.cost(Operation.PRIVACY, params, accountant) is Cost.HEAVY) is heavy
