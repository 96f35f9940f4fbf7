"""The simulated data loaders of dp-sgd verification jobs draw the batches they claim (seeded chi-square and exact
checks, independent of how they are drawn), and the vectorised training matches a per-trial reference loop."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from accountants.families.dp_sgd.batches import Loader, batch_chunks, uniform_subsets
from accountants.families.dp_sgd.simulate import _train

P_FLOOR = 1e-4  # seeded: a fixed draw either passes or fails; this only bounds the chance of a false alarm


def _subset_counts(sizes: np.ndarray, n: int, repeats: int, seed: int) -> dict[tuple[int, ...], int]:
    rng = np.random.default_rng(seed)
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(repeats):
        flat = uniform_subsets(rng, sizes, n)
        for row in np.split(flat, np.cumsum(sizes)[:-1]):
            assert len(set(row.tolist())) == row.size, "a record twice in one batch"
            key = tuple(sorted(row.tolist()))
            counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.parametrize(("n", "k"), [(5, 2), (6, 5), (7, 3)])
def test_uniform_subsets_are_uniform_over_all_subsets(n, k):
    """Every k-subset equally likely (6 choose 5: a trial's draws often hold fewer than 5 values and are redrawn)."""
    counts = _subset_counts(np.full(400, k), n, 60, seed=n * 10 + k)
    cells = list(itertools.combinations(range(n), k))
    assert set(counts) <= set(cells)
    observed = np.array([counts.get(c, 0) for c in cells])
    assert stats.chisquare(observed).pvalue > P_FLOOR


def test_uniform_subsets_take_every_record_when_asked_for_all():
    rng = np.random.default_rng(1)
    flat = uniform_subsets(rng, np.array([8, 0, 8]), 8)
    assert sorted(flat[:8].tolist()) == list(range(8)) and sorted(flat[8:].tolist()) == list(range(8))


@pytest.mark.parametrize("records", [1000, 64])  # 50 of 1000: index lists; 16 of 64: random keys
def test_poisson_batches_have_binomial_sizes_and_uniform_records(records):
    q = 50 / 1000 if records == 1000 else 0.25
    loader = Loader("poisson", records, q, records)
    rng = np.random.default_rng(7)
    sizes, hits = [], np.zeros(records)
    for chunk in batch_chunks(rng, 64, loader, 200):
        assert chunk.records is not None
        sizes.append(chunk.sizes.ravel())
        hits += np.bincount(chunk.records, minlength=records)
    drawn = np.concatenate(sizes)
    assert drawn.size == 64 * 200
    mean, var = records * q, records * q * (1 - q)
    assert abs(drawn.mean() - mean) < 5 * math.sqrt(var / drawn.size)
    assert abs(drawn.var() / var - 1) < 0.1
    assert stats.chisquare(hits).pvalue > P_FLOOR  # every record equally often


@pytest.mark.parametrize("sampling", ["fixed-size", "truncated-poisson"])
def test_fixed_and_truncated_batches_respect_their_size(sampling):
    loader = Loader(sampling, 500, 0.1, 52)
    rng = np.random.default_rng(3)
    hits = np.zeros(500)
    for chunk in batch_chunks(rng, 64, loader, 100):
        assert chunk.records is not None
        if sampling == "fixed-size":
            assert np.all(chunk.sizes == 50)
        else:
            assert chunk.sizes.max() <= 52 and chunk.sizes.mean() < 50  # the cap cuts the upper tail
        hits += np.bincount(chunk.records, minlength=500)
    assert stats.chisquare(hits).pvalue > P_FLOOR


@pytest.mark.parametrize("sampling", ["poisson", "fixed-size", "truncated-poisson"])
def test_large_batches_by_random_keys_have_their_sizes_and_uniform_records(sampling):
    """Half the records per batch: past SPARSE_FRACTION, batches come from one key per record."""
    loader = Loader(sampling, 200, 0.5, 104)
    rng = np.random.default_rng(9)
    hits, sizes = np.zeros(200), []
    for chunk in batch_chunks(rng, 64, loader, 100):
        assert chunk.records is not None
        for row in np.split(chunk.records, np.cumsum(chunk.sizes.ravel())[:-1]):
            assert np.unique(row).size == row.size
        sizes.append(chunk.sizes.ravel())
        hits += np.bincount(chunk.records, minlength=200)
    drawn = np.concatenate(sizes)
    if sampling == "fixed-size":
        assert np.all(drawn == 100)
    elif sampling == "truncated-poisson":
        assert drawn.max() == 104 and np.mean(drawn == 104) > 0.2  # Binomial(200, ½) above the cap: cut to it
    else:
        assert abs(drawn.mean() - 100) < 5 * math.sqrt(50 / drawn.size) and drawn.max() > 104
    assert stats.chisquare(hits).pvalue > P_FLOOR


def test_full_batches_are_every_record():
    for loader in (Loader("poisson", 50, 1.0, 50), Loader("fixed-size", 50, 1.0, 50)):
        chunks = list(batch_chunks(np.random.default_rng(0), 8, loader, 5))
        assert all(c.records is None and np.all(c.sizes == 50) for c in chunks) and sum(c.steps for c in chunks) == 5


@pytest.mark.parametrize("sampling", ["shuffle", "balls-in-bins"])
def test_shuffling_loaders_use_each_record_once_per_epoch(sampling):
    loader = Loader(sampling, 103, 10 / 103, 103)
    assert loader.slots == (11 if sampling == "shuffle" else 10)  # ⌈n/b⌉ batches; ⌊n/b⌋ bins (as accounted)
    rng = np.random.default_rng(5)
    per_trial = np.zeros((4, 103), dtype=int)
    steps = list(batch_chunks(rng, 4, loader, loader.slots))  # one epoch
    for chunk in steps:
        assert chunk.records is not None
        rows = np.repeat(np.arange(4), chunk.sizes.ravel())
        np.add.at(per_trial, (rows, chunk.records), 1)
    assert np.all(per_trial == 1)
    if sampling == "shuffle":
        assert [int(c.sizes[0, 0]) for c in steps] == [10] * 10 + [3]


def test_persistent_bins_keep_each_record_in_its_batch():
    """balls-in-bins with persistent bins: every epoch batches the same records at the same step (fresh bins: not)."""
    for persistent in (True, False):
        loader = Loader("balls-in-bins", 50, 10 / 50, 50, persistent)
        chunks = list(batch_chunks(np.random.default_rng(3), 2, loader, 3 * loader.slots))
        epochs = [
            [sorted(c.records.tolist()) for c in chunks[e * loader.slots : (e + 1) * loader.slots]] for e in range(3)
        ]
        assert (epochs[0] == epochs[1] == epochs[2]) is persistent


def _reference_loss(rng, features, labels, q, steps, clip, std, lr):
    """One DP-SGD run, record by record: Poisson batches, clipped per-example gradients, Gaussian noise."""
    n, d = features.shape
    theta = np.zeros(d)
    for _ in range(steps):
        chosen = np.flatnonzero(rng.random(n) < q)
        grads = np.zeros(d)
        for j in chosen:
            g = -labels[j] * features[j] / (1.0 + math.exp(labels[j] * features[j] @ theta))
            grads += g * min(1.0, clip / max(float(np.linalg.norm(g)), 1e-300))
        theta -= lr * (grads + std * rng.standard_normal(d)) / (q * n)
    return float(np.mean(np.logaddexp(0.0, -labels * (features @ theta))))


@pytest.mark.slow
@pytest.mark.parametrize("q", [0.05, 1.0])
def test_vectorised_training_has_the_reference_loops_loss_distribution(q):
    """The mean final loss of 512 vectorised runs equals that of 200 record-by-record runs (two-sample t-test)."""
    rng = np.random.default_rng(11)
    features, labels = rng.standard_normal((200, 3)), np.where(rng.random(200) < 0.5, 1.0, -1.0)
    p = {
        "clip_norm": 0.5,
        "noise_multiplier": 1.0,
        "neighbouring": "add-remove",
        "sampling": "poisson",
        "dataset_size": 200,
    }
    problem = {"sampling_rate": q, "learning_rate": 0.5, "steps": 20}
    fast = _train(np.random.default_rng(1), 512, features, labels, p, problem)
    slow = [_reference_loss(rng, features, labels, q, 20, 0.5, 0.5, 0.5) for _ in range(200)]
    assert stats.ttest_ind(fast, slow, equal_var=False).pvalue > P_FLOOR
    assert abs(np.std(fast) / np.std(slow) - 1) < 0.25
