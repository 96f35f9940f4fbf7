"""Batches as data loaders make them (dp-sgd ``sampling``): shuffle, balls-in-bins and truncated Poisson.

Oracles: the analytic Gaussian (Balle & Wang 2018) for the loaders accounted without amplification; a Monte-Carlo
audit of the simulated random allocation (the canary batched as the loader batches it) as a lower bound; and
dp_accounting 0.6.0's PLDAccountant on ``TruncatedSubsampledGaussianDpEvent``, computed live.
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest

from accountants import registry
from accountants.errors import ParameterError
from accountants.mechanisms.gaussian import gaussian_epsilon
from accountants.pipeline import Composition, privacy
from accountants.planning import plan_job
from accountants.reports import Guarantee
from accountants.verification import block_sizes, run_block, summarize

from ..support.oracles import dpa_pld_epsilon

FAMILY = registry.get("dp-sgd")
DELTA = 1e-5
MNIST = {"dataset_size": 60000, "batch_size": 256, "epochs": 60, "noise_multiplier": 1.1}


def _configs(seed: int, count: int) -> list[dict[str, float | int]]:
    rng = np.random.default_rng(seed)
    configs = []
    for _ in range(count):
        n = int(rng.choice([500, 2000, 10000, 60000]))
        batch = int(rng.integers(max(1, n // 200), n // 5))
        configs.append(
            {
                "dataset_size": n,
                "batch_size": batch,
                "epochs": int(rng.integers(1, 20)),
                "noise_multiplier": float(rng.uniform(0.7, 3.0)),
            }
        )
    return configs


@pytest.mark.parametrize("neighbouring", ["add-remove", "replace-one"])
@pytest.mark.parametrize("config", _configs(15, 6), ids=str)
def test_shuffle_is_the_analytic_gaussian_over_epochs_and_never_below_poisson(config, neighbouring):
    params = config | {"sampling": "shuffle", "neighbouring": neighbouring}
    answer = FAMILY.privacy(params, DELTA, "best")
    z, epochs = config["noise_multiplier"], config["epochs"]
    # μ = √E/z: one Gaussian release per epoch at the relation's sensitivity (z is std over it in both relations)
    assert answer.epsilon == pytest.approx(gaussian_epsilon(z, DELTA, epochs), rel=1e-9)
    assert answer.accountant == "tight"
    poisson = FAMILY.privacy(config | {"neighbouring": neighbouring}, DELTA, "best").epsilon
    assert answer.epsilon >= poisson
    beside = next(r for r in answer.accountants if r.name == "poisson-assumed")
    assert not beside.applicable and beside.guarantee == "not valid for this loader"
    assert beside.epsilon == pytest.approx(
        FAMILY.privacy(config | {"neighbouring": neighbouring}, DELTA, "rdp").epsilon
    )


def test_a_balls_in_bins_calibration_is_certified_by_random_allocation():
    """balls-in-bins (add-remove) is calibrated by the tight accountant on random allocation: its certified ε at the
    noise found is the target (to the calibration's tolerance), below the noise a shuffling loader needs and near
    the noise Poisson sampling would need (shown beside it, not valid)."""
    config = {"dataset_size": 60000, "batch_size": 256, "epochs": 3}
    found = FAMILY.calibrate(config | {"sampling": "balls-in-bins"}, 3.0, DELTA)
    assert found.accountant == "tight"
    at = FAMILY.privacy(config | {"sampling": "balls-in-bins", "noise_multiplier": found.calibrated_value}, DELTA)
    assert at.epsilon == pytest.approx(3.0, rel=2e-3) and at.epsilon <= 3.0 * (1 + 1e-9)
    shuffle = FAMILY.calibrate(config | {"sampling": "shuffle"}, 3.0, DELTA)
    assert found.calibrated_value < 0.5 * shuffle.calibrated_value
    beside = next(r for r in found.accountants if r.name == "poisson-assumed")
    assert beside.kind is Guarantee.NOT_VALID


@pytest.mark.parametrize("sampling", ["shuffle"])
def test_a_calibration_without_amplification_shows_the_noise_poisson_would_need_not_valid(sampling):
    """The note of a shuffling loader compares with the Poisson answer: a calibration carries it too (the rdp
    calibration of the same run under Poisson sampling), never chosen."""
    config = {"dataset_size": 60000, "batch_size": 256, "epochs": 3}
    found = FAMILY.calibrate(config | {"sampling": sampling}, 3.0, DELTA)
    beside = next(r for r in found.accountants if r.name == "poisson-assumed")
    poisson = FAMILY.calibrate(config, 3.0, DELTA, "rdp")
    assert not beside.applicable and beside.kind is Guarantee.NOT_VALID
    assert beside.calibrated_value == poisson.calibrated_value < found.calibrated_value
    assert found.accountant == "tight"  # three Gaussian releases per example: the analytic Gaussian's noise
    assert gaussian_epsilon(found.calibrated_value, DELTA, 3) == pytest.approx(3.0, rel=1e-6)


def test_shuffle_given_in_steps_counts_every_epoch_begun():
    """T steps of a loader with ⌊n/b⌋ = 234 batches per epoch (drop_last) or 235 begin at most ⌈T/234⌉ epochs."""
    params = {"dataset_size": 60000, "batch_size": 256, "steps": 235, "noise_multiplier": 1.1, "sampling": "shuffle"}
    answer = FAMILY.privacy(params, DELTA, "tight")
    assert answer.epsilon == pytest.approx(gaussian_epsilon(1.1, DELTA, 2), rel=1e-9)
    assert "⌈235/234⌉" in answer.conventions.step_rule


def _audit(params: dict[str, object], trials: int = 4096, seed: int = 0) -> tuple[float, float]:
    """(audit lower bound, accounted ε) of a verification job's privacy audit on the simulated loader."""
    plan = plan_job(FAMILY, params, DELTA, ("privacy-audit",), trials, seed, {})
    blocks = [run_block(FAMILY.simulator, plan, block) for block in range(len(block_sizes(trials)))]
    audit = summarize(plan, blocks).privacy_audit
    assert audit is not None
    return audit.epsilon_lower_bound, audit.epsilon_accounted


@pytest.mark.parametrize("config", _configs(25, 20), ids=str)
def test_balls_in_bins_between_the_simulated_allocation_and_poisson(config):
    """The random-allocation answer (fresh bins, one of t = ⌊n/b⌋ batches per epoch) is below the shuffle answer (no
    amplification), at most dp_accounting's Poisson PLD at q = 1/t·(1 + 1e-3) over the same t·E steps (Feldman &
    Shenfeld 2025 bound random allocation by Poisson at a rate (1 + o(1))/t), and at least a one-sided 95 %
    Monte-Carlo lower bound from the simulated allocation."""
    allocation = FAMILY.privacy(config | {"sampling": "balls-in-bins"}, DELTA, "best").epsilon
    assert allocation <= FAMILY.privacy(config | {"sampling": "shuffle"}, DELTA, "best").epsilon
    bins = config["dataset_size"] // config["batch_size"]
    poisson = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(1.0 / bins * (1 + 1e-3), dpa.GaussianDpEvent(config["noise_multiplier"])),
        bins * config["epochs"],
    )
    assert allocation <= dpa_pld_epsilon(poisson, DELTA)
    lower, accounted = _audit(config | {"sampling": "balls-in-bins"}, trials=2048, seed=int(config["dataset_size"]))
    assert accounted == pytest.approx(allocation, rel=1e-9)
    assert lower <= allocation


