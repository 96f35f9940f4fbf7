"""dp-mf against independent sources: jax_privacy 2.0.0's sensitivity functions and its amplified-BandMF reduction,
dp_accounting 0.6.0's tree-aggregation RDP, dp-sgd's own answers for C = I, and closed forms."""

from __future__ import annotations

import itertools
import math

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from scipy import optimize, special

from accountants import registry
from accountants.errors import ParameterError
from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.families.dp_mf import strategies
from accountants.families.dp_mf.sensitivity import Pattern, best_pattern, sensitivity
from accountants.plan_accounting import account_plan
from accountants.plans import MechanismPlan

from ..support.jax_privacy_oracle import JaxPrivacy


@pytest.fixture(scope="module")
def jax_privacy():
    """jax_privacy 2.0.0 in its own process (:mod:`tests.support.jax_privacy_oracle`)."""
    oracle = JaxPrivacy()
    yield oracle
    oracle.close()


MF = registry.get("dp-mf")
SGD = registry.get("dp-sgd")
BASE = {"dataset_size": 10000, "batch_size": 100, "steps": 1000, "noise_multiplier": 1.0}
HALVING = (1.0, 0.5, 0.25, 0.125)


def _gram(name: str, steps: int) -> np.ndarray:
    if name == "tree":
        return strategies.tree_gram(steps, False, None)
    if name == "tree-completed":
        return strategies.tree_gram(steps, True, None)
    coefficients = {"halving": HALVING, "signed": (1.0, -0.4, 0.1), "flat8": (1.0,) * 8}[name]
    return strategies.gram_of(strategies.toeplitz_encoder(coefficients, steps))


BANDED_EXACT = [  # (strategy, steps, min_sep, k): columns ≥ min_sep apart orthogonal, both exact
    ("halving", 64, 4, 8),
    ("halving", 64, 8, 4),
    ("halving", 64, 5, 13),
    ("halving", 100, 16, 2),
    ("signed", 64, 3, 10),
    ("signed", 64, 8, 4),
    ("signed", 50, 7, None),
    ("flat8", 64, 8, 8),
    ("flat8", 96, 12, 3),
    ("halving", 64, 4, None),
]


@pytest.mark.parametrize(("name", "steps", "sep", "k"), BANDED_EXACT)
def test_banded_sensitivities_equal_jax_privacys(jax_privacy, name, steps, sep, k):
    gram = _gram(name, steps)
    ours = sensitivity(gram, Pattern(sep, k or steps))
    theirs = jax_privacy("get_sensitivity_banded_for_X", gram, sep, k)
    assert ours.exact and ours.value == pytest.approx(theirs, rel=1e-12)
    assert ours.lower == ours.value and len(ours.witness) <= (k or steps)


@pytest.mark.parametrize("coefficients", [HALVING, (1.0, -0.4, 0.1), (2.0,)])
@pytest.mark.parametrize("steps", [1, 7, 64])
def test_single_participation_is_the_largest_column_norm(jax_privacy, coefficients, steps):
    encoder = strategies.toeplitz_encoder(coefficients, steps)
    ours = sensitivity(strategies.gram_of(encoder), Pattern(steps, 1))
    theirs = jax_privacy("single_participation_sensitivity", encoder)
    assert ours.exact and ours.value == pytest.approx(theirs, rel=1e-12)


BOUNDED = [
    ("tree", 64, 1, 3),
    ("tree", 64, 5, 13),
    ("signed", 64, 1, 3),
    ("tree-completed", 48, 6, 4),
    ("halving", 64, 1, 5),
]


@pytest.mark.parametrize(("name", "steps", "sep", "k"), BOUNDED)
def test_where_jax_privacy_bounds_from_above_ours_is_at_least_its_bound(jax_privacy, name, steps, sep, k):
    """Both run arXiv 2306.08153's Alg. 4; ours also brackets from below by patterns it evaluates exactly."""
    gram = _gram(name, steps)
    ours = sensitivity(gram, Pattern(sep, k))
    theirs = jax_privacy("get_min_sep_sensitivity_upper_bound_for_X", gram, sep, k)
    assert ours.value >= theirs * (1 - 1e-12)
    assert ours.lower <= ours.value
    assert ours.lower == pytest.approx(_brute_force_aligned(gram, ours.witness), rel=1e-12)


