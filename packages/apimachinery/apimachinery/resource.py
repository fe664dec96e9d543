"""Which API collection an informer follows, and the URL paths to it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource by group, version and plural name, e.g. `Resource("", "v1", "pods")`."""

    group: str
    version: str
    plural: str

    def path(self, namespace: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def __str__(self) -> str:
        # kubectl's spelling: "pods", "genericjobs.batch.tensorstack.dev".
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = Resource("", "v1", "pods")
SERVICES = Resource("", "v1", "services")
