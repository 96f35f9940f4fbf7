"""The job store: one database, SQLite (the embedded default: a file, WAL, synchronous=FULL) or PostgreSQL
(``DPCAL_JOBS_DB=postgresql://…``, for API replicas and workers on several hosts), through SQLAlchemy Core, so an
accepted job survives any crash of the service and every process sees the same queue.

Tables: ``jobs`` (one row per job: state, request, plan, progress, lease, result or error), ``chunks`` (the raw
results of each completed run of blocks, so a restarted job resumes where it stopped; results are deterministic given
the seed, so resuming and re-running agree) and ``schema_version`` (the versioned schema: :data:`MIGRATIONS` are
applied in order on start, each once).

Concurrency: on SQLite every transaction is ``BEGIN IMMEDIATE`` (one writer at a time); on PostgreSQL a claim takes
the oldest queued row ``FOR UPDATE SKIP LOCKED`` (no two processes claim one job) and job creation holds a
transaction-level advisory lock (sequence numbers, the queue limit and idempotency keys stay consistent across API
replicas).
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

_log = logging.getLogger("dpcal.jobs")

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINISHED = ("succeeded", "failed", "cancelled")

METADATA = sa.MetaData()
JOBS = sa.Table(
    "jobs",
    METADATA,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("algorithm", sa.Text, nullable=False),
    sa.Column("request", sa.Text, nullable=False),
    sa.Column("request_hash", sa.Text, nullable=False),
    sa.Column("idempotency_key", sa.Text, unique=True),
    sa.Column("plan", sa.Text, nullable=False),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("completed", sa.Integer, nullable=False, server_default="0"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("runtime", sa.Double, nullable=False, server_default="0"),
    sa.Column("cancel_requested", sa.Integer, nullable=False, server_default="0"),
    sa.Column("owner", sa.Text),
    sa.Column("lease_expires", sa.Double),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("started_at", sa.Double),
    sa.Column("updated_at", sa.Double, nullable=False),
    sa.Column("finished_at", sa.Double),
    sa.Column("result", sa.Text),
    sa.Column("error", sa.Text),
    sa.Column("principal", sa.Text),
    sa.Column("request_id", sa.Text),
    sa.Index("jobs_status", "status", "seq"),
)
API_KEYS = sa.Table(
    "api_keys",
    METADATA,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("digest", sa.Text, nullable=False, unique=True),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("revoked_at", sa.Double),
)
CHUNKS = sa.Table(
    "chunks",
    METADATA,
    sa.Column("job_id", sa.Text, sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("first_block", sa.Integer, primary_key=True),
    sa.Column("last_block", sa.Integer, nullable=False),
    sa.Column("trials", sa.Integer, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)
VERSION = sa.Table("schema_version", METADATA, sa.Column("version", sa.Integer, nullable=False))


def _create_tables(connection: Connection) -> None:
    """Version 1: jobs and chunks (a SQLite file from before the versioned schema already has them)."""
    METADATA.create_all(connection, tables=[JOBS, CHUNKS], checkfirst=True)


def _add_principals(connection: Connection) -> None:
    """Version 2: API keys (their SHA-256 digests, never the keys) and each job's principal (NULL: submitted without
    authentication)."""
    METADATA.create_all(connection, tables=[API_KEYS], checkfirst=True)
    if "principal" not in {c["name"] for c in sa.inspect(connection).get_columns("jobs")}:
        connection.execute(sa.text("ALTER TABLE jobs ADD COLUMN principal TEXT"))


def _add_request_ids(connection: Connection) -> None:
    """Version 3: the id of the request that submitted each job (its worker logs with it; NULL before)."""
    if "request_id" not in {c["name"] for c in sa.inspect(connection).get_columns("jobs")}:
        connection.execute(sa.text("ALTER TABLE jobs ADD COLUMN request_id TEXT"))


MIGRATIONS: tuple[tuple[int, str, Callable[[Connection], None]], ...] = (
    (1, "jobs and chunks", _create_tables),
    (2, "API keys and job principals", _add_principals),
    (3, "the request id of each job", _add_request_ids),
)
"""The schema's versions, in order: (version, what it adds, how). A store applies those above its version."""

