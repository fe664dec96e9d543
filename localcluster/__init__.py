"""localcluster: an in-memory Kubernetes API server for tests and local runs.

`LocalCluster` serves the Kubernetes REST API over real HTTP with the semantics a controller can
notice: resourceVersions, watches with history and 410 Gone, conflicts, the status subresource,
CRD validation, graceful deletion and garbage collection, plus fault injection and pod runners.
"""

from .cluster import LocalCluster

__all__ = ["LocalCluster"]
