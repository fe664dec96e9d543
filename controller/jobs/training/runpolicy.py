"""`runPolicy` of a training job (the deadline, the job's one restart budget, the clean-up policy),
and the `enable` spelling of a run mode's switch, with what the CRD generator adds for both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, field_validator

from controller.jobs.schema.api import CleanUpPolicy, Model

# The clean-up policies as the CRD accepts them: the engine's spelling, and the lowercase one of the
# training-job APIs (all / unfinished / none).
CLEAN_UP_SPELLINGS = ["All", "Unfinished", "None", "all", "unfinished", "none"]


class RunPolicy(Model):
    active_deadline_seconds: Annotated[int, Field(gt=0)] | None = Field(None, description=(
        "Seconds after the job's startTime after which it fails (DeadlineExceeded)."))
    backoff_limit: Annotated[int, Field(ge=0)] | None = Field(None, description=(
        "Restarts of all the job's replicas together before a failing replica fails the job; unset: no limit."))
    clean_up_policy: CleanUpPolicy = Field(CleanUpPolicy.UNFINISHED, description=(
        "Which replicas to delete once the job has finished: All, Unfinished (default) or None."))

    @field_validator("clean_up_policy", mode="before")
    @classmethod
    def _capitalised(cls, value: Any) -> Any:
        return value.capitalize() if isinstance(value, str) and value.lower() in ("all", "unfinished", "none") \
            else value


def enable_read(value: Any) -> Any:
    """A switch object (`{enabled: ...}`) as given, with `enable` read as `enabled`; `enabled` wins when both
    are given. For a `field_validator(..., mode="before")`."""
    if isinstance(value, dict) and "enable" in value:
        value = dict(value)
        enable = value.pop("enable")
        value.setdefault("enabled", enable)
    return value


def enable_is_enabled(value: Any) -> Any:
    """A run mode (`runMode`) as given, with `debug.enable` / `pause.enable` read as `enabled` (enable_read).
    For a `field_validator("run_mode", mode="before")`."""
    if isinstance(value, dict):
        for mode in ("debug", "pause"):
            entry = value.get(mode)
            if isinstance(entry, dict) and "enable" in entry:
                value = {**value, mode: enable_read(entry)}
    return value


def enable_spelling(switch: dict, description: str) -> None:
    """A switch's schema (generated from its model), in place: `enable` beside `enabled`, and no default for
    `enabled`: the server would add `enabled: false` beside a user's `enable: true`, and `enabled` wins when
    both are given."""
    switch["properties"]["enable"] = {"type": "boolean", "description": description}
    switch["properties"]["enabled"].pop("default", None)


def crd_spellings(spec_properties: dict) -> None:
    """The spec schema's `runMode` and `runPolicy` (generated from the models), in place: `enable` beside
    `enabled` in each mode, and the lowercase clean-up policies."""
    run_mode = spec_properties["runMode"]["properties"]
    for mode in ("debug", "pause"):
        enable_spelling(run_mode[mode], "003's spelling of enabled.")
    spec_properties["runPolicy"]["properties"]["cleanUpPolicy"]["enum"] = list(CLEAN_UP_SPELLINGS)


class TrainingSpec(Model):
    """The base of a training kind's spec model: its `runMode` read with the `enable` spelling, and the clean-up
    policy in its `runPolicy` (the kind declares both fields, with its own defaults and descriptions)."""

    if TYPE_CHECKING:  # declared by each kind, not here: a field here would come first in the model's errors
        run_policy: RunPolicy

    @field_validator("run_mode", mode="before", check_fields=False)
    @classmethod
    def _enable(cls, value: Any) -> Any:
        return enable_is_enabled(value)

    @property
    def clean_up_policy(self) -> CleanUpPolicy:
        return self.run_policy.clean_up_policy
