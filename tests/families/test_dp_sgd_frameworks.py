"""dp-sgd's ``framework`` conventions: the sampling rate q and the step count T computed from (n, b, epochs) as
Opacus, TensorFlow Privacy and jax_privacy compute them (read off the mechanism plan, against each library's published
formula written out here), and Opacus's own answer on the case users compare with."""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest

from accountants import registry
from accountants.errors import ParameterError

from ..support.oracles import dpa_pld_epsilon

FAMILY = registry.get("dp-sgd")
DELTA = 1e-5


def _q_and_steps(params: dict[str, object]) -> tuple[float, int]:
    plan = FAMILY.plan(params, DELTA)
    assert plan is not None
    event = plan.event
    return event.event.sampling_rate, event.count  # SelfComposedEvent(PoissonSampledEvent(q, Gaussian), T)


def _configs(count: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(34)
    return [
        (int(rng.integers(100, 10**6)), int(rng.integers(1, 2000)), int(rng.integers(1, 100))) for _ in range(count)
    ]


@pytest.mark.parametrize(("n", "b", "epochs"), _configs(12))
def test_each_framework_computes_q_and_steps_by_its_formula(n, b, epochs):
    b = min(b, n)
    base = {"dataset_size": n, "batch_size": b, "epochs": epochs, "noise_multiplier": 1.0}
    # Opacus: DPDataLoader's sample_rate = 1/len(data_loader), len = ⌈n/b⌉ (drop_last=False); epochs full passes
    batches = (n + b - 1) // b
    assert _q_and_steps(base | {"framework": "opacus"}) == (1 / batches, epochs * batches)
    # TensorFlow Privacy's compute_dp_sgd_privacy_statement: q = b/n, count = ceil(num_epochs / q), in floats
    q = b / n
    assert _q_and_steps(base | {"framework": "tensorflow_privacy"}) == (q, math.ceil(epochs / q))
    # jax_privacy's DpsgdTrainingAccountant: q = batch_size/num_samples over num_updates steps
    steps = {k: v for k, v in base.items() if k != "epochs"} | {"steps": 3 * epochs}
    assert _q_and_steps(steps | {"framework": "jax_privacy"}) == (q, 3 * epochs)


def test_tensorflow_privacys_float_arithmetic_is_reproduced():
    """ceil(60 / (10/1195)) is 7171 in floats, one more than ⌈60·1195/10⌉ = 7170 (dpcal's own ceil)."""
    base = {"dataset_size": 1195, "batch_size": 10, "epochs": 60, "noise_multiplier": 1.0}
    assert _q_and_steps(base | {"framework": "tensorflow_privacy"})[1] == 7171
    assert _q_and_steps(base)[1] == 7170


def test_opacus_convention_gives_opacus_answer():
    """n = 50 000, b = 512, 20 epochs, σ = 0.9, δ = 1e-5: Opacus's PRV accountant reports 3.2671 (its eps_error
    0.01); dpcal's own convention (q = b/n, 1 954 steps) gives 3.2747. With framework='opacus' (q = 1/98, 1 960
    steps) the tight answer is Opacus's, and dp_accounting's PLD of the same steps agrees."""
    params = {"dataset_size": 50000, "batch_size": 512, "epochs": 20, "noise_multiplier": 0.9, "framework": "opacus"}
    answer = FAMILY.privacy(params, DELTA, "tight")
    assert answer.epsilon == pytest.approx(3.2671, abs=0.01)
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(1 / 98, dpa.GaussianDpEvent(0.9)), 1960)
    assert answer.epsilon == pytest.approx(dpa_pld_epsilon(event, DELTA), rel=1e-3)
    assert answer.conventions.steps == 1960 and "1/⌈50000/512⌉" in answer.conventions.sampling
    assert FAMILY.privacy({k: v for k, v in params.items() if k != "framework"}, DELTA, "tight").epsilon > 3.274


@pytest.mark.parametrize(
    ("extra", "field"),
    [({"epoch_rounding": "floor"}, "epoch_rounding"), ({"sampling": "shuffle"}, "framework")],
)
def test_a_framework_with_a_rule_it_replaces_is_refused(extra, field):
    params = {"dataset_size": 50000, "batch_size": 512, "epochs": 20, "noise_multiplier": 0.9, "framework": "opacus"}
    with pytest.raises(ParameterError) as raised:
        FAMILY.privacy(params | extra, DELTA)
    assert [issue.loc for issue in raised.value.issues] == [(field,)]