def test_fixed_epoch_patterns_are_among_the_min_separation_ones(jax_privacy):
    """jax_privacy's fixed-epoch sensitivity (b = n/k patterns s, s + b, …) is a lower end for min-separation b."""
    for name in ("tree", "signed", "halving"):
        gram = _gram(name, 64)
        theirs = jax_privacy("fixed_epoch_sensitivity_for_X", gram, 4)
        ours = sensitivity(gram, Pattern(16, 4))
        assert ours.value >= theirs * (1 - 1e-12)
        if name != "signed":  # X ≥ 0: the aligned value of the fixed-epoch pattern is its exact sensitivity
            assert ours.lower >= theirs * (1 - 1e-12)


def test_the_bracket_holds_the_true_maximum_on_small_problems():
    """Every admissible pattern enumerated (T = 12): lower ≤ max over patterns of the aligned value ≤ value, and with
    X ≥ 0 the aligned value is each pattern's sensitivity."""
    gram = _gram("tree", 12)
    for sep, k in ((1, 3), (2, 4), (3, 3)):
        best = 0.0
        for size in range(1, k + 1):
            for pattern in itertools.combinations(range(12), size):
                if all(b - a >= sep for a, b in itertools.pairwise(pattern)):
                    best = max(best, _brute_force_aligned(gram, pattern))
        ours = sensitivity(gram, Pattern(sep, k))
        assert ours.lower <= best * (1 + 1e-12) and best <= ours.value * (1 + 1e-12)


def test_best_pattern_recovers_a_maximiser(jax_privacy):
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.random(30)
        sep, k = int(rng.integers(1, 6)), int(rng.integers(1, 8))
        value, pattern = best_pattern(x, sep, k)
        assert value == pytest.approx(jax_privacy("max_participation_for_linear_fn", x, sep, k), rel=1e-12)
        assert sum(x[list(pattern)]) == pytest.approx(value, rel=1e-12) and len(pattern) <= k
        assert all(b - a >= sep for a, b in itertools.pairwise(pattern))


def _brute_force_aligned(gram: np.ndarray, pattern) -> float:
    return math.sqrt(sum(gram[i, j] for i in pattern for j in pattern))


# -- accounting ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("participation", "sampling", "scale"),
    [
        ("poisson", "poisson", 1.0),
        ("single-epoch", "shuffle", 1.0),
        ("cyclic", "shuffle", math.sqrt(10)),
        ("balls-in-bins", "balls-in-bins", 1.0),
    ],
)
def test_the_identity_strategy_is_dp_sgd_bit_for_bit(participation, sampling, scale):
    steps = 100 if participation == "single-epoch" else 1000
    mf = {**BASE, "steps": steps, "strategy": {"type": "identity"}, "participation": participation}
    sgd = {**BASE, "steps": steps, "sampling": sampling, "noise_multiplier": scale}  # z·Δ per step, Δ = √k
    assert MF.plan(mf, 1e-5).event == SGD.plan(sgd, 1e-5).event
    ours, theirs = MF.privacy(mf, 1e-5), SGD.privacy(sgd, 1e-5)
    assert [(r.name, r.epsilon) for r in ours.accountants if r.name != "paper"] == [
        (r.name, r.epsilon) for r in theirs.accountants if r.name not in ("paper", "poisson-assumed")
    ]


