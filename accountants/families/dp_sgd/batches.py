"""The batches of many simulated DP-SGD runs at once, drawn as each data loader draws them (verification jobs).

Steps come in chunks (:class:`BatchChunk`): the records in each trial's batch as one step- and trial-major index list
and the batch sizes, or "every record" for full batches. Small batches cost O(batch) per trial, not O(records):

* Poisson (rate q): the batch size is Binomial(n, q) and, given its size, the batch is a uniformly random subset;
  truncated Poisson cuts the size to the cap (a uniformly random subset of the cap of the sampled records is again a
  uniformly random subset); fixed-size batches have size b.
* A uniformly random k-subset of n records: the first k distinct values of uniform draws with replacement, in draw
  order, are a uniformly random ordered sample without replacement. A trial whose draws hold fewer than k distinct
  values is drawn again from scratch (random keys, O(n)): the answer is uniform either way. Batches above
  :data:`SPARSE_FRACTION` of the records are drawn by random keys directly.
* shuffle: a permutation per epoch, batch k its slice k; balls-in-bins: each record's batch drawn uniformly per
  epoch, the records sorted by batch once per epoch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

SPARSE_FRACTION = 0.25
"""Batches of at most this fraction of the records are drawn as index lists (O(batch)); larger ones by random keys."""
DRAW_CELLS = 1 << 17
"""Most uniform draws (or keys) held at once."""


@dataclass(frozen=True)
class BatchChunk:
    """Consecutive steps' batches of every trial: ``sizes[s, j]`` records in trial j's batch at step s, and
    ``records`` all of them, step after step and within a step trial after trial. ``records`` is None for full
    batches (every record, every trial, every step of the chunk)."""

    records: np.ndarray | None
    sizes: np.ndarray

    @property
    def steps(self) -> int:
        return int(self.sizes.shape[0])


@dataclass(frozen=True)
class Loader:
    """How a simulated loader batches n records: ``sampling`` (poisson, fixed-size, truncated-poisson, shuffle,
    balls-in-bins), the sampling rate q (batch b = round(q·n)) and the cap of truncated Poisson batches."""

    sampling: str
    records: int
    sampling_rate: float
    cap: int
    persistent: bool = False
    """balls-in-bins: each record keeps its bin in every epoch."""

    @property
    def batch(self) -> int:
        return max(1, round(self.sampling_rate * self.records))

    @property
    def full(self) -> bool:
        """Every record in every batch (a Poisson rate of 1 with no cap below n, or b = n)."""
        if self.sampling == "fixed-size":
            return self.batch >= self.records
        return self.sampling_rate >= 1.0 and self.cap >= self.records

    @property
    def slots(self) -> int:
        """Batches per epoch: ⌈n/b⌉ of a shuffling loader, the ⌊n/b⌋ bins of balls-in-bins."""
        if self.sampling == "balls-in-bins":
            return max(1, self.records // self.batch)
        return max(1, -(-self.records // self.batch))


def batch_chunks(rng: np.random.Generator, trials: int, loader: Loader, steps: int) -> Iterator[BatchChunk]:
    """The batches of ``steps`` steps of ``trials`` independent runs (module docstring), a chunk of steps at a time:
    batches do not depend on the model, so they are drawn for many steps at once (at most :data:`DRAW_CELLS` draws
    in memory). Shuffling loaders yield one step per chunk."""
    if loader.sampling in ("shuffle", "balls-in-bins"):
        yield from _epoch_batches(rng, trials, loader, steps)
        return
    sparse = _sparse(loader)
    per_step = math.ceil(trials * touched_records(loader))
    done = 0
    while done < steps:
        chunk = min(steps - done, max(1, DRAW_CELLS // per_step))
        if not sparse:
            yield _dense_chunk(rng, (chunk, trials), loader)
        else:
            sizes = _sizes(rng, (chunk, trials), loader)
            yield BatchChunk(uniform_subsets(rng, sizes.ravel(), loader.records), sizes)
        done += chunk


def _largest(loader: Loader) -> int:
    """The largest batch to prepare draws for: b, or the Poisson size's mean + 8 standard deviations (+ 8)."""
    n, q = loader.records, loader.sampling_rate
    return loader.batch if loader.sampling == "fixed-size" else min(n, math.ceil(q * n + 8 * math.sqrt(q * n) + 8))


def _sparse(loader: Loader) -> bool:
    """Whether batches are drawn as index lists (at most :data:`SPARSE_FRACTION` of the records) or by keys."""
    return _largest(loader) <= SPARSE_FRACTION * loader.records


def touched_records(loader: Loader) -> float:
    """Records a trial's step touches (what its cost grows with): the uniform draws of a small batch, every record
    (three times: key, comparison, index list) for a large one, every record once for a full batch, the batch and its
    share of an epoch's sort for shuffling loaders."""
    n = loader.records
    if loader.sampling in ("shuffle", "balls-in-bins"):
        return loader.batch * (1.0 + math.log2(max(n, 2)))
    if _sparse(loader):
        return float(_draws(_largest(loader), n))
    return float(n if loader.full else 3 * n)  # a key per record, compared and listed, besides the gradients


