# sayso: one image for the front (`sayso run`), the workers (`sayso worker`) and the
# migration step (`sayso db upgrade`). Multi-stage: the build stage has the compilers, the
# final stage only the virtualenv, on a slim Python, as a non-root user.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY store ./store
RUN python -m venv /opt/sayso \
    && /opt/sayso/bin/pip install --no-cache-dir . \
    && /opt/sayso/bin/pip uninstall -y pip

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="sayso" \
      org.opencontainers.image.description="A Slack approval bot for AI agents"
ENV PATH=/opt/sayso/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SAYSO_LOG_FORMAT=json \
    SAYSO_HEALTHCHECK_URL=http://127.0.0.1:3000/healthz
RUN groupadd --system --gid 10001 sayso \
    && useradd --system --uid 10001 --gid sayso --home-dir /home/sayso --create-home sayso
COPY --from=build /opt/sayso /opt/sayso
USER 10001:10001
WORKDIR /home/sayso
EXPOSE 3000
# The front's /healthz; a worker sets SAYSO_HEALTHCHECK_URL to its --metrics-port's /metrics.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; urllib.request.urlopen(os.environ['SAYSO_HEALTHCHECK_URL'], timeout=4); sys.exit(0)"]
ENTRYPOINT ["sayso"]
CMD ["run", "--mode", "http", "--port", "3000"]
