# syntax=docker/dockerfile:1
# The GenericJob controller image: `docker build -t ghcr.io/t9k/genericjob-controller:0.1.0 .`
# Entry point: `genericjob-controller run` (see manifests/deployment.yaml for the flags used in-cluster).

# The base image by digest, not by tag: a tag moves with every Debian or Python patch release, a digest
# is one image (a multi-arch index: the same digest on amd64 and arm64), so every build starts from the
# same bytes. The tag stays beside it for people (with a digest, Docker ignores it). Both stages use the
# same one. To bump it (a reviewed change, as a dependency bump):
#   docker buildx imagetools inspect python:3.11-slim   (the "Digest:" line)   or   crane digest python:3.11-slim
# then replace the digest in both FROM lines (docs/install.md, "The image's base").
# --- builder: a wheel of the project, installed with its runtime dependencies into /opt/venv ---------
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7 AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
# The runtime dependencies first, exactly as locked (versions and hashes; `make lock` regenerates it
# from pyproject.toml), in a layer of their own that source changes do not invalidate. The lock also
# pins the build backend (setuptools), so the wheel below is built without fetching anything unpinned.
COPY requirements.lock ./
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --require-hashes --no-deps -r requirements.lock

# Only what `run` is built from: no tests, benchmarks or manifests, and neither localcluster (the
# test and development API server) nor controller/devtools (`local`, submit, progress): .dockerignore
# keeps both out of the context, so the wheel is built without them and the image cannot load them.
COPY pyproject.toml README.md ./
COPY apimachinery/ apimachinery/
COPY kubeclient/ kubeclient/
COPY informers/ informers/
COPY workqueue/ workqueue/
COPY controller/ controller/

# The project itself, without resolving anything (`pip check` fails the build if the lock no longer
# satisfies pyproject's dependencies); then the installers go: the image never installs again.
RUN /opt/venv/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
    && /opt/venv/bin/pip install --no-deps /wheels/*.whl \
    && /opt/venv/bin/pip check \
    && rm /opt/venv/bin/localcluster \
    && /opt/venv/bin/pip uninstall --yes pip setuptools

# --- final: the interpreter and the installed venv, nothing else -----------------------------------
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:$PATH

# A fixed numeric UID/GID (the Deployment's runAsUser/runAsGroup), so runAsNonRoot can be verified.
RUN groupadd --system --gid 65532 genericjob \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin genericjob

# Same base image, same interpreter path: the venv's python symlink stays valid.
COPY --from=builder /opt/venv /opt/venv

USER 65532:65532
WORKDIR /

# 8443: /metrics (HTTPS); 8081: /healthz and /readyz (plain HTTP, for the kubelet); 9443: the admission webhook.
EXPOSE 8443 8081 9443

ENTRYPOINT ["genericjob-controller"]
CMD ["run"]
