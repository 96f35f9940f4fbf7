"""The job store: one SQLite file (WAL, synchronous=FULL), so an accepted job survives any crash of the service.

Tables: ``jobs`` (one row per job: state, request, plan, progress, lease, result or error) and ``chunks`` (the raw
results of each completed run of blocks, so a restarted job resumes where it stopped; results are deterministic
given the seed, so resuming and re-running agree).
"""

from __future__ import annotations

import io
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINISHED = ("succeeded", "failed", "cancelled")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    status TEXT NOT NULL,
    algorithm TEXT NOT NULL,
    request TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    idempotency_key TEXT UNIQUE,
    plan TEXT NOT NULL,
    total INTEGER NOT NULL,
    completed INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    runtime REAL NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    lease_expires REAL,
    created_at REAL NOT NULL,
    started_at REAL,
    updated_at REAL NOT NULL,
    finished_at REAL,
    result TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, seq);
CREATE TABLE IF NOT EXISTS chunks (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    first_block INTEGER NOT NULL,
    last_block INTEGER NOT NULL,
    trials INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, first_block)
);
"""


@dataclass(frozen=True)
class Job:
    id: str
    status: str
    algorithm: str
    request: dict[str, Any]
    plan: dict[str, Any]
    total: int
    completed: int
    attempts: int
    runtime: float
    cancel_requested: bool
    owner: str | None
    lease_expires: float | None
    created_at: float
    started_at: float | None
    updated_at: float
    finished_at: float | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    idempotency_key: str | None
    request_hash: str

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


def iso(timestamp: float | None) -> str | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


class IdempotencyConflict(Exception):
    """The idempotency key was used before with a different request body."""

    def __init__(self, job: Job) -> None:
        super().__init__(job.id)
        self.job = job


class JobStore:
    """Thread-safe access to the job database (one connection, serialised by a lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- creation and queries ----------------------------------------------------------------------------------------

    def create(
        self,
        algorithm: str,
        request: dict[str, Any],
        request_hash: str,
        plan: dict[str, Any],
        total: int,
        idempotency_key: str | None,
        max_queued: int,
    ) -> tuple[Job, bool]:
        """Insert a queued job; returns (job, created). With a known idempotency key and the same request hash the
        existing job is returned (created=False); a different hash raises :class:`IdempotencyConflict`. Raises
        :class:`QueueFull` when ``max_queued`` jobs are already waiting."""
        now = time.time()
        with self._transaction() as db:
            if idempotency_key is not None:
                row = db.execute("SELECT * FROM jobs WHERE idempotency_key = ?", (idempotency_key,)).fetchone()
                if row is not None:
                    job = _job(row)
                    if job.request_hash != request_hash:
                        raise IdempotencyConflict(job)
                    return job, False
            queued = db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued'").fetchone()[0]
            if queued >= max_queued:
                raise QueueFull(queued)
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs").fetchone()[0]
            job_id = uuid.uuid4().hex
            db.execute(
                "INSERT INTO jobs (id, seq, status, algorithm, request, request_hash, idempotency_key, plan, total, "
                "created_at, updated_at) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    seq,
                    algorithm,
                    json.dumps(request),
                    request_hash,
                    idempotency_key,
                    json.dumps(plan),
                    total,
                    now,
                    now,
                ),
            )
            return _job(db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()), True

    def by_idempotency_key(self, key: str) -> Job | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM jobs WHERE idempotency_key = ?", (key,)).fetchone()
        return None if row is None else _job(row)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else _job(row)

    def page(self, status: str | None, limit: int, after_seq: int) -> list[Job]:
        """Jobs newest first (by creation sequence), optionally of one status, with seq below ``after_seq``."""
        query = (
            "SELECT * FROM jobs WHERE seq < ?" + (" AND status = ?" if status else "") + " ORDER BY seq DESC LIMIT ?"
        )
        args: tuple[Any, ...] = (after_seq, status, limit) if status else (after_seq, limit)
        with self._lock:
            return [_job(row) for row in self._db.execute(query, args).fetchall()]

    def seq(self, job_id: str) -> int | None:
        with self._lock:
            row = self._db.execute("SELECT seq FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else int(row[0])

    def count(self, status: str) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM jobs WHERE status = ?", (status,)).fetchone()[0])

    # -- the life of a job -------------------------------------------------------------------------------------------

    def claim(self, owner: str, lease: float) -> Job | None:
        """Atomically move the oldest queued job to running for ``owner`` (one more attempt)."""
        now = time.time()
        with self._transaction() as db:
            row = db.execute("SELECT id FROM jobs WHERE status = 'queued' ORDER BY seq LIMIT 1").fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE jobs SET status = 'running', owner = ?, lease_expires = ?, attempts = attempts + 1, "
                "started_at = COALESCE(started_at, ?), updated_at = ? WHERE id = ?",
                (owner, now + lease, now, now, row["id"]),
            )
            return _job(db.execute("SELECT * FROM jobs WHERE id = ?", (row["id"],)).fetchone())

    def heartbeat(self, job_id: str, owner: str, lease: float, runtime: float | None = None) -> None:
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "UPDATE jobs SET lease_expires = ?, updated_at = ?, runtime = COALESCE(?, runtime) "
                "WHERE id = ? AND owner = ? AND status = 'running'",
                (now + lease, now, runtime, job_id, owner),
            )

    def save_chunk(
        self,
        job_id: str,
        owner: str,
        first: int,
        last: int,
        trials: int,
        arrays: dict[str, np.ndarray],
        lease: float,
        runtime: float,
    ) -> bool:
        """Store a chunk's results and the progress; False if the job is no longer ours (cancelled or taken)."""
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle
        now = time.time()
        with self._transaction() as db:
            if (
                db.execute(
                    "SELECT 1 FROM jobs WHERE id = ? AND owner = ? AND status = 'running'", (job_id, owner)
                ).fetchone()
                is None
            ):
                return False
            db.execute(
                "INSERT OR REPLACE INTO chunks (job_id, first_block, last_block, trials, data) VALUES (?, ?, ?, ?, ?)",
                (job_id, first, last, trials, buffer.getvalue()),
            )
            db.execute(
                "UPDATE jobs SET completed = (SELECT COALESCE(SUM(trials), 0) FROM chunks WHERE job_id = ?), "
                "lease_expires = ?, updated_at = ?, runtime = ? WHERE id = ?",
                (job_id, now + lease, now, runtime, job_id),
            )
            return True

    def chunks(self, job_id: str) -> list[tuple[int, int, dict[str, np.ndarray]]]:
        """Stored chunk results in block order: (first block, last block, arrays)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT first_block, last_block, data FROM chunks WHERE job_id = ? ORDER BY first_block", (job_id,)
            ).fetchall()
        out = []
        for row in rows:
            with np.load(io.BytesIO(row["data"])) as data:
                out.append((int(row["first_block"]), int(row["last_block"]), {k: data[k] for k in data.files}))
        return out

    def finish(
        self,
        job_id: str,
        owner: str | None,
        status: str,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        runtime: float | None = None,
    ) -> bool:
        """Move a running (or, for cancellation, queued) job to a final status; False if it already moved on."""
        now = time.time()
        with self._transaction() as db:
            condition = "status = 'running' AND owner = ?" if owner else "status IN ('queued', 'running')"
            args = (owner,) if owner else ()
            changed = db.execute(
                f"UPDATE jobs SET status = ?, result = ?, error = ?, finished_at = ?, updated_at = ?, owner = NULL, "
                f"lease_expires = NULL, runtime = COALESCE(?, runtime) WHERE id = ? AND {condition}",
                (
                    status,
                    json.dumps(result) if result is not None else None,
                    json.dumps(error) if error is not None else None,
                    now,
                    now,
                    runtime,
                    job_id,
                    *args,
                ),
            ).rowcount
            if changed:  # the result (or the error) is on the job row; the raw chunks are no longer needed
                db.execute("DELETE FROM chunks WHERE job_id = ?", (job_id,))
            return bool(changed)

    def request_cancel(self, job_id: str) -> Job | None:
        """Cancel a queued job now, or flag a running one (the runner stops between chunks)."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ?, cancel_requested = 1 "
                "WHERE id = ? AND status = 'queued'",
                (now, now, job_id),
            )
            db.execute(
                "UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ? AND status = 'running'",
                (now, job_id),
            )
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else _job(row)

    def requeue(self, job_id: str, owner: str, count_attempt: bool = True) -> None:
        """Put a running job back in the queue (a graceful shutdown does not count as an attempt)."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "UPDATE jobs SET status = 'queued', owner = NULL, lease_expires = NULL, updated_at = ?, "
                "attempts = attempts - ? WHERE id = ? AND owner = ? AND status = 'running'",
                (now, 0 if count_attempt else 1, job_id, owner),
            )

    def running(self) -> list[Job]:
        with self._lock:
            return [_job(r) for r in self._db.execute("SELECT * FROM jobs WHERE status = 'running'").fetchall()]

    def recover(self, job_id: str, owner: str | None, max_attempts: int, reason: str) -> str:
        """A running job whose worker died: back to the queue, or failed after ``max_attempts`` attempts."""
        now = time.time()
        with self._transaction() as db:
            row = db.execute(
                "SELECT attempts FROM jobs WHERE id = ? AND status = 'running' AND owner IS ?", (job_id, owner)
            ).fetchone()
            if row is None:
                return "gone"
            if int(row["attempts"]) >= max_attempts:
                error = {
                    "type": "urn:dpcal:problem:job-crashed",
                    "title": "Job crashed",
                    "status": 500,
                    "detail": f"{reason}; attempt {row['attempts']} of {max_attempts} stopped, giving up",
                }
                db.execute(
                    "UPDATE jobs SET status = 'failed', error = ?, finished_at = ?, updated_at = ?, "
                    "owner = NULL, lease_expires = NULL WHERE id = ?",
                    (json.dumps(error), now, now, job_id),
                )
                db.execute("DELETE FROM chunks WHERE job_id = ?", (job_id,))
                return "failed"
            db.execute(
                "UPDATE jobs SET status = 'queued', owner = NULL, lease_expires = NULL, updated_at = ? WHERE id = ?",
                (now, job_id),
            )
            return "queued"


class QueueFull(Exception):
    """As many jobs as allowed are already waiting."""

    def __init__(self, queued: int) -> None:
        super().__init__(queued)
        self.queued = queued


def _job(row: sqlite3.Row) -> Job:
    return Job(
        id=row["id"],
        status=row["status"],
        algorithm=row["algorithm"],
        request=json.loads(row["request"]),
        plan=json.loads(row["plan"]),
        total=row["total"],
        completed=row["completed"],
        attempts=row["attempts"],
        runtime=row["runtime"],
        cancel_requested=bool(row["cancel_requested"]),
        owner=row["owner"],
        lease_expires=row["lease_expires"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        updated_at=row["updated_at"],
        finished_at=row["finished_at"],
        result=json.loads(row["result"]) if row["result"] else None,
        error=json.loads(row["error"]) if row["error"] else None,
        idempotency_key=row["idempotency_key"],
        request_hash=row["request_hash"],
    )