@pytest.mark.parametrize(
    ("steps", "coefficients", "z"), [(1000, HALVING, 1.0), (999, (1.0, 0.3), 0.8), (64, HALVING, 2.0)]
)
def test_amplified_banded_equals_the_dp_sgd_reduction(jax_privacy, steps, coefficients, z):
    """jax_privacy's amplified_bandmf_event (z over a largest column norm of one) read by dpcal's spine."""
    norm = math.sqrt(sum(c * c for c in coefficients))
    normalised = [c / norm for c in coefficients]
    bands = len(coefficients)
    params = {
        **BASE,
        "steps": steps,
        "strategy": {"type": "toeplitz", "coefficients": normalised},
        "participation": "cyclic-poisson",
        "noise_multiplier": z,
    }
    q = BASE["batch_size"] * bands / BASE["dataset_size"]
    event = jax_privacy("amplified_bandmf_event", z, steps, bands, q)  # its count, q and z
    reduced = SelfComposedEvent(PoissonSampledEvent(event["q"], GaussianEvent(event["z"])), event["count"])
    ours = MF.privacy(params, 1e-6)
    for row in account_plan(MechanismPlan(reduced, "add-remove"), 1e-6).results:
        if row.applicable:
            mine = next(r for r in ours.accountants if r.name == row.name)
            assert mine.epsilon == pytest.approx(row.epsilon, rel=1e-9), row.name
    # and against dp_accounting's own PLD of that event (its pessimistic grid: within its accuracy, above ours)
    tight = next(r for r in ours.accountants if r.name == "tight").epsilon
    theirs = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(event["q"], dpa.GaussianDpEvent(event["z"])), event["count"]
    )
    pld = dpa.pld.PLDAccountant(value_discretization_interval=1e-4).compose(theirs).get_epsilon(1e-6)
    assert tight <= pld * (1 + 1e-4) and tight == pytest.approx(pld, rel=2e-2)


@pytest.mark.parametrize("steps", [1, 3, 4, 100, 1000, 1024, 2048])
def test_tree_aggregation_rdp_is_at_most_dp_accountings_and_within_five_percent(steps):
    """One epoch, zero-out: dp_accounting's SingleEpochTreeAggregationDpEvent (noise per node over the per-node
    sensitivity) at the same per-node noise as dpcal's z over the tree's sensitivity √depth."""
    z = 2.0
    params = {
        **BASE,
        "dataset_size": 100 * steps,
        "steps": steps,
        "strategy": {"type": "tree"},
        "participation": "single-epoch",
        "noise_multiplier": z,
    }
    ours = MF.privacy(params, 1e-5, accountant="rdp").epsilon
    depth = strategies.tree_depth(steps, completion=False)
    accountant = dpa_rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_SPECIAL)
    theirs = accountant.compose(dpa.SingleEpochTreeAggregationDpEvent(z * math.sqrt(depth), steps)).get_epsilon(1e-5)
    assert ours <= theirs * (1 + 1e-12) and ours >= 0.95 * theirs


def test_tree_depths():
    for steps in range(1, 70):
        for completion in (False, True):
            gram = strategies.tree_gram(steps, completion, None)
            assert gram.diagonal().max() == strategies.tree_depth(steps, completion)
    assert strategies.tree_depth(5, False) == math.ceil(math.log2(6))  # dp_accounting's max_depth


def test_zero_out_is_add_remove_and_replace_one_doubles():
    params = {**BASE, "strategy": {"type": "toeplitz", "coefficients": list(HALVING)}, "participation": "cyclic"}
    zero = MF.privacy(params, 1e-5)
    add = MF.privacy({**params, "neighbouring": "add-remove"}, 1e-5)
    replace = MF.privacy({**params, "neighbouring": "replace-one"}, 1e-5)
    assert zero.epsilon == add.epsilon and zero.conventions.neighbouring == "zero-out"
    assert replace.noise.sensitivity == pytest.approx(2 * zero.noise.sensitivity)
    assert replace.epsilon == zero.epsilon  # z is relative to the relation's sensitivity: one Gaussian at μ = 1/z
    assert "replaced by zeros" in (MF.privacy(params, 1e-5, statement=True).statement or "")


def test_without_amplification_the_answer_is_the_gaussian_of_mu_one_over_z():
    from scipy import stats

    params = {**BASE, "strategy": {"type": "tree"}, "participation": "cyclic", "noise_multiplier": 1.5}
    answer = MF.privacy(params, 1e-5, accountant="tight")
    mu, eps = 1 / 1.5, answer.epsilon
    delta = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert delta == pytest.approx(1e-5, rel=1e-6)


