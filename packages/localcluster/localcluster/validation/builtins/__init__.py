"""Defaulting and validation of built-in kinds, as the apiserver's REST strategies do.

Only what a controller could notice is modelled: name formats, label values, the pod fields
a kubelet needs, immutable pod specs, Service cluster IPs and port defaults, CRD names.
Errors are (reason, field, text) triples, turned into a 422 by the caller.

The rooms: causes (the error triples and the name formats), metadata (every kind's), pods (and priority
classes), workloads (jobs, cron jobs, deployments, replica sets), services, namespaces_and_secrets, crds.
"""

from __future__ import annotations

from .causes import (
    DNS1035_LABEL,
    DNS1035_MSG,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    LABEL1123_MSG,
    LABEL_VALUE,
    LABEL_VALUE_MSG,
    Cause,
    forbidden,
    invalid_value,
    not_supported,
    required,
)
from .crds import crd_status, validate_crd
from .metadata import ANNOTATIONS_LIMIT, NAME_STYLE, annotations_too_long, metadata_errors, name_errors
from .namespaces_and_secrets import default_namespace, default_secret
from .pods import (
    RESTART_POLICIES,
    default_pod,
    default_pod_template,
    default_priority_class,
    initial_pod_status,
    validate_pod,
    validate_pod_update,
)
from .services import (
    PORT_PROTOCOLS,
    PORT_RANGE_MSG,
    default_service,
    port_name_problems,
    validate_service,
    validate_service_update,
)
from .workloads import (
    JOB_RESTART_POLICIES,
    default_cron_job,
    default_deployment,
    default_job,
    default_replica_set,
    validate_cron_job,
    validate_deployment,
    validate_job,
)

__all__ = [
    "ANNOTATIONS_LIMIT",
    "DNS1035_LABEL",
    "DNS1035_MSG",
    "DNS1123_LABEL",
    "DNS1123_SUBDOMAIN",
    "JOB_RESTART_POLICIES",
    "LABEL1123_MSG",
    "LABEL_VALUE",
    "LABEL_VALUE_MSG",
    "NAME_STYLE",
    "PORT_PROTOCOLS",
    "PORT_RANGE_MSG",
    "RESTART_POLICIES",
    "Cause",
    "annotations_too_long",
    "crd_status",
    "default_cron_job",
    "default_deployment",
    "default_job",
    "default_namespace",
    "default_pod",
    "default_pod_template",
    "default_priority_class",
    "default_replica_set",
    "default_secret",
    "default_service",
    "forbidden",
    "initial_pod_status",
    "invalid_value",
    "metadata_errors",
    "name_errors",
    "not_supported",
    "port_name_problems",
    "required",
    "validate_crd",
    "validate_cron_job",
    "validate_deployment",
    "validate_job",
    "validate_pod",
    "validate_pod_update",
    "validate_service",
    "validate_service_update",
]
