# dpcal service image: slim Python 3.11, non-root, `dpcal serve` (uvicorn) on port 8000, health checked on /healthz.
# Build from the repository alone:  docker build -t dpcal .   Run:  docker run -p 8000:8000 dpcal
#
# Reproducible: the base image by digest (python:3.11-slim; refresh it with
# `docker buildx imagetools inspect python:3.11-slim` and pass a newer one as --build-arg PYTHON_IMAGE=…@sha256:…),
# and every installed package pinned with its hashes in deploy/requirements.lock (pip refuses any file whose hash is
# not there). The lock holds dpcal's runtime dependencies with the postgres and dask extras (the PostgreSQL job store
# and the Dask backend of deploy/compose.yaml) and the build backend; `make lock` re-resolves it.
ARG PYTHON_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DPCAL_HOST=0.0.0.0 \
    DPCAL_PORT=8000

RUN useradd --create-home --uid 10001 dpcal
WORKDIR /srv/dpcal

COPY deploy/requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY accountants ./accountants
COPY app ./app
# dpcal itself, built with the locked setuptools, adding nothing the lock does not hold (pip check: nothing missing)
RUN pip install --no-deps --no-build-isolation . && pip check && rm -rf /root/.cache

USER dpcal
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD python -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"

# dpcal serve: uvicorn with the service's log format (DPCAL_LOG_FORMAT=json for one JSON object per line), its
# access line per request (request id, latency), no Server header; proxy headers trusted from 127.0.0.1 only
CMD ["dpcal", "serve"]
