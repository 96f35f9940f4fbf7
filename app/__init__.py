"""dpcal's HTTP service: routing, schemas, problem details, docs, client and CLI (no math: see ``accountants``)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpcal")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"
