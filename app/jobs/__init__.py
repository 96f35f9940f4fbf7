"""Verification jobs: a SQLite job store, a runner interface (local process pool by default) and the manager that
ties them to the HTTP API."""