def _dense_chunk(rng: np.random.Generator, shape: tuple[int, int], loader: Loader) -> BatchChunk:
    """Large batches by one uniform key per record: Poisson keeps keys below q (truncated Poisson then a uniformly
    random cap of them where there are more), fixed-size the b smallest keys; all records at rate 1."""
    n = loader.records
    if loader.full:
        return BatchChunk(None, np.full(shape, n))
    keys = rng.random((*shape, n))
    if loader.sampling == "fixed-size":
        included = _smallest(keys, loader.batch)
    else:
        included = keys < loader.sampling_rate
        if loader.sampling == "truncated-poisson":
            rows = included.reshape(-1, n)
            over = np.flatnonzero(rows.sum(axis=1) > loader.cap)
            if over.size:  # a uniformly random cap of the sampled records
                rows[over] = _smallest(np.where(rows[over], rng.random((over.size, n)), np.inf), loader.cap)
    return BatchChunk(np.nonzero(included)[-1], included.sum(axis=-1))


def _smallest(keys: np.ndarray, size: int) -> np.ndarray:
    """The mask of the ``size`` smallest keys along the last axis (random keys: a uniformly random subset)."""
    mask = np.zeros(keys.shape, dtype=bool)
    np.put_along_axis(mask, np.argpartition(keys, size - 1, axis=-1)[..., :size], True, axis=-1)
    return mask


def _sizes(rng: np.random.Generator, shape: tuple[int, int], loader: Loader) -> np.ndarray:
    """Batch sizes: b (fixed-size), else Binomial(n, q), cut to the cap for truncated Poisson."""
    if loader.sampling == "fixed-size":
        return np.full(shape, loader.batch)
    sizes = rng.binomial(loader.records, loader.sampling_rate, size=shape)
    return np.minimum(sizes, loader.cap) if loader.sampling == "truncated-poisson" else sizes


def _draws(largest: int, n: int) -> int:
    """Uniform draws per trial for subsets of at most ``largest`` of n records (fewer distinct values: drawn again)."""
    return math.ceil(1.25 * largest + largest * largest / n + 16)


def uniform_subsets(rng: np.random.Generator, sizes: np.ndarray, n: int) -> np.ndarray:
    """For each row j a uniformly random subset of ``sizes[j]`` of n records, concatenated row after row."""
    draws = _draws(int(sizes.max(initial=0)), n)
    bits = (draws - 1).bit_length()
    kind = np.int32 if n << bits < 2**31 else np.int64
    values = rng.integers(n, size=(sizes.size, draws), dtype=kind)
    # sorted by (value, draw): a value's first draw leads its run of equal values
    keyed = np.sort((values << bits) | np.arange(draws).astype(kind), axis=1)
    heads = keyed >> bits
    first = np.ones(values.shape, dtype=bool)
    np.not_equal(heads[:, 1:], heads[:, :-1], out=first[:, 1:])
    distinct = np.empty(values.shape, dtype=bool)  # in draw order: where a value is drawn first
    row_starts: np.ndarray = (np.arange(sizes.size) * draws).astype(kind)
    flat = (keyed & ((1 << bits) - 1)) + row_starts[:, None]
    distinct.ravel()[flat.ravel()] = first.ravel()
    seen = np.cumsum(distinct, axis=1, dtype=kind)
    kept = distinct & (seen <= sizes[:, None])
    short = np.flatnonzero(seen[:, -1] < sizes)
    if not short.size:
        return values[kept].astype(np.intp)
    rows = [values[j][kept[j]] for j in range(sizes.size)]
    for j, again in zip(short, np.split(_by_keys(rng, sizes[short], n), np.cumsum(sizes[short])[:-1]), strict=True):
        rows[j] = again
    return np.concatenate(rows)


def _by_keys(rng: np.random.Generator, sizes: np.ndarray, n: int) -> np.ndarray:
    """Uniform subsets by random keys: each trial's ``sizes[j]`` records of smallest key."""
    keys = rng.random((sizes.size, n))
    ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
    return np.nonzero(ranks < sizes[:, None])[1]


def _epoch_batches(rng: np.random.Generator, trials: int, loader: Loader, steps: int) -> Iterator[BatchChunk]:
    """shuffle: slice k of each epoch's permutation; balls-in-bins: the records allocated to batch k (drawn once for
    all epochs where persistent)."""
    n, batch, slots = loader.records, loader.batch, loader.slots
    order = np.zeros((trials, n), dtype=np.intp)
    starts = counts = np.zeros((trials, slots), dtype=np.intp)
    for step in range(steps):
        k = step % slots
        if k == 0:  # a new epoch
            if loader.sampling == "shuffle":
                order = np.argsort(rng.random((trials, n)), axis=1)
            elif loader.persistent and step > 0:
                pass  # each record keeps its bin
            else:
                place = rng.integers(slots, size=(trials, n))
                order = np.argsort(place, axis=1, kind="stable")
                cells = (np.arange(trials)[:, None] * slots + place).ravel()
                counts = np.bincount(cells, minlength=trials * slots).reshape(trials, slots)
                starts = np.cumsum(counts, axis=1) - counts
        if loader.sampling == "shuffle":
            chosen = order[:, k * batch : (k + 1) * batch]
            yield BatchChunk(chosen.ravel(), np.full((1, trials), chosen.shape[1]))
            continue
        width = int(counts[:, k].max(initial=0))
        at = np.minimum(starts[:, k, None] + np.arange(width), n - 1)
        inside = np.arange(width) < counts[:, k, None]
        yield BatchChunk(np.take_along_axis(order, at, axis=1)[inside], counts[None, :, k].copy())