def _truncated_configs(count: int) -> list[tuple[int, float, int, float, int]]:
    rng = np.random.default_rng(2508)
    configs = []
    for _ in range(count):
        n = int(rng.choice([1000, 5000, 60000]))
        q = float(rng.uniform(0.002, 0.05))
        expected = n * q
        cap = max(1, int(expected + rng.uniform(-1.0, 3.0) * math.sqrt(expected)))
        configs.append((n, q, cap, float(rng.uniform(0.8, 2.5)), int(rng.integers(10, 1000))))
    return configs


@pytest.mark.slow
@pytest.mark.parametrize(("n", "q", "cap", "z", "steps"), _truncated_configs(20))
def test_truncated_poisson_matches_dp_accounting(n, q, cap, z, steps):
    event = dpa.SelfComposedDpEvent(dpa.TruncatedSubsampledGaussianDpEvent(n, q, cap, z), steps)
    expected = dpa_pld_epsilon(event, DELTA)
    params = {
        "dataset_size": n,
        "batch_size": max(1, round(q * n)),
        "steps": steps,
        "noise_multiplier": z,
        "sampling": "truncated-poisson",
        "max_batch_size": cap,
    }
    # the family's q is batch_size/dataset_size: compare through the event at dp_accounting's exact q
    tree = {
        "type": "repeated",
        "count": steps,
        "mechanism": {
            "type": "truncated-poisson-sampled",
            "dataset_size": n,
            "sampling_rate": q,
            "max_batch_size": cap,
            "mechanism": {"type": "gaussian", "noise_multiplier": z},
        },
    }
    tight = privacy(Composition(tree, DELTA, "tight")).epsilon
    assert tight == pytest.approx(expected, rel=1e-3)
    rdp = privacy(Composition(tree, DELTA, "rdp")).epsilon
    assert rdp >= tight * (1 - 1e-3)  # both certified; the Rényi mixture is looser
    family = FAMILY.privacy(params, DELTA, "best")
    assert family.conventions.sampling.startswith("truncated Poisson")