def test_calibration_inverts_privacy():
    params = {
        **BASE,
        "strategy": {"type": "toeplitz", "coefficients": list(HALVING)},
        "participation": "cyclic-poisson",
    }
    params.pop("noise_multiplier")
    answer = MF.calibrate(params, 2.0, 1e-5)
    back = MF.privacy({**params, "noise_multiplier": answer.calibrated_value}, 1e-5)
    assert back.epsilon == pytest.approx(2.0, rel=1e-4) and back.epsilon <= 2.0 * (1 + 1e-9)


def test_poisson_with_a_general_c_claims_no_amplification_when_asked_and_says_so():
    params = {**BASE, "steps": 200, "strategy": {"type": "tree"}, "participation": "poisson", "amplification": "none"}
    answer = MF.privacy(params, 1e-5)
    assert any("No amplification" in w for w in answer.warnings)
    gram = strategies.tree_gram(200, False, None)
    assert answer.noise.sensitivity == pytest.approx(math.sqrt(gram.sum()), rel=1e-12)  # every step, X ≥ 0: exact


def test_bad_strategies_are_named():
    cases = [
        ({"type": "toeplitz", "coefficients": [0.0, 1.0]}, "strategy.coefficients"),
        ({"type": "matrix", "rows": [[1.0, 2.0], [0.5, 1.0]]}, "strategy.rows"),
        ({"type": "matrix", "rows": [[1.0]]}, "strategy.rows"),
        ({"type": "spiral"}, "strategy"),
    ]
    for strategy, field in cases:
        with pytest.raises(ParameterError) as error:
            MF.privacy({**BASE, "steps": 2, "strategy": strategy}, 1e-5)
        assert field in str(error.value), (strategy, str(error.value))
    with pytest.raises(ParameterError, match="steps"):
        MF.privacy({**BASE, "steps": 4096, "strategy": {"type": "tree"}}, 1e-5)
    with pytest.raises(ParameterError, match="batch_size"):
        MF.privacy({**BASE, "strategy": {"type": "tree"}, "participation": "cyclic-poisson"}, 1e-5)


def test_a_dense_matrix_equals_its_toeplitz():
    steps = 40
    c = strategies.toeplitz_encoder(HALVING, steps)
    rows = [list(c[t, : t + 1]) for t in range(steps)]
    for participation in ("cyclic", "cyclic-poisson", "single-epoch"):
        base = {
            **BASE,
            "dataset_size": 4000 if participation == "single-epoch" else BASE["dataset_size"],
            "steps": steps,
            "participation": participation,
        }
        dense = MF.privacy({**base, "strategy": {"type": "matrix", "rows": rows}}, 1e-5)
        toeplitz = MF.privacy({**base, "strategy": {"type": "toeplitz", "coefficients": list(HALVING)}}, 1e-5)
        assert dense.epsilon == pytest.approx(toeplitz.epsilon, rel=1e-12)
        assert dense.noise.sensitivity == pytest.approx(toeplitz.noise.sensitivity, rel=1e-12)


@pytest.mark.parametrize(
    ("participation", "extra"),
    [
        ("cyclic", {}),
        ("cyclic", {"min_separation": 4, "max_participations": 7}),
        ("single-epoch", {}),
        ("cyclic-poisson", {}),
    ],
)
def test_a_toeplitz_c_from_its_column_norms_equals_the_dense_bracket(participation, extra):
    steps = 2000 if participation != "single-epoch" else 90
    params = {
        **BASE,
        "steps": steps,
        "strategy": {"type": "toeplitz", "coefficients": [1.0, -0.5, 0.3, 0.1]},
        "participation": participation,
        **extra,
    }
    structured = MF.privacy(params, 1e-5).noise.sensitivity
    gram = strategies.gram_of(strategies.toeplitz_encoder((1.0, -0.5, 0.3, 0.1), steps))
    sep = extra.get("min_separation", 100)
    k = extra.get("max_participations", steps)
    pattern = Pattern(steps, 1) if participation in ("single-epoch", "cyclic-poisson") else Pattern(sep, k)
    dense = sensitivity(gram, pattern)
    assert dense.exact and structured == pytest.approx(dense.value, rel=1e-12)