CREATION_LOCK = 0x64706361  # "dpca": the advisory lock that serialises job creation on PostgreSQL


def database_url(location: str) -> str:
    """A SQLAlchemy URL from ``DPCAL_JOBS_DB``: a ``postgresql://`` URL (driver psycopg), any other URL as given, or a
    SQLite file path."""
    if location.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + location.split("://", 1)[1]
    if "://" in location:
        return location
    return f"sqlite:///{Path(location)}"


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
    principal: str | None = None
    """Who submitted it (None: submitted without authentication)."""
    request_id: str | None = None
    """The id of the request that submitted it (its runs log with it)."""

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
    """Access to the job database from one process (thread-safe: a connection pool, transactions per call)."""

    def __init__(self, location: str | Path) -> None:
        self.url = database_url(str(location))
        self.sqlite = self.url.startswith("sqlite")
        if self.sqlite:
            path = Path(self.url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
            self.engine: Engine = sa.create_engine(
                self.url, connect_args={"check_same_thread": False, "timeout": 30.0}, poolclass=sa.pool.QueuePool
            )
            sa.event.listen(self.engine, "connect", _sqlite_connect)
            sa.event.listen(self.engine, "begin", lambda connection: connection.exec_driver_sql("BEGIN IMMEDIATE"))
        else:
            self.engine = sa.create_engine(self.url, pool_pre_ping=True, pool_size=4, max_overflow=4)
        self._lock = threading.RLock() if self.sqlite else _NoLock()
        self._migrated = False
        try:
            self.migrate()
        except sa.exc.OperationalError:  # the database is down: the first use migrates (and raises until it is up)
            _log.warning("the job store %s does not answer yet", self.engine.url.render_as_string(hide_password=True))

    def migrate(self) -> int:
        """Apply the migrations above the stored version (in one transaction); the version reached."""
        with self._lock, self.engine.begin() as db:
            self._serialise(db)
            VERSION.create(db, checkfirst=True)
            current = db.execute(sa.select(sa.func.max(VERSION.c.version))).scalar() or 0
            for version, _, apply in MIGRATIONS:
                if version > current:
                    apply(db)
                    db.execute(VERSION.delete())
                    db.execute(VERSION.insert().values(version=version))
                    current = version
        self._migrated = True
        return int(current)

    def ping(self) -> None:
        """Raise if the database cannot be reached (health checks)."""
        with self.engine.connect() as db:
            db.execute(sa.select(sa.literal(1)))

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        if not self._migrated:
            self.migrate()
        with self._lock, self.engine.begin() as db:
            yield db

    def _serialise(self, db: Connection) -> None:
        """On PostgreSQL, hold the creation lock until the transaction ends (SQLite's BEGIN IMMEDIATE already does)."""
        if not self.sqlite:
            db.execute(sa.select(sa.func.pg_advisory_xact_lock(CREATION_LOCK)))

    def _row(self, db: Connection, job_id: str) -> Job | None:
        return _first(db, JOBS.c.id == job_id)

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
        principal: str | None = None,
        principal_max_queued: int | None = None,
        request_id: str | None = None,
    ) -> tuple[Job, bool]:
        """Insert a queued job; returns (job, created). With a known idempotency key and the same request hash the
        existing job is returned (created=False); a different hash raises :class:`IdempotencyConflict`. Raises
        :class:`QueueFull` when ``max_queued`` jobs are already waiting, or ``principal_max_queued`` of the
        principal's."""
        now = time.time()
        with self._transaction() as db:
            self._serialise(db)
            if idempotency_key is not None:
                job = _first(db, JOBS.c.idempotency_key == idempotency_key)
                if job is not None:
                    if job.request_hash != request_hash:
                        raise IdempotencyConflict(job)
                    return job, False
            queued = db.execute(sa.select(sa.func.count()).where(JOBS.c.status == "queued")).scalar() or 0
            if queued >= max_queued:
                raise QueueFull(queued)
            if principal is not None and principal_max_queued is not None:
                mine = (JOBS.c.status == "queued") & (JOBS.c.principal == principal)
                own = db.execute(sa.select(sa.func.count()).where(mine)).scalar() or 0
                if own >= principal_max_queued:
                    raise QueueFull(own, principal)
            seq = (db.execute(sa.select(sa.func.max(JOBS.c.seq))).scalar() or 0) + 1
            job_id = uuid.uuid4().hex
            db.execute(
                JOBS.insert().values(
                    id=job_id,
                    seq=seq,
                    status="queued",
                    algorithm=algorithm,
                    request=json.dumps(request),
                    request_hash=request_hash,
                    idempotency_key=idempotency_key,
                    principal=principal,
                    request_id=request_id,
                    plan=json.dumps(plan),
                    total=total,
                    created_at=now,
                    updated_at=now,
                )
            )
            created = self._row(db, job_id)
            assert created is not None
            return created, True

    def by_idempotency_key(self, key: str) -> Job | None:
        with self._transaction() as db:
            return _first(db, JOBS.c.idempotency_key == key)

    def get(self, job_id: str) -> Job | None:
        with self._transaction() as db:
            return self._row(db, job_id)

    def page(
        self, status: str | None, limit: int, after_seq: int | None = None, principal: str | None = None
    ) -> list[Job]:
        """Jobs newest first (by creation sequence), optionally of one status and one principal's, with seq below
        ``after_seq`` (None: from the newest)."""
        query = sa.select(JOBS)
        if principal is not None:
            query = query.where(JOBS.c.principal == principal)
        if after_seq is not None:
            query = query.where(JOBS.c.seq < after_seq)
        if status == "cancelling":  # shown for a running job asked to stop (not a stored status)
            query = query.where(JOBS.c.status == "running", JOBS.c.cancel_requested == 1)
        elif status == "running":
            query = query.where(JOBS.c.status == "running", JOBS.c.cancel_requested == 0)
        elif status:
            query = query.where(JOBS.c.status == status)
        with self._transaction() as db:
            rows = db.execute(query.order_by(JOBS.c.seq.desc()).limit(limit)).mappings().all()
        return [_job(row) for row in rows]

    def seq(self, job_id: str) -> int | None:
        with self._transaction() as db:
            value = db.execute(sa.select(JOBS.c.seq).where(JOBS.c.id == job_id)).scalar()
        return None if value is None else int(value)

    def count(self, status: str) -> int:
        with self._transaction() as db:
            return int(db.execute(sa.select(sa.func.count()).where(JOBS.c.status == status)).scalar() or 0)

    # -- API keys ----------------------------------------------------------------------------------------------------

    def add_key(self, name: str, scope: str, digest: str) -> bool:
        """Store a key's digest under a new name (False where the name is taken)."""
        with self._transaction() as db:
            if db.execute(sa.select(API_KEYS.c.name).where(API_KEYS.c.name == name)).first() is not None:
                return False
            db.execute(API_KEYS.insert().values(name=name, scope=scope, digest=digest, created_at=time.time()))
            return True

    def api_keys(self) -> list[dict[str, Any]]:
        """Every key: name, scope, created_at, revoked_at (never the digest)."""
        columns = (API_KEYS.c.name, API_KEYS.c.scope, API_KEYS.c.created_at, API_KEYS.c.revoked_at)
        with self._transaction() as db:
            return [dict(row) for row in db.execute(sa.select(*columns).order_by(API_KEYS.c.name)).mappings()]

    def revoke_key(self, name: str) -> bool:
        """Revoke the key (False where no live key has that name)."""
        live = (API_KEYS.c.name == name) & API_KEYS.c.revoked_at.is_(None)
        with self._transaction() as db:
            return bool(db.execute(API_KEYS.update().where(live).values(revoked_at=time.time())).rowcount)

    def key_holder(self, digest: str) -> tuple[str, str] | None:
        """(name, scope) of the live key with this digest, or None."""
        live = (API_KEYS.c.digest == digest) & API_KEYS.c.revoked_at.is_(None)
        with self._transaction() as db:
            row = db.execute(sa.select(API_KEYS.c.name, API_KEYS.c.scope).where(live)).first()
        return None if row is None else (str(row[0]), str(row[1]))

    # -- the life of a job -------------------------------------------------------------------------------------------

    def claim(self, owner: str, lease: float) -> Job | None:
        """Atomically move the oldest queued job to running for ``owner`` (one more attempt)."""
        now = time.time()
        oldest = (
            sa.select(JOBS.c.id)
            .where(JOBS.c.status == "queued")
            .order_by(JOBS.c.seq)
            .limit(1)
            .with_for_update(skip_locked=True)
        )
        with self._transaction() as db:
            job_id = db.execute(oldest).scalar()
            if job_id is None:
                return None
            db.execute(
                JOBS.update()
                .where(JOBS.c.id == job_id)
                .values(
                    status="running",
                    owner=owner,
                    lease_expires=now + lease,
                    attempts=JOBS.c.attempts + 1,
                    started_at=sa.func.coalesce(JOBS.c.started_at, now),
                    updated_at=now,
                )
            )
            return self._row(db, job_id)

    def heartbeat(self, job_id: str, owner: str, lease: float, runtime: float | None = None) -> None:
        now = time.time()
        values: dict[str, Any] = {"lease_expires": now + lease, "updated_at": now}
        if runtime is not None:
            values["runtime"] = runtime
        with self._transaction() as db:
            db.execute(JOBS.update().where(_ours(job_id, owner)).values(**values))

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
            if db.execute(sa.select(JOBS.c.id).where(_ours(job_id, owner)).with_for_update()).first() is None:
                return False
            db.execute(CHUNKS.delete().where((CHUNKS.c.job_id == job_id) & (CHUNKS.c.first_block == first)))
            db.execute(
                CHUNKS.insert().values(
                    job_id=job_id, first_block=first, last_block=last, trials=trials, data=buffer.getvalue()
                )
            )
            done = sa.select(sa.func.coalesce(sa.func.sum(CHUNKS.c.trials), 0)).where(CHUNKS.c.job_id == job_id)
            db.execute(
                JOBS.update()
                .where(JOBS.c.id == job_id)
                .values(completed=done.scalar_subquery(), lease_expires=now + lease, updated_at=now, runtime=runtime)
            )
            return True

    def chunks(self, job_id: str) -> list[tuple[int, int, dict[str, np.ndarray]]]:
        """Stored chunk results in block order: (first block, last block, arrays)."""
        query = sa.select(CHUNKS).where(CHUNKS.c.job_id == job_id).order_by(CHUNKS.c.first_block)
        with self._transaction() as db:
            rows = db.execute(query).mappings().all()
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
        condition = _ours(job_id, owner) if owner else (JOBS.c.id == job_id) & JOBS.c.status.in_(("queued", "running"))
        values: dict[str, Any] = {
            "status": status,
            "result": json.dumps(result) if result is not None else None,
            "error": json.dumps(error) if error is not None else None,
            "finished_at": now,
            "updated_at": now,
            "owner": None,
            "lease_expires": None,
        }
        if runtime is not None:
            values["runtime"] = runtime
        with self._transaction() as db:
            changed = db.execute(JOBS.update().where(condition).values(**values)).rowcount
            if changed:  # the result (or the error) is on the job row; the raw chunks are no longer needed
                db.execute(CHUNKS.delete().where(CHUNKS.c.job_id == job_id))
            return bool(changed)

    def request_cancel(self, job_id: str) -> Job | None:
        """Cancel a queued job now, or flag a running one (the runner stops between chunks)."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                JOBS.update()
                .where((JOBS.c.id == job_id) & (JOBS.c.status == "queued"))
                .values(status="cancelled", finished_at=now, updated_at=now, cancel_requested=1)
            )
            db.execute(
                JOBS.update()
                .where((JOBS.c.id == job_id) & (JOBS.c.status == "running"))
                .values(cancel_requested=1, updated_at=now)
            )
            return self._row(db, job_id)

    def requeue(self, job_id: str, owner: str, count_attempt: bool = True) -> None:
        """Put a running job back in the queue (a graceful shutdown does not count as an attempt)."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                JOBS.update()
                .where(_ours(job_id, owner))
                .values(
                    status="queued",
                    owner=None,
                    lease_expires=None,
                    updated_at=now,
                    attempts=JOBS.c.attempts - (0 if count_attempt else 1),
                )
            )

    def requeue_any(self, job_id: str) -> Job | None:
        """Operator's requeue (``dpcal jobs requeue``): a failed, cancelled or stuck running job goes back to the
        queue with its attempts reset (a running owner loses it: its next chunk is refused); None if unknown."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                JOBS.update()
                .where((JOBS.c.id == job_id) & (JOBS.c.status != "succeeded"))
                .values(
                    status="queued",
                    owner=None,
                    lease_expires=None,
                    attempts=0,
                    cancel_requested=0,
                    error=None,
                    finished_at=None,
                    updated_at=now,
                )
            )
            return self._row(db, job_id)

    def running(self) -> list[Job]:
        with self._transaction() as db:
            return [_job(r) for r in db.execute(sa.select(JOBS).where(JOBS.c.status == "running")).mappings()]

    def recover(self, job_id: str, owner: str | None, max_attempts: int, reason: str) -> str:
        """A running job whose worker died: back to the queue, or failed after ``max_attempts`` attempts."""
        now = time.time()
        theirs = (JOBS.c.id == job_id) & (JOBS.c.status == "running") & JOBS.c.owner.is_not_distinct_from(owner)
        with self._transaction() as db:
            attempts = db.execute(sa.select(JOBS.c.attempts).where(theirs).with_for_update()).scalar()
            if attempts is None:
                return "gone"
            released = {"owner": None, "lease_expires": None, "updated_at": now}
            if int(attempts) >= max_attempts:
                error = {
                    "type": "urn:dpcal:problem:job-crashed",
                    "title": "Job crashed",
                    "status": 500,
                    "detail": f"{reason}; attempt {attempts} of {max_attempts} stopped, giving up",
                }
                db.execute(
                    JOBS.update()
                    .where(JOBS.c.id == job_id)
                    .values(status="failed", error=json.dumps(error), finished_at=now, **released)
                )
                db.execute(CHUNKS.delete().where(CHUNKS.c.job_id == job_id))
                return "failed"
            db.execute(JOBS.update().where(JOBS.c.id == job_id).values(status="queued", **released))
            return "queued"


def _first(db: Connection, condition: sa.ColumnElement[bool]) -> Job | None:
    """The job matching ``condition`` (an id or an idempotency key), or None."""
    row = db.execute(sa.select(JOBS).where(condition)).mappings().first()
    return None if row is None else _job(row)


def _ours(job_id: str, owner: str) -> sa.ColumnElement[bool]:
    return (JOBS.c.id == job_id) & (JOBS.c.owner == owner) & (JOBS.c.status == "running")


def _sqlite_connect(connection: Any, _record: Any) -> None:
    """SQLite: transactions are begun by the store (BEGIN IMMEDIATE), the log is WAL, every commit is synced."""
    connection.isolation_level = None
    cursor = connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


class _NoLock:
    """PostgreSQL serialises in the database: no lock in the process."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class QueueFull(Exception):
    """As many jobs as allowed are already waiting (the service's, or ``principal``'s own)."""

    def __init__(self, queued: int, principal: str | None = None) -> None:
        super().__init__(queued)
        self.queued, self.principal = queued, principal


def _job(row: Any) -> Job:
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
        principal=row["principal"],
        request_id=row["request_id"],
    )
