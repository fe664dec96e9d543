"""The bad-input corpus runs on the end-to-end fixtures: localcluster with the CRDs, the controller in-process."""

from tests.e2e.conftest import cluster, config, controller, controllers, jobs, server  # noqa: F401
