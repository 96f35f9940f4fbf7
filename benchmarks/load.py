"""The service under load: an open-loop load on loopback, 15 s per rate, printing p50/p95/p99 and errors.

Open loop: request i is due at i/rate whatever happened before, and its latency counts from when it was due, so a
slow server cannot slow the load down and hide its own queueing. Every request differs (a fresh noise multiplier),
so the answer cache does not help; each rate is first held for 2 s unmeasured (the server's thread pool and the
client's connections grow to the load then). The load generator is a minimal HTTP/1.1 client over pooled keep-alive
connections (:class:`LoopbackClient`): it shares the 2 cores with the server, and httpx spent 3.9 ms of CPU per
request there — as much as the server's whole answer — so with httpx the benchmark measured its own client. Scenarios:

1. ``dp-sgd`` privacy with ``accountant: "rdp"`` (a Rényi curve), and a closed-form algorithm
   (``phased-output-perturbation`` privacy, best = exact Gaussian composition);
2. ``/healthz`` and ``dp-sgd`` rdp privacy while 4 uncached tight calibrations (PLD searches) run all the time.

    .venv/bin/python benchmarks/load.py [--seconds 15] [--rate 200] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MNIST = {"dataset_size": 60000, "batch_size": 256, "epochs": 60}
POP = {"problem_class": "convex", "dataset_size": 4096, "dimension": 10, "lipschitz": 1.0, "diameter": 1.0}
counter = itertools.count(1)


def rdp_privacy() -> tuple[str, dict]:
    z = 0.8 + next(counter) * 1e-7
    params = {**MNIST, "noise_multiplier": z}
    return "/v1/privacy", {"algorithm": "dp-sgd", "params": params, "delta": 1e-5, "accountant": "rdp"}


def closed_form_privacy() -> tuple[str, dict]:
    params = {**POP, "noise_multiplier": 4.0 + next(counter) * 1e-7}
    return "/v1/privacy", {"algorithm": "phased-output-perturbation", "params": params, "delta": 1e-5}


def tight_calibration() -> tuple[str, dict]:
    target = 2.0 + next(counter) * 1e-5
    return "/v1/calibrate", {"algorithm": "dp-sgd", "params": MNIST, "target_epsilon": target, "delta": 1e-5}


class LoopbackClient:
    """HTTP/1.1 over a pool of keep-alive connections, the least a load generator can spend per request.

    Requests are written whole and answers read by ``Content-Length`` (what the service sends); a connection that
    fails is dropped and the request counts as an error."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict[str, str], bytes]:
        payload = b"" if body is None else json.dumps(body).encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {len(payload)}\r\n"
        if body is not None:
            head += "Content-Type: application/json\r\n"
        message = head.encode() + b"\r\n" + payload
        while self.idle:  # the server closes keep-alive connections idle for 5 s: retry those on a fresh one
            reader, writer = self.idle.pop()
            if not reader.at_eof():
                try:
                    return await self._exchange(reader, writer, message)
                except (OSError, asyncio.IncompleteReadError):
                    continue
            writer.close()
        return await self._exchange(*await asyncio.open_connection(self.host, self.port), message)

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, message: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        try:
            writer.write(message)
            status_line, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
            content = await reader.readexactly(int(headers.get("content-length", "0")))
        except BaseException:
            writer.close()
            raise
        self.idle.append((reader, writer))
        return int(status_line.split()[1]), headers, content

    async def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


async def open_loop(
    client: LoopbackClient, make: Callable[[], tuple[str, dict] | str], rate: float, seconds: float
) -> tuple[np.ndarray, int]:
    """Send ``rate`` requests per second for ``seconds``; latencies (s) from each request's due time, errors."""
    latencies: list[float] = []
    errors = 0
    start = time.perf_counter() + 0.05

    async def one(due: float, request: tuple[str, dict] | str) -> None:
        nonlocal errors
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        try:
            if isinstance(request, str):
                status, _, _ = await client.request("GET", request)
            else:
                status, _, _ = await client.request("POST", *request)
            if status != 200:
                errors += 1
                print(f"  {status} from {request if isinstance(request, str) else request[0]}", file=sys.stderr)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as error:
            errors += 1
            print(f"  {type(error).__name__}: {error}", file=sys.stderr)
        latencies.append(time.perf_counter() - due)

    count = int(rate * seconds)
    await asyncio.gather(*(one(start + i / rate, make()) for i in range(count)))
    return np.array(latencies), errors


async def background_calibrations(client: LoopbackClient, stop: asyncio.Event, parallel: int) -> list[int]:
    """Keep ``parallel`` uncached tight calibrations running until ``stop``; returns their status codes."""
    statuses: list[int] = []

    async def loop() -> None:
        while not stop.is_set():
            path, body = tight_calibration()
            try:
                status, headers, _ = await asyncio.wait_for(client.request("POST", path, body), 120)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                statuses.append(0)
                continue
            statuses.append(status)
            if status == 503:
                await asyncio.sleep(float(headers.get("retry-after", "1")))

    await asyncio.gather(*(loop() for _ in range(parallel)))
    return statuses


def report(name: str, rate: float, latencies: np.ndarray, errors: int) -> None:
    p50, p95, p99 = (1000 * np.percentile(latencies, q) for q in (50, 95, 99))
    print(f"{name:52} {rate:6.0f}/s  p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  p99 {p99:7.1f} ms  errors {errors}")


async def run(port: int, seconds: float, rate: float) -> None:
    client = LoopbackClient("127.0.0.1", port)
    try:
        for name, make in (
            ("dp-sgd privacy, accountant rdp", rdp_privacy),
            ("closed form (POP privacy)", closed_form_privacy),
        ):
            await open_loop(client, make, rate, 2)  # warm-up at the rate: connections, pool threads, caches
            report(name, rate, *await open_loop(client, make, rate, seconds))
        stop = asyncio.Event()
        heavy = asyncio.create_task(background_calibrations(client, stop, 4))
        await asyncio.sleep(1.0)
        for name, make in (
            ("/healthz, beside 4 tight calibrations", lambda: "/healthz"),
            ("dp-sgd rdp privacy, beside 4 tight calibrations", rdp_privacy),
        ):
            report(name, 50, *await open_loop(client, make, 50, seconds))
        stop.set()
        statuses = await heavy
        done = sum(s == 200 for s in statuses)
        print(f"tight calibrations meanwhile: {done} answered, {sum(s == 503 for s in statuses)} refused (503)")
    finally:
        await client.close()


@contextlib.contextmanager
def served(workers: int, max_heavy: int = 4) -> Iterator[int]:
    """A dpcal server on a free loopback port (``workers`` processes, at most ``max_heavy`` heavy requests at once),
    started, waited for and stopped; yields its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    database = os.path.join(tempfile.mkdtemp(prefix="dpcal-bench-"), "jobs.sqlite3")
    env = {**os.environ, "DPCAL_LOG_LEVEL": "warning", "DPCAL_JOBS_DB": database, "DPCAL_JOB_WORKERS": "1"}
    env["DPCAL_MAX_HEAVY"] = str(max_heavy)
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", str(workers)], cwd=ROOT, env=env
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.2)
        time.sleep(3.0)  # let the fork server and the job workers finish importing
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with served(args.workers) as port:  # the 4 background calibrations all run
        processes = f"{args.workers} server process(es), {os.cpu_count()} cores"
        print(f"dpcal on port {port}, {processes}; {args.seconds:g} s per rate")
        asyncio.run(run(port, args.seconds, args.rate))


if __name__ == "__main__":
    main()
