"""What the processes of one service share on a host: lock files (``flock``, released by the kernel when their
holder dies) and the rule that a child process ends with its parent.

Kept free of heavy imports: job workers run :func:`exit_with_parent` as their pool initializer.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path


def try_lock(path: Path) -> int | None:
    """An exclusive ``flock`` on ``path`` (created with its folder if missing): the held file descriptor (close it to
    release), or None when another open file already holds it (in this process or another)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class HostSlots:
    """At most ``count`` holders at once on this host: slot i is an exclusive lock on ``directory/slot-i``."""

    def __init__(self, directory: Path, count: int) -> None:
        self.paths = [directory / f"slot-{i}" for i in range(count)]

    def try_acquire(self) -> int | None:
        """A held slot's file descriptor, or None when every slot is taken."""
        for path in self.paths:
            fd = try_lock(path)
            if fd is not None:
                return fd
        return None

    @staticmethod
    def release(fd: int) -> None:
        os.close(fd)  # closing the only descriptor of the open file releases its lock


def exit_with_parent(parent: int, code: int = 1, interval: float = 0.5) -> None:
    """End this process (``os._exit(code)``) once its parent is no longer ``parent``: a parent killed with SIGKILL
    cannot stop its children, which would otherwise hold ports, leases and task queues forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(code)

    threading.Thread(target=watch, name="dpcal-parent-watch", daemon=True).start()


def contention() -> float:
    """How many times longer CPU-bound work takes here than on an idle core: the other runnable work per core, plus
    the work itself (at least 1). The other work is the mean of the last minute's load average (which lags a burst by
    tens of seconds, and its end as long) and the tasks runnable now (``/proc/loadavg``'s fourth field, less the one
    reading it: the present, noisy), each less this process."""
    cores = os.cpu_count() or 1
    try:
        average = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return 1.0
    try:
        now = float(Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1.0
    except (OSError, IndexError, ValueError):  # not Linux
        now = average
    others = max(0.0, (average + now) / 2 - 1.0)
    return max(1.0, (others + 1.0) / cores)
