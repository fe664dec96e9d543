"""The job engine's settings: the runtime's `ControllerConfig` (workers, request budget, namespaces,
informers) plus what only the job engine reads: PodGroups, the force-delete of pods stuck terminating,
restart back-off, and how often a missing dependent API is looked for again."""

from __future__ import annotations

from dataclasses import dataclass, fields

from controller.runtime.controller import ControllerConfig


@dataclass(frozen=True)
class JobConfig(ControllerConfig):
    podgroups: bool = True  # watch PodGroups (needs their CRD installed)
    stuck_terminating_after: float = 60.0  # then a terminating pod is force-deleted (jobs.plan)
    dependent_recheck: float = 30.0  # seconds between looks for a dependent API the cluster lacks (jobs.controller)
    restart_backoff: float = 10.0  # the first wait before a replica's replacement, doubling (jobs.backoff; 0: none)

    @classmethod
    def of(cls, config: ControllerConfig | None) -> JobConfig:
        """`config` as a JobConfig: itself, or the runtime's settings with the engine's defaults."""
        if isinstance(config, JobConfig):
            return config
        if config is None:
            return cls()
        return cls(**{f.name: getattr(config, f.name) for f in fields(config)})