def test_truncated_poisson_without_cuts_is_poisson():
    """A cap of n records never cuts: the answer is the Poisson-subsampled Gaussian's."""
    plain = FAMILY.privacy(MNIST | {"epochs": 2}, DELTA, "tight").epsilon
    capped = FAMILY.privacy(MNIST | {"epochs": 2, "sampling": "truncated-poisson", "max_batch_size": 60000}, DELTA)
    assert capped.epsilon == pytest.approx(plain, rel=1e-9)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"sampling": "truncated-poisson"}, "max_batch_size"),
        ({"max_batch_size": 300}, "max_batch_size"),
        ({"sampling": "truncated-poisson", "max_batch_size": 300, "neighbouring": "replace-one"}, "neighbouring"),
    ],
)
def test_truncated_poisson_parameters_are_checked(extra, field):
    with pytest.raises(ParameterError) as info:
        FAMILY.privacy(MNIST | extra, DELTA)
    assert info.value.issues[0].loc == (field,)


@pytest.mark.parametrize(
    "extra",
    [
        {"sampling": "poisson"},
        {"sampling": "shuffle"},
        {"sampling": "balls-in-bins"},
        {"sampling": "truncated-poisson", "max_batch_size": 112},
        {"sampling": "shuffle", "neighbouring": "replace-one"},
    ],
    ids=str,
)
def test_a_verification_job_audits_each_loader_below_its_accounted_epsilon(extra):
    params = {"dataset_size": 1000, "batch_size": 100, "epochs": 3, "noise_multiplier": 0.6} | extra
    lower, accounted = _audit(params)
    assert 0.0 < lower <= accounted


def test_a_declared_loader_that_is_not_the_sampling_is_warned():
    answer = FAMILY.privacy(MNIST | {"data_loader": "shuffle"}, DELTA, "rdp")
    assert any("declared as shuffle" in w and "sampling='shuffle'" in w for w in answer.warnings)
    assert not any("declared" in w for w in FAMILY.privacy(MNIST, DELTA, "rdp").warnings)


