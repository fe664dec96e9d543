"""The job kinds `run` serves, and the controller that serves them."""

from __future__ import annotations

from kubernetes_asyncio.client import ApiClient
from prometheus_client import CollectorRegistry

from controller.jobs.controller import JobController
from controller.jobs.kind import JobKind
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.controller import ControllerConfig

KINDS: dict[str, JobKind] = {GENERICJOB.api.kind: GENERICJOB}


def make_controller(api_client: ApiClient, config: ControllerConfig, registry: CollectorRegistry) -> JobController:
    """ManagerConfig.make_controller: the job controller of the registered kind."""
    return JobController(GENERICJOB, api_client, config, registry)