def test_long_toeplitz_runs_are_answered_from_the_column_norms():
    coefficients = [1.0, 0.5, 0.25]
    params = {
        **BASE,
        "dataset_size": 100_000,
        "steps": 100_000,
        "strategy": {"type": "toeplitz", "coefficients": coefficients},
    }
    cyclic = MF.privacy({**params, "participation": "cyclic"}, 1e-5)  # 1000 steps apart, 100 participations
    assert cyclic.noise.sensitivity == pytest.approx(math.sqrt(100 * 1.3125), rel=1e-12)
    banded = MF.privacy({**params, "participation": "cyclic-poisson"}, 1e-5)
    assert banded.conventions.sampling_rate == pytest.approx(0.003) and "33334" in banded.conventions.step_rule
    spectral = MF.privacy({**params, "participation": "poisson"}, 1e-5)  # Σ|c| for any T
    assert spectral.conventions.sampling_rate == pytest.approx(0.001)
    assert any("‖C‖₂ ≤ 1.75 " in (r.method or "") for r in spectral.accountants)
    for refused in (
        {"strategy": {"type": "tree"}, "participation": "cyclic"},
        {"participation": "cyclic", "min_separation": 2},
        {"participation": "poisson", "amplification": "none"},
    ):
        with pytest.raises(ParameterError, match="steps: at most 2048"):
            MF.privacy({**params, **refused}, 1e-5)


# -- verification jobs -----------------------------------------------------------------------------------------------


def _job(params, checks=("utility", "privacy-audit"), trials=2000, target=3.0):
    from accountants.planning import plan_job
    from accountants.verification import block_sizes, run_block, summarize

    plan = plan_job(MF, params, 1e-5, checks, trials, 1, None, target)
    blocks = [run_block(MF.simulator, plan, b) for b in range(len(block_sizes(trials)))]
    return plan, summarize(plan, blocks)


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"strategy": {"type": "tree"}},
        {"participation": "cyclic-poisson", "dataset_size": 4000},
        {"strategy": {"type": "identity"}, "participation": "poisson"},
        {"neighbouring": "replace-one"},
    ],
)
def test_a_job_measures_the_prefix_error_the_decoder_predicts_and_audits_below_the_accounted_epsilon(change):
    params = {**dict(MF.job_example)["params"], **change}
    plan, result = _job(params)
    utility, audit = result.utility, result.privacy_audit
    assert utility is not None and audit is not None
    mean, se = utility.measured["mean"], utility.measured["standard_error"]
    assert abs(mean - plan.predicted_bound) <= 4 * se and se < 0.05 * mean  # an exact expectation, within 4 s.e.
    assert audit.epsilon_lower_bound <= plan.epsilon_accounted


def test_the_audit_of_a_fixed_pattern_is_the_gaussian_shift_of_the_worst_pattern():
    params = dict(MF.job_example)["params"]
    plan, _ = _job(params, checks=("privacy-audit",), trials=64)
    assert plan.gaussian_mu == pytest.approx(1.0 / plan.params["noise_multiplier"], rel=1e-12)  # exact Δ: μ = 1/z
    assert plan.epsilon_exact == pytest.approx(plan.epsilon_accounted, rel=1e-9)


def test_the_decoders_reproduce_the_prefix_sums():
    from accountants.families.dp_mf.simulate import encoder_matrix, prefix_decoder

    for strategy in (
        {"type": "tree"},
        {"type": "tree", "completion": True, "restart_every": 8},
        {"type": "toeplitz", "coefficients": list(HALVING)},
        {"type": "identity"},
    ):
        p = MF.parse({**BASE, "steps": 20, "strategy": strategy})
        encoder = encoder_matrix(p)
        assert np.allclose(prefix_decoder(encoder) @ encoder, np.tril(np.ones((20, 20))), atol=1e-10)
        if strategy["type"] == "tree":
            gram = strategies.tree_gram(20, strategy.get("completion", False), strategy.get("restart_every"))
            assert np.array_equal(encoder.T @ encoder, gram)


