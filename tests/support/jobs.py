"""Verification jobs over HTTP: a small job, polling one until it finishes, and the process probes the job tests use
(Linux /proc)."""

from __future__ import annotations

import os
import time

from .params import LAST_ITERATE_SMALL as LINEAR

LONG = LINEAR | {"steps": 2000}  # about 16 ms per block of 64 trials per 1000 steps


def body(params=LINEAR, **fields):
    return {"algorithm": "dp-sgd-last-iterate", "params": params, "delta": 1e-5} | fields


def wait(http, job_id, timeout=180, until=("succeeded", "failed", "cancelled")):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = http.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in until:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} still {job['status']}")


def children(pid):
    """Direct child processes of ``pid`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
