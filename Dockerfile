# dpcal service image: slim Python 3.11, non-root, `dpcal serve` (uvicorn) on port 8000, health checked on /healthz.
# Build from the repository alone:  docker build -t dpcal .   Run:  docker run -p 8000:8000 dpcal
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DPCAL_HOST=0.0.0.0 \
    DPCAL_PORT=8000

RUN useradd --create-home --uid 10001 dpcal
WORKDIR /srv/dpcal

# EXTRAS: optional installs, e.g. "postgres,dask" for deploy/compose.yaml (PostgreSQL job store, Dask backend)
ARG EXTRAS=""
COPY pyproject.toml README.md ./
COPY accountants ./accountants
COPY app ./app
RUN pip install ".${EXTRAS:+[$EXTRAS]}" && rm -rf /root/.cache

USER dpcal
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD python -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"

# dpcal serve: uvicorn with the service's log format (DPCAL_LOG_FORMAT=json for one JSON object per line), its
# access line per request (request id, latency), no Server header; proxy headers trusted from 127.0.0.1 only
CMD ["dpcal", "serve"]
