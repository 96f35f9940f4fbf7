"""What runs inside a heavy-computation process (see :mod:`app.compute`).

The fork server imports this module once (with the whole library and every family), so a process forked from it is
ready at once. It answers requests one at a time (:func:`serve`), each report (or exception) sent back through its
pipe, and is kept warm between requests (:mod:`app.heavy`); the service kills it when a request's budget runs out or
its client leaves.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import accountants.pipeline  # noqa: F401  (compositions answered here are preloaded in the fork server)
from accountants import registry

from . import observability
from .host import exit_with_parent

_log = logging.getLogger("dpcal.compute")

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

registry.families()  # import every family in the fork server, once


def pin_blas_threads() -> None:
    """One BLAS thread in this process and in every process it starts (unless the operator set the variables).

    A multi-threaded BLAS turns the library's few level-1 calls into thread hand-offs that a busy host makes 100×
    slower; the service gets its parallelism from processes instead."""
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def portable(error: BaseException) -> Any:
    """``error`` where it survives pickling unchanged; else a stand-in that unpickles to an exception of the same
    type with the same ``args`` and attributes, built without calling its ``__init__`` (whose signature pickling
    cannot know: an exception whose ``__init__`` takes other arguments than its ``args`` would otherwise fail to
    unpickle in the parent, and the request would answer 500 instead of its problem document)."""
    try:
        copy = pickle.loads(pickle.dumps(error))
        if type(copy) is type(error) and copy.args == error.args:
            return error
    except Exception:  # any failure to round-trip: the stand-in below
        pass
    state = {key: value for key, value in vars(error).items() if _picklable(value)}
    return _Rebuilt(type(error), tuple(arg for arg in error.args if _picklable(arg)), state)


class _Rebuilt:
    """Pickles as :func:`_rebuild` of an exception's type, args and state (see :func:`portable`)."""

    def __init__(self, kind: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> None:
        self.kind, self.args, self.state = kind, args, state

    def __reduce__(self) -> tuple[Callable[..., BaseException], tuple[Any, ...]]:
        return _rebuild, (self.kind, self.args, self.state)


def _rebuild(kind: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    error = kind.__new__(kind)
    error.args = args
    vars(error).update(state)
    return error


def _picklable(value: object) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


def family_operation(algorithm: str, operation: str, *args: Any) -> Any:
    """``registry.get(algorithm).<operation>(*args)``."""
    return getattr(registry.get(algorithm), operation)(*args)


def serve(connection: Connection, log_format: str = "text", level: str = "info") -> None:
    """Answer requests ``(function, args, request_id)`` from ``connection`` one at a time, each outcome sent back
    (:func:`outcome`), until the server closes its end (:mod:`app.heavy`: a process kept warm between requests). It
    logs as the service does (``log_format``, ``level``), every line with the request's id."""
    exit_with_parent(os.getppid())  # the fork server, which ends with the service
    observability.configure(log_format, level)
    while True:
        try:
            function, args, request_id = connection.recv()
        except EOFError:  # the server closed its end: retire
            return
        _send(connection, outcome(function, args, request_id))


def outcome(function: Callable[..., Any], args: tuple[Any, ...], request_id: str | None) -> tuple[str, Any]:
    """("ok", ``function(*args)``) or ("error", the exception as :func:`portable` makes it, so the parent raises one
    of the same type with the same fields and answers it as it would in-process); logged with ``request_id``."""
    observability.CURRENT.set(None if request_id is None else observability.RequestInfo(request_id))
    started = time.perf_counter()
    try:
        result: tuple[str, Any] = ("ok", function(*args))
    except Exception as error:
        result = ("error", portable(error))
    _log.info("computed %s in process %d: %s in %.3f s", function.__name__, os.getpid(), result[0],
              time.perf_counter() - started)  # fmt: skip
    return result


def _send(connection: Connection, result: tuple[str, Any]) -> None:
    try:
        connection.send(result)
    except Exception as error:  # an unpicklable answer is a bug: say so rather than hang the request
        connection.send(("error", RuntimeError(f"the answer could not be sent back: {error!r}")))
