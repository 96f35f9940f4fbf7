"""The processes that compute heavy answers for one server process, kept warm between requests.

Each is forked once from the fork server (which has imported the library) and then answers requests one at a time
(:func:`app.worker.serve`). A request takes an idle one, or starts one when none is idle; after answering, the
process goes back to the idle ones, so the next heavy request neither forks (~10 ms) nor starts with cold caches (a
freshly forked child computed 10–15 % slower than a long-running process: tables, layouts and the CPU's caches
start empty). A process stopped mid-request — over its budget, or its client gone — is killed, never reused; the
next request starts another. At most ``keep`` idle processes are kept (more go away), and each retires after
:data:`MAX_ANSWERS` answers or when it holds more than :data:`MAX_IDLE_BYTES` after answering, which bounds what a
long-lived process can accumulate (memory fragmentation, caches, a large answer's tables).

The slots that bound how many heavy computations run on the host (:class:`app.host.HostSlots`) are unchanged: a
process computes only while its request holds a slot.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from . import worker

MAX_ANSWERS = 200
"""A process answers at most this many requests, then exits (the next request starts a fresh one)."""

MAX_IDLE_BYTES = 1 << 30
"""A process whose resident memory exceeds this after answering exits rather than waiting (a large answer's tables
are not held while idle)."""


@dataclass
class HeavyProcess:
    """A heavy-computation process and this side of its duplex pipe (requests out, outcomes in)."""

    process: Any  # multiprocessing.Process of the fork-server context
    connection: Connection
    answers: int = 0


class HeavyProcesses:
    """Idle heavy-computation processes of this server process (thread-safe: used from the thread pool)."""

    def __init__(self, context: Any, keep: int, log: tuple[str, str]) -> None:
        self._context, self._keep, self._log = context, keep, log
        self._idle: list[HeavyProcess] = []
        self._lock = threading.Lock()

    def take(self) -> HeavyProcess:
        """An idle process that is still alive, else a new one."""
        while True:
            with self._lock:
                if not self._idle:
                    break
                candidate = self._idle.pop()
            if candidate.process.is_alive():
                return candidate
            _close(candidate)
        return self.start()

    def start(self) -> HeavyProcess:
        """A new process (forked from the fork server)."""
        mine, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(target=worker.serve, args=(theirs, *self._log), name="dpcal-heavy")
        process.daemon = True  # ends with this server process, idle or not
        process.start()
        theirs.close()
        return HeavyProcess(process, mine)

    def give_back(self, heavy: HeavyProcess) -> None:
        """``heavy`` answered its request: idle again, unless it has answered enough, holds too much memory, or
        enough are idle."""
        heavy.answers += 1
        small = resident_bytes(heavy.process.pid) <= MAX_IDLE_BYTES
        with self._lock:
            keep = small and heavy.answers < MAX_ANSWERS and len(self._idle) < self._keep
            if keep:
                self._idle.append(heavy)
        if not keep:
            retire(heavy)

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Retire every idle process (at shutdown)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for heavy in idle:
            retire(heavy)


def send(heavy: HeavyProcess, request: tuple[Any, ...]) -> None:
    """Hand ``heavy`` one request: ``(function, args, request_id)`` (see :func:`app.worker.serve`)."""
    os.set_blocking(heavy.connection.fileno(), True)  # the event loop may have left it non-blocking
    heavy.connection.send(request)


def retire(heavy: HeavyProcess) -> None:
    """Ask an idle process to exit (closing its pipe ends its loop) and reap it; kill it if it does not."""
    heavy.connection.close()
    heavy.process.join(timeout=2.0)
    kill(heavy)


def kill(heavy: HeavyProcess) -> None:
    """Stop ``heavy`` now, whatever it is doing (over budget, client gone), and reap it."""
    if heavy.process.exitcode is None:
        heavy.process.kill()
        heavy.process.join()
    _close(heavy)


def resident_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def _close(heavy: HeavyProcess) -> None:
    if not heavy.connection.closed:
        heavy.connection.close()
    heavy.process.close()
