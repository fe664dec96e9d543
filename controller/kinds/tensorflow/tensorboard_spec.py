"""The fields of T9k's TensorBoard spec (`tensorstack.dev/v1beta1` TensorBoardSpec, T9k's API reference) that a
job's `spec.tensorboardSpec` may carry: the log filesets or data sources, the image, suspend and run mode, the
scheduler queue and the container's resources. Nothing else: the CRD's schema is made from these models, so the
API server prunes (or, under fieldValidation=Strict, refuses) any other field, such as a pod template, and the
controller copies into the TensorBoard only what parsed here (`TensorBoardSpec.as_given`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controller.jobs.schema.api import Model


class PVCDataSource(Model):
    name: str = Field(description="The PVC's name.")
    sub_path: list[str] | None = Field(None, description="The relative paths of the logs in the PVC.")


class SecretRef(Model):
    name: str = Field(description="The Secret's name.")


class S3DataSource(Model):
    secret_ref: SecretRef | None = Field(None, description=(
        "The Secret holding the access key, secret key and service endpoint."))
    uri: list[str] | None = Field(None, description="S3 object URIs.")


class HttpDataSource(Model):
    url: list[str] | None = Field(None, description="URLs of the log files.")


class TensorBoardDataSource(Model):
    pvc: list[PVCDataSource] | None = Field(None, description="PVCs mounted into the TensorBoard's pod.")
    s3: S3DataSource | None = Field(None, description="An S3 service and the Secret to reach it.")
    http: HttpDataSource | None = Field(None, description="HTTP URLs.")


class TensorBoardQueue(Model):
    queue: str = Field(description="The name of the queue to use with the T9k Scheduler.")


class TensorBoardSchedulePolicy(Model):
    t9k_scheduler: TensorBoardQueue | None = Field(None, alias="t9kScheduler", description="T9k Scheduler.")


class TensorBoardSpec(Model):
    training_log_filesets: list[str] | None = Field(None, description=(
        "The filesets holding the training logs: t9k://pvc/[pvc-name]/[subpath] or "
        "t9k://minio/[secret-name]/[bucket]/[subpath]."))
    log_dir: TensorBoardDataSource | None = Field(None, description="The data sources holding the training logs.")
    image: str | None = Field(None, description="The container image that runs TensorBoard.")
    suspend: bool | None = Field(None, description="Whether the TensorBoard's pod is deleted (kept resources stay).")
    run_mode: str | None = Field(None, description="The TensorBoard's run mode (older API): running or paused.")
    scheduler: TensorBoardSchedulePolicy | None = Field(None, description=(
        "The scheduler that runs the TensorBoard's pod."))
    resources: dict[str, Any] | None = Field(None, description=(
        "The compute resources of the TensorBoard's container (a Kubernetes ResourceRequirements)."))

    def as_given(self) -> dict:
        """The spec as the user wrote it, limited to these fields: what the TensorBoard gets."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
