"""``dpcal worker``: a process that runs verification jobs from the shared store, apart from any API process.

It claims queued jobs (leases renewed with every chunk, heartbeats), resumes a job whose worker died from its stored
chunks, and puts its running job back in the queue on SIGTERM or SIGINT. Several workers on one host take turns
through the host's runner lock (one worker pool per host); workers on other hosts run at the same time. API processes
started with ``DPCAL_EMBEDDED_WORKERS=0`` only accept and report jobs.
"""

from __future__ import annotations

import logging
import signal
import threading

from .. import observability
from ..settings import Settings
from .manager import JobManager

_log = logging.getLogger("dpcal.worker")


def run(settings: Settings) -> int:
    """Run jobs until SIGTERM or SIGINT; 0 on a clean stop."""
    observability.configure(settings.log_format, settings.log_level)  # as a server process logs (JSON or text)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    manager = JobManager(settings)
    manager.start()
    _log.info("worker %s started (%d job processes)", manager.owner, settings.job_workers)
    stop.wait()
    _log.info("worker %s stopping", manager.owner)
    manager.stop()
    return 0
