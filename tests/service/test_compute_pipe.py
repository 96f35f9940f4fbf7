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

import uvloop

from app.compute import Compute, _Running
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
        status, value = runner.run(compute._wait(_StayingClient(), _Running(None, reader)))  # type: ignore[arg-type]
    thread.join()
    assert (status, value) == ("ok", "x" * 200_000)