def test_jobs_it_cannot_simulate_are_refused_naming_the_field():
    from accountants.planning import plan_job

    params = {**dict(MF.job_example)["params"], "strategy": {"type": "tree"}, "participation": "poisson"}
    with pytest.raises(ParameterError, match="participation"):
        plan_job(MF, params, 1e-5, ("privacy-audit",), 100, 1, None, 3.0)
    plan_job(MF, params, 1e-5, ("utility",), 100, 1, None, 3.0)  # the utility check runs for any participation
    with pytest.raises(ParameterError, match="steps"):
        plan_job(MF, {**params, "steps": 2000, "dataset_size": 200000}, 1e-5, ("utility",), 100, 1, None, 3.0)


def test_the_answer_carries_the_sensitivity_bracket_as_data():
    exact = MF.privacy({**BASE, "strategy": {"type": "toeplitz", "coefficients": list(HALVING)}}, 1e-5).noise
    assert exact.sensitivity_exact and exact.sensitivity_attained == pytest.approx(exact.sensitivity, rel=1e-12)
    assert exact.worst_pattern == tuple(range(0, 1000, 100))
    bounded = MF.privacy(
        {
            **BASE,
            "steps": 64,
            "strategy": {"type": "tree"},
            "participation": "cyclic",
            "min_separation": 5,
            "max_participations": 13,
            "clip_norm": 2.0,
            "neighbouring": "replace-one",
        },
        1e-5,
    ).noise
    ours = sensitivity(strategies.tree_gram(64, False, None), Pattern(5, 13))
    assert not bounded.sensitivity_exact and bounded.sensitivity == pytest.approx(4 * ours.value, rel=1e-12)
    assert bounded.sensitivity_attained == pytest.approx(4 * ours.lower, rel=1e-12)
    assert bounded.worst_pattern == ours.witness


