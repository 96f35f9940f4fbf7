"""A heavy answer is read whole however the child's writes arrive: multiprocessing sends an answer over 16 KiB as a
header and a payload in two writes, and the event loop (uvloop) leaves the pipe non-blocking, so a read between the
two used to fail with BlockingIOError (a 500)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import struct
import threading
import time
from multiprocessing.connection import Connection

import uvloop

from app.compute import Compute
from app.heavy import HeavyProcess
from app.settings import Settings


class _StayingClient:
    async def is_disconnected(self) -> bool:
        return False


def test_an_answer_written_in_two_pieces_is_read_whole(tmp_path):
    compute = Compute(Settings(jobs_db=str(tmp_path / "jobs.sqlite3")))
    reader, writer = multiprocessing.Pipe(duplex=False)
    payload = pickle.dumps(("ok", "x" * 200_000))

    def child() -> None:
        os.write(writer.fileno(), struct.pack("!i", len(payload)))
        time.sleep(0.5)  # the parent wakes on the header and must wait for the rest
        view = memoryview(payload)
        while view:
            view = view[os.write(writer.fileno(), view) :]
        writer.close()

    thread = threading.Thread(target=child)
    thread.start()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        status, value = runner.run(compute._wait(_StayingClient(), HeavyProcess(None, reader)))  # type: ignore[arg-type]
    thread.join()
    assert (status, value) == ("ok", "x" * 200_000)


class _OddError(ValueError):
    """An exception whose ``__init__`` takes other arguments than its ``args`` (plain pickling cannot rebuild it)."""

    def __init__(self, code: int, words: str) -> None:
        self.code = code
        super().__init__(f"{words} ({code})")


def _raise_odd() -> None:
    raise _OddError(7, "odd failure")


def _raise_unsupported() -> None:
    from accountants.events import LaplaceEvent, PoissonSampledEvent
    from accountants.rdp import UnsupportedEventError

    raise UnsupportedEventError(PoissonSampledEvent(0.1, LaplaceEvent(1.0)), "a reason", "PLD")


def _serve(theirs: Connection, mine: Connection) -> None:
    """app.worker.serve in a forked child, without its copy of the parent's end (the forkserver children the
    service starts never get one): closing the parent's end then ends the loop."""
    from app import worker

    mine.close()
    worker.serve(theirs)


def _child_outcome(function: object) -> tuple[str, object]:
    """What the parent reads when a heavy-computation process runs ``function`` (app.worker.serve in a forked child,
    which exits once the parent closes its end)."""
    context = multiprocessing.get_context("fork")
    mine, theirs = context.Pipe(duplex=True)
    process = context.Process(target=_serve, args=(theirs, mine))
    process.start()
    theirs.close()
    mine.send((function, (), None))
    outcome = mine.recv()
    mine.close()
    process.join(timeout=10)
    assert process.exitcode == 0
    return outcome


def test_an_error_raised_in_the_worker_arrives_as_the_same_exception():
    status, error = _child_outcome(_raise_odd)
    assert status == "error" and type(error) is _OddError
    assert str(error) == "odd failure (7)" and error.code == 7  # type: ignore[attr-defined]


def test_an_unsupported_event_in_the_worker_gets_the_problem_it_would_in_process():
    from app.problems import unsupported_event

    status, error = _child_outcome(_raise_unsupported)
    assert status == "error"
    in_process = unsupported_event("/v1/compose", _unsupported())
    from_child = unsupported_event("/v1/compose", error)  # type: ignore[arg-type]
    assert (from_child.status, from_child.detail, from_child.extensions) == (
        in_process.status,
        in_process.detail,
        in_process.extensions,
    )


def _unsupported() -> Exception:
    try:
        _raise_unsupported()
    except Exception as error:
        return error
    raise AssertionError("unreachable")


def test_a_process_that_ends_without_an_answer_is_a_named_503(tmp_path):
    """The child's end of the pipe closes before any answer (the process died: killed, out of memory, could not
    start): a 503 naming it, with Retry-After, never an unhandled error (a 500)."""
    from app.problems import ApiProblem

    compute = Compute(Settings(jobs_db=str(tmp_path / "jobs.sqlite3")))
    reader, writer = multiprocessing.Pipe(duplex=False)
    os.write(writer.fileno(), struct.pack("!i", 1000))  # a header, then nothing: the answer never comes
    writer.close()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        try:
            runner.run(compute._wait(_StayingClient(), HeavyProcess(None, reader)))  # type: ignore[arg-type]
        except ApiProblem as problem:
            assert (problem.status, problem.slug) == (503, "computation-process-died")
            assert "Retry-After" in problem.headers
        else:
            raise AssertionError("a process without an answer was not reported")
