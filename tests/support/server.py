"""A dpcal server on loopback, started and stopped by the tests themselves, and the process-tree probes the service
tests use (Linux /proc).

No web import at module level: library tests run without the web stack (httpx is imported where a server is used)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(env: dict[str, str] | None = None, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """A dpcal server on a free loopback port (``args``: more ``dpcal serve`` options); its job database is a fresh
    temporary file unless env names one."""
    port = free_port()
    folder = tempfile.mkdtemp(prefix="dpcal-test-")  # the server's temporary files (TMPDIR), removed with it
    database = env.get("DPCAL_JOBS_DB") if env else None
    if database is None:
        database = os.path.join(folder, "jobs.sqlite3")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *args],
        cwd=ROOT,
        env={
            **os.environ,
            "DPCAL_LOG_LEVEL": "warning",
            "DPCAL_JOB_WORKERS": "2",
            "TMPDIR": folder,
            **(env or {}),
            "DPCAL_JOBS_DB": database,
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _FOLDERS[process.pid] = folder
    import httpx

    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not start within 60 s")


def wait_until_ready(url: str, timeout: float = 60.0) -> None:
    """Until ``/readyz`` answers 200 (the fork server runs: a heavy request starts at once)."""
    import httpx

    deadline = time.monotonic() + timeout
    while httpx.get(f"{url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, "the server never became ready"
        time.sleep(0.1)


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and every live descendant (Linux /proc), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
    tree, frontier = {pid}, [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(times.get(p, 0.0) for p in tree)


def wait_until_idle(pid: int, window: float = 1.0, limit: float = 0.1, timeout: float = 120.0) -> None:
    """Wait until the process tree of ``pid`` uses less than ``limit`` CPU seconds in ``window`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = tree_cpu_seconds(pid)
        time.sleep(window)
        if tree_cpu_seconds(pid) - before < limit:
            return
    raise AssertionError(f"process tree of {pid} still busy after {timeout} s")


_FOLDERS: dict[int, str] = {}
"""Each started server's temporary folder, by process id."""


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and remove its temporary files (its job database, unless the caller named one, and what its
    processes left in TMPDIR)."""
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)
    folder = _FOLDERS.pop(process.pid, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
