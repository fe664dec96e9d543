# syntax=docker/dockerfile:1
# The GenericJob controller image: `docker build -t ghcr.io/t9k/genericjob-controller:0.1.0 .`
# Entry point: `genericjob-controller run` (see manifests/deployment.yaml for the flags used in-cluster).

# Two base images, each by digest, not by tag: a tag moves with every Debian or Python patch release, a
# digest is one image (a multi-arch index: the same digest on amd64 and arm64), so every build starts from
# the same bytes. The tag stays beside it for people (with a digest, Docker ignores it).
# - the builder: debian:12-slim, with Debian 12's python3.11 (python3-venv) and binutils (strip);
# - the final image: distroless python3-debian12, the same Debian 12 python3.11 at the same path
#   (/usr/bin/python3.11) and nothing else: no shell, no package manager, user nonroot (65532). The venv
#   made in the builder points at /usr/bin/python3.11, which is there in both.
# distroless stopped publishing python3-debian12 in May 2026 (GoogleContainerTools/distroless#2084; its
# successor, python3-debian13, is Python 3.13, which needs requirements.lock made for 3.13): the digest
# below no longer receives Debian's security updates. docs/install.md, "The image's base", says what
# that means and how to move.
# The digests were found in public Dockerfiles (no registry was reachable where they were written in):
# before a release build, confirm each is the tag's current index digest, and to bump one (a reviewed
# change, as a dependency bump):
#   docker buildx imagetools inspect debian:12-slim   (the "Digest:" line)   or   crane digest debian:12-slim
#   crane digest gcr.io/distroless/python3-debian12:nonroot
# then replace it in its FROM line and in tests/program/test_supply_chain.py (docs/install.md).
# --- builder: a wheel of the project, installed with its runtime dependencies into /opt/venv ---------
FROM debian:12-slim@sha256:ccb33c3ac5b02588fc1d9e4fc09b952e433d0c54d8618d0ee1afadf1f3cf2455 AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# Debian 12's versions (python3-venv brings python3.11-venv, whatever 3.11.2 security release is current:
# the same 3.11 ABI as the final image's interpreter).
RUN apt-get update \
    && apt-get install --yes --no-install-recommends python3-venv=3.11.2-1+b1 binutils=2.40-2 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# The runtime dependencies first, exactly as locked (versions and hashes; `make lock` regenerates it
# from pyproject.toml), in a layer of their own that source changes do not invalidate. The lock also
# pins the build backend (setuptools), so the wheel below is built without fetching anything unpinned.
COPY requirements.lock ./
RUN python3.11 -m venv /opt/venv \
    && /opt/venv/bin/pip install --require-hashes --no-deps -r requirements.lock

# Only what `run` is built from: no tests, benchmarks or manifests, and neither localcluster (the
# test and development API server, packages/localcluster: a distribution of its own) nor controller/devtools
# (`local`, submit, progress): .dockerignore keeps both out of the context, so the wheels are built without
# them and the image cannot load them. packages/apimachinery is the distribution the controller stands on.
COPY pyproject.toml README.md ./
COPY packages/apimachinery/ packages/apimachinery/
COPY kubeclient/ kubeclient/
COPY informers/ informers/
COPY workqueue/ workqueue/
COPY controller/ controller/
COPY scripts/slim_venv.py scripts/

# The project's two distributions (apimachinery, then the controller), without resolving anything (`pip check`
# fails the build if the lock no longer satisfies pyproject's dependencies); then what `run` never loads goes (scripts/slim_venv.py:
# kubernetes_asyncio's generated API and model classes, 43 MB, tests and extension sources; the
# extensions stripped, 26 MB), and the installers: the image never installs again.
RUN /opt/venv/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels packages/apimachinery . \
    && /opt/venv/bin/pip install --no-deps /wheels/*.whl \
    && /opt/venv/bin/pip check \
    && /opt/venv/bin/python scripts/slim_venv.py /opt/venv/lib/python3.11/site-packages \
    && /opt/venv/bin/pip uninstall --yes pip setuptools

# --- final: the interpreter and the installed venv, nothing else -----------------------------------
FROM gcr.io/distroless/python3-debian12:nonroot@sha256:17b27c84c985a53d0cd2adef4f196ca327fa9b6755369be605cf45533b4e700b

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:$PATH

# The same interpreter path as the builder's: the venv's python symlink stays valid.
COPY --from=builder /opt/venv /opt/venv

# A fixed numeric UID/GID (the Deployment's runAsUser/runAsGroup), so runAsNonRoot can be verified: the
# base image's user nonroot (its /etc/passwd names 65532 so, with group 65532).
USER 65532:65532
WORKDIR /

# 8443: /metrics (HTTPS); 8081: /healthz and /readyz (plain HTTP, for the kubelet); 9443: the admission webhook.
EXPOSE 8443 8081 9443

ENTRYPOINT ["genericjob-controller"]
CMD ["run"]