@pytest.mark.parametrize(
    "params",
    [
        {
            "dataset_size": 2,
            "batch_size": 1,
            "steps": 10**12,
            "noise_multiplier": 1e6,
            "strategy": {"type": "identity"},
        },
        {
            "dataset_size": 2000,
            "batch_size": 1,
            "steps": 10**12,
            "noise_multiplier": 1e5,
            "strategy": {"type": "toeplitz", "coefficients": [1.0, 0.5, 0.25]},
        },
    ],
)
def test_the_longest_runs_are_answered_without_work_in_t(params):
    """C = I's per-step multiplier z·√k may exceed what a dp-sgd request accepts; a Toeplitz C's column norms are
    summed in O(m): neither allocates T of anything."""
    answer = MF.privacy(params, 1e-8)
    k = -(-params["steps"] // (params["dataset_size"] // params["batch_size"]))
    norms = sum(c * c for c in params["strategy"].get("coefficients", [1.0]))
    assert answer.noise.sensitivity == pytest.approx(math.sqrt(k * norms), rel=1e-12)
    assert answer.noise.worst_pattern is None and 0 < answer.epsilon < 1e-3


def test_the_cost_of_a_dense_sensitivity_is_decided_without_computing_it():
    """The service asks for the cost on its event loop: a dense bracket beyond a small T is heavy, uncomputed."""
    from accountants.families.dp_mf import privacy
    from accountants.family import Cost, Operation

    privacy._release.cache_clear()
    dense = {**BASE, "steps": 2048, "strategy": {"type": "tree"}, "participation": "poisson"}
    assert MF.cost(Operation.PRIVACY, dense) is Cost.HEAVY and privacy._release.cache_info().currsize == 0
    long_toeplitz = {**BASE, "steps": 10**6, "strategy": {"type": "toeplitz", "coefficients": [1.0, 0.5]}}
    assert MF.cost(Operation.PRIVACY, long_toeplitz) is Cost.CHEAP  # exact GDP from O(m) column norms


def test_the_sampling_rate_stated_is_the_one_the_release_samples_at():
    identity = {**BASE, "strategy": {"type": "identity"}}
    for participation, rate in (("poisson", 0.01), ("cyclic-poisson", 0.01), ("balls-in-bins", None), ("cyclic", None)):
        assert MF.privacy({**identity, "participation": participation}, 1e-5).conventions.sampling_rate == rate
    banded = {
        **BASE,
        "strategy": {"type": "toeplitz", "coefficients": list(HALVING)},
        "participation": "cyclic-poisson",
    }
    assert MF.privacy(banded, 1e-5).conventions.sampling_rate == pytest.approx(0.04)


# -- amplification of a general C under Poisson sampling --------------------------------------------------------------


def _exact_losses(encoder, rate, sigma, samples, rng, chunk=4000):
    """Privacy-loss samples of C·b + Z (b i.i.d. Bernoulli(q) per step) with its likelihood ratio computed exactly
    over every pattern b (T ≤ 12): remove direction (drawn with the record), add direction (without)."""
    rows, steps = encoder.shape
    patterns = np.array(list(itertools.product((0.0, 1.0), repeat=steps)))
    joined = patterns.sum(axis=1)
    log_prior = joined * math.log(rate) + (steps - joined) * math.log1p(-rate)
    means = patterns @ encoder.T
    half = 0.5 * np.sum(means**2, axis=1)

    def loss(y):
        return np.concatenate(
            [
                special.logsumexp((y[k : k + chunk] @ means.T - half) / sigma**2 + log_prior, axis=1)
                for k in range(0, len(y), chunk)
            ]
        )

    drawn = rng.choice(len(patterns), size=samples, p=np.exp(log_prior))
    with_record = loss(means[drawn] + sigma * rng.standard_normal((samples, rows)))
    without = -loss(sigma * rng.standard_normal((samples, rows)))
    return with_record, without


def _monte_carlo_epsilon_lower(losses, delta, confidence=1e-6):
    """The least ε at which a Hoeffding lower confidence bound on max over directions of E[(1 − e^{ε−L})₊] is ≤ δ:
    below it the mechanism is, with that confidence, not (ε, δ)-DP."""
    margin = math.sqrt(math.log(2 / confidence) / (2 * min(len(x) for x in losses)))

    def excess(eps):
        return max(float(np.mean(-np.expm1(np.minimum(eps - x, 0.0)))) for x in losses) - margin - delta

    return 0.0 if excess(0.0) <= 0.0 else optimize.brentq(excess, 0.0, 60.0)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("strategy", "rate", "sigma", "columns_under_report"),
    [
        ({"type": "toeplitz", "coefficients": [0.868, 0.434, 0.217, 0.109]}, 0.3, 1.0, True),
        ({"type": "toeplitz", "coefficients": [1.0, -0.6, 0.3]}, 0.5, 1.5, False),  # signs cancel: more private
        ({"type": "tree"}, 0.2, 2.0, True),
    ],
)
def test_credited_sampling_is_above_a_monte_carlo_lower_bound_and_below_no_amplification(
    strategy, rate, sigma, columns_under_report
):
    steps, delta = 10, 0.1
    params = {"dataset_size": 100, "batch_size": round(100 * rate), "steps": steps, "noise_std": sigma}
    params |= {"strategy": strategy, "participation": "poisson"}
    encoder = (
        strategies.tree_encoder(steps, False, None)
        if strategy["type"] == "tree"
        else strategies.toeplitz_encoder(tuple(strategy["coefficients"]), steps)
    )
    # the tree's C has a row per node: the release is C·b + Z all the same (rows released as their ranges end)
    lower = _monte_carlo_epsilon_lower(_exact_losses(encoder, rate, sigma, 50_000, np.random.default_rng(7)), delta)
    spectral = MF.privacy(params, delta)
    conditional = MF.privacy({**params, "amplification": "conditional"}, delta, "tight")  # rdp: slow mixture curves
    unamplified = MF.privacy({**params, "amplification": "none"}, delta)
    assert lower <= spectral.epsilon <= unamplified.epsilon
    assert lower <= conditional.epsilon <= unamplified.epsilon
    assert conditional.accountants[1].epsilon_lower is None  # δ is partly spent outside the mixtures: no lower bound
    # the bound has teeth: crediting sampling as if a non-negative C's columns were DP-SGD's steps under-reports
    column = math.sqrt(float(np.max(np.sum(encoder**2, axis=0))))
    naive = SGD.privacy(
        {
            "dataset_size": 100,
            "batch_size": round(100 * rate),
            "steps": steps,
            "sampling": "poisson",
            "noise_multiplier": sigma / column,
        },
        delta,
    )
    assert (naive.epsilon < lower) == columns_under_report


