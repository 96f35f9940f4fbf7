"""The PLD accountant's hold-out sweep: seeded random DP-SGD configurations and the established libraries' answers.

Configurations (issue 13): q ∈ [1e-5, 1], z ∈ [0.4, 20], T ∈ [1, 1e7], δ ∈ [1e-12, 1e-2], log-uniform, and the
neighbouring relation by a fair coin. For each, the references are

* prv-accountant 0.2.0: ``eps_lower``, estimate, ``eps_upper`` (eps_error 1e-3, delta_error δ/1000; add/remove only);
* dp_accounting 0.6.0: the optimistic PLD at vdi 1e-4 (a lower bound), and, where δ ≥ 1e-10 and T ≤ 1e6, the
  pessimistic PLD at vdi 1e-5 (an upper bound within ~1e-4 of the truth).

They take ~15 minutes on two cores (dp_accounting at vdi 1e-5 needs up to tens of GB on the longest compositions; it
runs here under an 8 GiB address-space limit, and a configuration it cannot hold is recorded with the error). The
suite reads them from ``tests/data/pld_holdout.json`` and recomputes live every configuration of at most 300 steps
whose dp_accounting references took under a second (``oracle_seconds``; 36 of 160, both relations), so the file is
checked to be the libraries' output. Regenerate with::

    .venv/bin/python -m tests.support.pld_holdout
"""

from __future__ import annotations

import json
import math
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

SEED = 1
COUNT = 160
PATH = Path(__file__).resolve().parents[1] / "data" / "pld_holdout.json"
MEMORY_LIMIT = 8 << 30


def configs(seed: int = SEED, count: int = COUNT) -> list[dict[str, Any]]:
    """The sweep's configurations, in order (index i, q, z, T, δ, relation)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        q = float(10 ** rng.uniform(-5, 0))
        z = float(10 ** rng.uniform(math.log10(0.4), math.log10(20)))
        steps = int(10 ** rng.uniform(0, 7))
        delta = float(10 ** rng.uniform(-12, -2))
        relation = "add-remove" if rng.random() < 0.5 else "replace-one"
        out.append({"i": i, "q": q, "z": z, "T": steps, "d": delta, "rel": relation})
    return out


def pessimistic_checked(config: dict[str, Any]) -> bool:
    """Where the acceptance compares with dp_accounting's pessimistic PLD at vdi 1e-5."""
    return config["d"] >= 1e-10 and config["T"] <= 1_000_000


def recomputed_live(row: dict[str, Any]) -> bool:
    """Whether the suite recomputes this configuration's references (cheap for both libraries)."""
    return bool(row["oracle_seconds"] < 1.0 and row["T"] <= 300)


def dpa_epsilon(config: dict[str, Any], vdi: float, pessimistic: bool) -> float:
    import dp_accounting as dpa
    from dp_accounting.pld import privacy_loss_distribution

    relation = (
        dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
        if config["rel"] == "add-remove"
        else dpa.NeighboringRelation.REPLACE_ONE
    )
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        config["z"],
        sampling_prob=config["q"],
        pessimistic_estimate=pessimistic,
        value_discretization_interval=vdi,
        neighboring_relation=relation,
        use_connect_dots=pessimistic,
    )
    return float(pld.self_compose(config["T"]).get_epsilon_for_delta(config["d"]))


def prv_epsilons(config: dict[str, Any]) -> tuple[float, float, float]:
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

    accountant = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(config["q"], config["z"])],
        max_self_compositions=[config["T"]],
        eps_error=1e-3,
        delta_error=config["d"] * 1e-3,
    )
    low, estimate, high = accountant.compute_epsilon(config["d"], [config["T"]])
    return float(low), float(estimate), float(high)


def oracles(config: dict[str, Any]) -> dict[str, Any]:
    """Every reference answer for one configuration (errors recorded, not raised), and dp_accounting's time."""
    out = dict(config)
    if config["rel"] == "add-remove":
        try:
            out["prv"] = list(prv_epsilons(config))
        except Exception as error:  # recorded: a reference the library cannot compute
            out["prv_err"] = repr(error)[:200]
    start = time.perf_counter()
    try:
        out["dpa_opt"] = dpa_epsilon(config, 1e-4, pessimistic=False)
    except Exception as error:
        out["opt_err"] = repr(error)[:200]
    if pessimistic_checked(config):
        try:
            out["dpa_pess5"] = dpa_epsilon(config, 1e-5, pessimistic=True)
        except Exception as error:
            out["pess_err"] = repr(error)[:200]
    out["oracle_seconds"] = round(time.perf_counter() - start, 3)
    return out


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def compute(selection: list[dict[str, Any]], workers: int = 2) -> list[dict[str, Any]]:
    with ProcessPoolExecutor(workers, initializer=_limit_memory) as pool:
        return list(pool.map(oracles, selection))


def load() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(PATH.read_text())["configurations"]
    return rows


def main() -> None:
    rows = compute(configs())
    versions = {name: metadata.version(name) for name in ("dp-accounting", "prv-accountant")}
    PATH.write_text(json.dumps({"seed": SEED, "versions": versions, "configurations": rows}, indent=1) + "\n")
    print(f"wrote {len(rows)} configurations to {PATH}", file=sys.stderr)


if __name__ == "__main__":
    main()
