"""The host's contention (the stretch a job's estimate gets): the mean of the minute's load average and the tasks
runnable now, less the reader, per core, plus the work itself; never below 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import host


@pytest.mark.parametrize(
    ("average", "runnable", "cores", "expected"),
    [
        (0.0, 1, 2, 1.0),  # idle: only the reader runs
        (5.0, 1, 2, 1.25),  # a burst that just ended: ((5 + 0) / 2 − 1 + 1) / 2
        (1.0, 5, 2, 1.25),  # a burst that just began: ((1 + 4) / 2 − 1 + 1) / 2
        (4.0, 5, 2, 2.0),  # sustained: three others and the work on two cores
        (4.0, 5, 8, 1.0),  # the same work on eight cores is not slowed
    ],
)
def test_contention_weighs_the_minute_and_the_moment(monkeypatch, average, runnable, cores, expected):
    monkeypatch.setattr(host.os, "getloadavg", lambda: (average, 0.0, 0.0))
    monkeypatch.setattr(host.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(Path, "read_text", lambda self: f"{average} 0.00 0.00 {runnable}/90 4242\n")
    assert host.contention() == pytest.approx(expected)


def test_contention_without_a_load_average_is_one(monkeypatch):
    def missing() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(host.os, "getloadavg", missing)
    assert host.contention() == 1.0
