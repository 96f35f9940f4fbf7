"""Heavy-computation processes are kept warm between requests (app.heavy): the next request is computed by the same
process, one stopped mid-request (or killed from outside) is never reused, each retires after MAX_ANSWERS answers or
when it holds more than MAX_IDLE_BYTES, and closing retires the idle ones."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from app import heavy
from app.heavy import HeavyProcesses


@pytest.fixture
def processes():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["app.worker"])  # as the service does: each process starts with it imported
    pool = HeavyProcesses(context, keep=2, log=("text", "warning"))
    yield pool
    pool.close()


def _computed_by(pool: HeavyProcesses) -> tuple[heavy.HeavyProcess, int]:
    """Take a process, have it answer os.getpid(): (the process, the pid it answered)."""
    process = pool.take()
    heavy.send(process, (os.getpid, (), None))
    assert process.connection.poll(60), "no answer within 60 s"
    status, pid = process.connection.recv()
    assert status == "ok"
    return process, pid


def test_the_next_request_is_computed_by_the_same_warm_process(processes):
    first, pid = _computed_by(processes)
    assert pid == first.process.pid != os.getpid()
    processes.give_back(first)
    assert processes.idle() == 1
    second, again = _computed_by(processes)
    assert second is first and again == pid and processes.idle() == 0
    processes.give_back(second)


def test_a_process_stopped_mid_request_is_never_reused(processes):
    first, pid = _computed_by(processes)
    heavy.kill(first)  # as for a request over budget or a departed client
    assert processes.idle() == 0
    second, other = _computed_by(processes)
    assert other != pid
    processes.give_back(second)


def test_a_warm_process_killed_from_outside_is_replaced(processes):
    first, pid = _computed_by(processes)
    processes.give_back(first)
    os.kill(pid, signal.SIGKILL)
    first.process.join(timeout=10)
    second, other = _computed_by(processes)
    assert other != pid and second is not first
    processes.give_back(second)


def test_a_process_retires_after_its_answers_and_closing_retires_the_idle(processes, monkeypatch):
    monkeypatch.setattr(heavy, "MAX_ANSWERS", 2)
    first, pid = _computed_by(processes)
    processes.give_back(first)
    second, same = _computed_by(processes)
    assert same == pid
    processes.give_back(second)  # its second answer: retired, not kept
    assert processes.idle() == 0 and second.connection.closed
    third, other = _computed_by(processes)
    assert other != pid
    processes.give_back(third)
    processes.close()
    assert processes.idle() == 0 and third.connection.closed


def test_a_process_holding_too_much_memory_retires(processes, monkeypatch):
    monkeypatch.setattr(heavy, "MAX_IDLE_BYTES", 1)  # every process holds more
    first, pid = _computed_by(processes)
    assert heavy.resident_bytes(pid) > 1
    processes.give_back(first)
    assert processes.idle() == 0 and first.connection.closed
