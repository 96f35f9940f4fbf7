"""``dpcal keys``: the API keys of ``DPCAL_AUTH=api-key``, in the job store (``DPCAL_JOBS_DB``) directly.

``create NAME --scope read|jobs|admin`` prints the new key as its last line (only then: the store keeps its SHA-256
digest); ``list`` shows every key's name, scope and dates; ``revoke NAME`` ends a key at once.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from .settings import Settings

NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def add_parser(commands: Any) -> None:
    keys = commands.add_parser("keys", help="create, list or revoke API keys (DPCAL_AUTH=api-key) in the job store")
    keys.add_argument("action", choices=("create", "list", "revoke"))
    keys.add_argument("name", nargs="?", help="the key's name (create, revoke): letters, digits, . _ -")
    keys.add_argument("--scope", choices=("read", "jobs", "admin"), default="jobs", help="what the key may do")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from .auth import digest, new_key
    from .jobs.store import JobStore, iso

    if args.action != "list" and (args.name is None or not NAME.fullmatch(args.name)):
        print(f"dpcal: keys {args.action} needs a NAME of 1–64 letters, digits, '.', '_' or '-'", file=sys.stderr)
        return 2
    store = JobStore(settings.jobs_db)
    try:
        if args.action == "list":
            for row in store.api_keys():
                revoked = f"  revoked {iso(row['revoked_at'])}" if row["revoked_at"] else ""
                print(f"{row['name']}  {row['scope']}  created {iso(row['created_at'])}{revoked}")
            return 0
        if args.action == "revoke":
            if not store.revoke_key(args.name):
                print(f"dpcal: no live key named {args.name!r}", file=sys.stderr)
                return 1
            print(f"revoked {args.name}")
            return 0
        key = new_key()
        if not store.add_key(args.name, args.scope, digest(key)):
            print(f"dpcal: a key named {args.name!r} exists (revoke it, or choose another name)", file=sys.stderr)
            return 1
        print(f"created key {args.name!r} with scope {args.scope}; it is shown once:")
        print(key)
        return 0
    finally:
        store.close()
