"""A private PostgreSQL on loopback for the tests: ``initdb`` into a temporary directory and ``pg_ctl start`` on a free
port, as the ``postgres`` user when the tests run as root (initdb refuses root), stopped by the tests.

.ci/run installs Debian's ``postgresql`` where it is missing; without it the tests that need it are skipped."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .server import free_port


def binaries() -> Path | None:
    """The directory of initdb and pg_ctl (Debian keeps them out of PATH), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


@contextmanager
def private_postgres() -> Iterator[str]:
    """A fresh PostgreSQL server; yields its URL (postgresql://postgres@127.0.0.1:port/postgres)."""
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL server binaries")
    root = Path(tempfile.mkdtemp(prefix="dpcal-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    port = free_port()
    run = {"check": True, "capture_output": True, "timeout": 120}
    subprocess.run(
        _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        **run,
    )
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
    subprocess.run(
        _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"]),
        **run,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            check=False,
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(root, ignore_errors=True)