def test_the_statement_of_a_shuffling_loader_prints_both_numbers():
    answer = FAMILY.privacy(MNIST | {"sampling": "shuffle"}, DELTA, "best", statement=True)
    poisson = FAMILY.privacy(MNIST, DELTA, "rdp").epsilon
    assert f"ε = {answer.epsilon:.4g}" in answer.statement
    assert f"gives ε = {poisson:.4g}, which is not valid" in answer.statement
    assert "no amplification" in answer.statement


def test_compose_loader_nodes():
    gaussian = {"type": "gaussian", "noise_multiplier": 1.3}
    for kind in ("shuffled", "balls-in-bins"):
        tree = {"type": kind, "epochs": 7, "mechanism": gaussian}
        answer = privacy(Composition(tree, DELTA, "best"))
        assert answer.epsilon == pytest.approx(gaussian_epsilon(1.3, DELTA, 7), rel=1e-9)
        assert any("no amplification" in w for w in answer.warnings)
    with pytest.raises(ParameterError) as info:
        privacy(Composition({"type": "shuffled", "epochs": 0, "mechanism": gaussian}, DELTA, "rdp"))
    assert info.value.issues[0].loc == ("mechanism", "epochs")
    bad = {"type": "truncated-poisson-sampled", "dataset_size": 100, "sampling_rate": 0.1, "max_batch_size": -1}
    with pytest.raises(ParameterError) as info:
        privacy(Composition(bad | {"mechanism": gaussian}, DELTA, "rdp"))
    assert info.value.issues[0].loc == ("mechanism", "max_batch_size")


@pytest.mark.parametrize("bins", ["fresh", "persistent"])
@pytest.mark.parametrize("epochs", [1, 3])
def test_a_verification_job_batches_the_canary_as_the_bins_do(bins, epochs):
    """A verification job's audit of balls-in-bins batches the canary in one of ⌊n/b⌋ bins per epoch (the same bin
    every epoch where persistent): its Monte-Carlo lower bound is at most the accounted ε and, on this small instance
    (10 bins, 20 000 trials), within a factor 5 of it (measured 2.1–4.1)."""
    params = {
        "dataset_size": 200,
        "batch_size": 20,
        "epochs": epochs,
        "noise_multiplier": 1.0,
        "sampling": "balls-in-bins",
        "bins": bins,
    }
    lower, accounted = _audit(params, trials=20000, seed=7)
    assert accounted == pytest.approx(FAMILY.privacy(params, DELTA, "best").epsilon, rel=1e-9)
    assert accounted / 5 <= lower <= accounted


def test_a_verification_job_refuses_several_bins_per_epoch():
    params = {"dataset_size": 200, "batch_size": 20, "epochs": 1, "noise_multiplier": 1.0}
    with pytest.raises(ParameterError) as refused:
        plan_job(
            FAMILY, params | {"sampling": "balls-in-bins", "num_selected": 2}, DELTA, ("privacy-audit",), 64, 0, {}
        )
    assert refused.value.issues[0].loc == ("num_selected",)


def test_persistent_bins_are_never_below_fresh_bins_and_equal_one_epoch_at_the_composed_noise():
    """dp-sgd with persistent bins over E epochs answers exactly the random allocation of a Gaussian at z/√E (one
    epoch), at least the fresh-bins answer; both below the shuffle answer."""
    base = {"dataset_size": 10000, "batch_size": 100, "epochs": 4, "noise_multiplier": 1.2, "sampling": "balls-in-bins"}
    persistent = FAMILY.privacy(base | {"bins": "persistent"}, DELTA, "tight").epsilon
    fresh = FAMILY.privacy(base, DELTA, "tight").epsilon
    tree = {
        "type": "random-allocation",
        "num_steps": 100,
        "num_selected": 1,
        "mechanism": {"type": "gaussian", "noise_multiplier": 1.2 / 2.0},
    }
    direct = privacy(Composition(tree, DELTA, "tight")).epsilon
    assert persistent == pytest.approx(direct, rel=1e-12)
    assert fresh <= persistent <= FAMILY.privacy(base | {"sampling": "shuffle"}, DELTA, "tight").epsilon
