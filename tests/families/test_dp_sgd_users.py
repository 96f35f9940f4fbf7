"""DP-SGD per user and with physical batches: ``examples_per_user`` (a mixture of Gaussians per step under Poisson
sampling, against dp_accounting 0.6.0's PLD of the same ``MixtureOfGaussiansDpEvent`` computed live, and below the
group-privacy lemma applied to the per-example answer), ``sampling_unit``, ``microbatch_size`` and
``gradient_accumulation_steps`` (the effective q, T and sensitivity against hand computations, including
jax_privacy's case of a physical batch passed as the optimizer's)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accountants.errors import ParameterError
from accountants.events import GaussianEvent, RandomAllocationEvent, SelfComposedEvent
from accountants.pld import PldAccountant
from accountants.registry import get
from accountants.tight import tight_epsilon

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402

DP_SGD = get("dp-sgd")
SMALL = {"dataset_size": 10000, "batch_size": 100, "steps": 1000, "noise_multiplier": 2.0}
DELTA = 1e-5


@pytest.mark.parametrize(
    "loader",
    [
        {},
        {"sampling": "shuffle"},
        {"sampling": "balls-in-bins"},
        {"sampling": "fixed-size", "neighbouring": "replace-one"},
        {"sampling": "truncated-poisson", "max_batch_size": 120},
        {"batch_size": 10000},
    ],
)
def test_one_example_per_user_is_todays_answer_bit_for_bit(loader: dict) -> None:
    today = DP_SGD.privacy({**SMALL, **loader}, DELTA)
    users = DP_SGD.privacy({**SMALL, **loader, "examples_per_user": 1}, DELTA)
    assert [(r.name, r.epsilon) for r in users.accountants] == [(r.name, r.epsilon) for r in today.accountants]
    assert users.conventions.protects == "example"


def _dp_accounting_user_epsilon(k: int, q: float, sigma: float, steps: int, vdi: float) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=vdi
    )
    counts = np.arange(k + 1)
    mixture = dp_accounting.dp_event.MixtureOfGaussiansDpEvent(
        sigma, [float(c) for c in counts], list(stats.binom.pmf(counts, k, q))
    )
    accountant.compose(mixture, steps)
    return float(accountant.get_epsilon(DELTA))


def _group_lemma_epsilon(k: int) -> float:
    """The group-privacy lemma on the per-example tight δ(ε): (kε₁, δ₁·Σ_{j<k} e^{jε₁})-DP for groups of k. The first
    ε₁ on a grid of 0.05 whose δ fits, then bisection below it (every ε₁ that fits gives a valid bound); ∞ where none
    does before e^{(k−1)ε₁} reaches e^40 (then the lemma gives no finite ε at this δ: k = 50 here)."""
    event = DP_SGD.plan(SMALL, DELTA).event
    accountant = PldAccountant("add-remove")

    def fits(eps1: float) -> bool:
        if k * eps1 > 700.0:
            return False
        return accountant.delta(event, eps1).value * math.expm1(k * eps1) / math.expm1(eps1) <= DELTA

    last = min(200, math.ceil(40.0 / (0.05 * (k - 1))))  # e^{(k−1)ε₁} beyond e^40 swamps any δ(ε₁) certified here
    high = next((0.05 * j for j in range(1, last + 1) if fits(0.05 * j)), None)
    if high is None:
        return math.inf
    low = high - 0.05
    for _ in range(20):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if fits(middle) else (middle, high)
    return k * high


@pytest.mark.slow
@pytest.mark.parametrize(("k", "vdi"), [(2, 1e-4), (5, 1e-4), (10, 1e-3), (50, 1e-3)])
def test_user_level_poisson_is_dp_accountings_mixture_and_below_the_group_lemma(k: int, vdi: float) -> None:
    ours = DP_SGD.privacy({**SMALL, "examples_per_user": k}, DELTA, accountant="tight")
    theirs = _dp_accounting_user_epsilon(k, 0.01, 2.0, 1000, vdi)
    assert abs(ours.epsilon - theirs) <= 1e-3 * theirs, (ours.epsilon, theirs)
    assert ours.epsilon <= _group_lemma_epsilon(k)
    assert ours.conventions.protects == "user" and ours.conventions.examples_per_user == k


def test_user_level_calibration_round_trips() -> None:
    params = {key: value for key, value in SMALL.items() if key != "noise_multiplier"} | {"examples_per_user": 3}
    calibrated = DP_SGD.calibrate(params, 4.0, DELTA, accountant="tight")
    assert calibrated.noise_multiplier is not None
    back = DP_SGD.privacy({**params, "noise_multiplier": calibrated.noise_multiplier}, DELTA, accountant="tight")
    assert back.epsilon <= 4.0 * (1 + 1e-9)
    assert back.epsilon >= 4.0 * (1 - 2e-3)
    assert (
        calibrated.noise_multiplier > DP_SGD.calibrate(params | {"examples_per_user": 1}, 4.0, DELTA).noise_multiplier
    )


def test_user_level_without_amplification_and_by_allocation_are_their_derivations() -> None:
    shuffled = DP_SGD.privacy({**SMALL, "sampling": "shuffle", "examples_per_user": 3}, DELTA, accountant="tight")
    epochs = 10  # 1000 steps of 100 batches per epoch
    exact = tight_epsilon(SelfComposedEvent(GaussianEvent(2.0 / 3), epochs), "add-remove", DELTA)
    assert shuffled.epsilon == exact.epsilon
    balls = DP_SGD.plan({**SMALL, "sampling": "balls-in-bins", "examples_per_user": 4}, DELTA)
    assert balls.event == SelfComposedEvent(RandomAllocationEvent(100, 1, GaussianEvent(1.0)), 40)  # z/√4, 4·10


def test_physical_batch_passed_as_the_effective_one_is_warned_and_accumulation_fixes_it() -> None:
    """jax_privacy PR #287: n = 1000, physical batch 10, 8 accumulation steps, 100 optimizer steps, z = 1: ε ≈ 0.72
    at the physical batch's q = 0.01, ≈ 5.6 at the effective q = 0.08 (dp_accounting's PLD: 0.718 and 5.613)."""
    physical = {"dataset_size": 1000, "batch_size": 10, "steps": 100, "noise_multiplier": 1.0}
    wrong = DP_SGD.privacy(physical, DELTA, accountant="tight")
    right = DP_SGD.privacy({**physical, "gradient_accumulation_steps": 8}, DELTA, accountant="tight")
    assert wrong.conventions.sampling_rate == 0.01 and right.conventions.sampling_rate == 0.08
    assert wrong.conventions.steps == right.conventions.steps == 100
    assert wrong.epsilon == pytest.approx(0.718, abs=2e-3) and right.epsilon == pytest.approx(5.613, abs=6e-3)
    assert any("gradient_accumulation_steps" in w for w in wrong.warnings)
    assert not any("gradient_accumulation_steps" in w for w in right.warnings)


def test_accumulation_counts_optimizer_steps_from_epochs() -> None:
    params = {"dataset_size": 60000, "batch_size": 32, "gradient_accumulation_steps": 8, "epochs": 2}
    answer = DP_SGD.privacy({**params, "noise_multiplier": 1.0}, DELTA, accountant="rdp")
    assert answer.conventions.steps == math.ceil(2 * 60000 / 256) == 469
    assert answer.conventions.sampling_rate == 256 / 60000
    assert "effective batch" in answer.conventions.step_rule
    with pytest.raises(ParameterError) as caught:
        DP_SGD.parse({**params, "batch_size": 8000})  # 8·8000 > 60000
    assert caught.value.issues[0].field == "batch_size"


def test_microbatches_double_the_add_remove_sensitivity() -> None:
    base = {**SMALL, "clip_norm": 1.5}
    plain = DP_SGD.privacy(base, DELTA, accountant="rdp")
    micro = DP_SGD.privacy({**base, "microbatch_size": 4}, DELTA, accountant="rdp")
    assert plain.noise is not None and micro.noise is not None
    assert plain.noise.sensitivity == 1.5 and micro.noise.sensitivity == 3.0
    assert micro.noise.noise_std == 2.0 * 3.0
    assert micro.epsilon == plain.epsilon  # the same multiplier over a doubled sensitivity: the same event
    by_std = DP_SGD.privacy({**base, "noise_multiplier": None, "noise_std": 3.0, "microbatch_size": 4}, DELTA)
    assert by_std.noise is not None and by_std.noise.noise_multiplier == 1.0  # std 3 over 2·1.5
    with pytest.raises(ParameterError) as caught:
        DP_SGD.parse({**base, "microbatch_size": 4, "neighbouring": "replace-one"})
    assert caught.value.issues[0].field == "microbatch_size"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"sampling_unit": "user", "examples_per_user": 2}, "examples_per_user"),
        ({"sampling": "truncated-poisson", "max_batch_size": 120, "examples_per_user": 2}, "examples_per_user"),
        ({"neighbouring": "replace-one", "examples_per_user": 2}, "examples_per_user"),
        ({"examples_per_user": 1001}, "examples_per_user"),
    ],
)
def test_user_level_refusals_name_the_field(extra: dict, field: str) -> None:
    with pytest.raises(ParameterError) as caught:
        DP_SGD.parse({**SMALL, **extra})
    assert caught.value.issues[0].field == field


def test_the_statement_says_per_user() -> None:
    users = DP_SGD.privacy({**SMALL, "examples_per_user": 5}, DELTA, accountant="rdp", statement=True)
    assert users.statement is not None and "each user with at most 5 examples" in users.statement
    unit = DP_SGD.privacy({**SMALL, "sampling_unit": "user"}, DELTA, accountant="rdp", statement=True)
    assert unit.statement is not None and "each user (user-level" in unit.statement
    assert unit.epsilon == DP_SGD.privacy(SMALL, DELTA, accountant="rdp").epsilon  # a user is a record


@pytest.mark.slow
def test_the_readme_per_user_example_is_the_current_answer() -> None:
    """README "Privacy per user": the calibrated noise and the statement it prints are the library's answers."""
    from ..support.server import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Privacy per user", 1)[1].split("\n## ", 1)[0]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].strip()
    params = {"dataset_size": 60000, "batch_size": 256, "epochs": 60, "examples_per_user": 5}
    calibrated = DP_SGD.calibrate(params, 3.0, DELTA)
    assert calibrated.noise_multiplier == pytest.approx(3.60311, rel=1e-4)  # the calibration's own tolerance
    rdp = next(r for r in calibrated.accountants if r.name == "rdp")
    assert rdp.noise_multiplier == pytest.approx(3.861, rel=2e-4)
    statement = DP_SGD.privacy({**params, "noise_multiplier": 3.60311}, DELTA, statement=True).statement
    assert statement == shown