def test_sampling_credited_through_the_operator_norm_reduces_to_dp_sgd():
    """The spectral route is DP-SGD's tree at σ/‖C‖₂: for a scaled identity written as a Toeplitz C, DP-SGD's ε at
    the same noise over the scale (bit for bit), under each Poisson-type loader."""
    for participation, sampling in (("poisson", "poisson"), ("balls-in-bins", "balls-in-bins")):
        base = {**BASE, "steps": 300, "participation": participation, "noise_std": 3.0, "noise_multiplier": None}
        scaled = MF.privacy({**base, "strategy": {"type": "toeplitz", "coefficients": [2.0]}}, 1e-5)
        sgd = SGD.privacy(
            {"dataset_size": 10000, "batch_size": 100, "steps": 300, "sampling": sampling, "noise_multiplier": 1.5},
            1e-5,
        )
        assert [r.epsilon for r in scaled.accountants[:2]] == [r.epsilon for r in sgd.accountants[:2]]


def test_conditional_composition_composes_the_mixtures_it_states_and_spends_a_quarter_of_delta():
    """For C = c₀·I no earlier row reads a step: every step is the Poisson-sampled Gaussian at q, dp-sgd's own
    release, and nothing is reserved; one band more and δ/4 is reserved (the answer is then an upper bound only)."""
    params = {**BASE, "steps": 50, "noise_multiplier": None, "noise_std": 2.0, "participation": "poisson"}
    params |= {"amplification": "conditional"}
    diagonal = MF.privacy({**params, "strategy": {"type": "toeplitz", "coefficients": [1.0]}}, 1e-5)
    sgd = SGD.privacy(
        {"dataset_size": 10000, "batch_size": 100, "steps": 50, "sampling": "poisson", "noise_multiplier": 2.0}, 1e-5
    )
    assert [r.epsilon for r in diagonal.accountants[:2]] == [r.epsilon for r in sgd.accountants[:2]]
    plan = MF.plan({**params, "strategy": {"type": "toeplitz", "coefficients": [1.0, 0.5]}}, 1e-5)
    assert plan.reserved_delta == pytest.approx(0.25e-5, rel=1e-15)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"participation": "balls-in-bins", "amplification": "conditional"}, "amplification"),
        ({"participation": "poisson", "amplification": "conditional", "neighbouring": "replace-one"}, "amplification"),
        ({"participation": "poisson", "amplification": "conditional", "steps": 1500}, "steps"),
        ({"participation": "cyclic", "amplification": "spectral"}, "amplification"),
    ],
)
def test_amplification_it_cannot_credit_is_a_named_error(extra, field):
    with pytest.raises(ParameterError, match=field):
        MF.privacy({**BASE, "strategy": {"type": "toeplitz", "coefficients": [1.0, 0.5]}, **extra}, 1e-5)


@pytest.mark.parametrize(("steps", "expected"), [(4, None), (64, None), (65, 1.875), (10**6, 1.875)])
def test_the_operator_norm_is_certified_from_above_and_close(steps, expected):
    """‖C‖₂ from numpy's SVD where T is small enough to build C, else the Toeplitz limit Σ|cᵢ|; the bound is at
    least the true norm and within 1e-6 of it up to T = 64 (the dense Collatz–Wielandt bound)."""
    from accountants.families.dp_mf.params import DpMfParams
    from accountants.families.dp_mf.privacy import release_of

    params = {**BASE, "steps": steps, "strategy": {"type": "toeplitz", "coefficients": list(HALVING)}}
    release = release_of(DpMfParams(**params, participation="poisson"))
    if expected is None:
        true = float(np.linalg.norm(strategies.toeplitz_encoder(HALVING, steps), 2))
        assert true <= release.operator_norm <= true * (1 + 1e-6)
    else:
        assert release.operator_norm == expected
