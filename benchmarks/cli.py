"""CPU time of one ``dpcal`` command line against a running server (``--url``) and in-process, on this machine.

Starts the service on loopback, then runs ``dpcal privacy dp-sgd … --url`` (the light path: the standard library's
HTTP client, no web or accounting import) and the same command in-process (the whole service in the command's own
process) nine times each, alternating, and prints the median user + system CPU seconds of the command's process (its
own rusage, not the server's). Run: ``python benchmarks/cli.py``.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.server import start_server, stop_server  # noqa: E402

REPETITIONS = 9
COMMAND = [
    sys.executable, "-m", "app.cli", "privacy", "dp-sgd", "-p", "dataset_size=60000", "-p", "batch_size=256",
    "-p", "epochs=60", "-p", "noise_multiplier=1.1", "--delta", "1e-5", "--accountant", "rdp",
]  # fmt: skip


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU of one run of ``argv`` (a child process: its own rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise RuntimeError(run.stderr)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    process, url = start_server()
    try:
        remote, local = [], []
        for _ in range(REPETITIONS):
            remote.append(cpu_seconds([*COMMAND, "--url", url]))
            local.append(cpu_seconds(COMMAND))
    finally:
        stop_server(process)
    print(f"dpcal privacy dp-sgd … --url:  median {statistics.median(remote):.3f} s of CPU ({REPETITIONS} runs)")
    print(f"dpcal privacy dp-sgd … (in-process): median {statistics.median(local):.3f} s of CPU")


if __name__ == "__main__":
    main()
