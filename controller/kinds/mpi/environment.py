"""What an MPIJob's pods are given: their host names under the job's headless Service, the hostfile and
`discover_hosts.sh` (a ConfigMap kept current), the job's SSH keys (a Secret made once), each MPI implementation's
launcher environment, and the volumes that mount the keys and the hostfile (the spec's "MPIJob")."""

from __future__ import annotations

import base64
import copy
import functools
from collections.abc import Collection

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from apimachinery.resource import Resource
from controller.jobs.kind import Dependent, KindApi
from controller.jobs.schema.naming import job_labels, owner_reference, replica_name
from controller.kinds.mpi.models import LAUNCHER, WORKER, MPIImplementation, MPIJob

CONFIGMAPS = Resource("", "v1", "configmaps")
SECRETS = Resource("", "v1", "secrets")
# The hostfile's data follows the job (a scale rewrites it); the keys are made once and never rotate under it.
CONFIG = Dependent(CONFIGMAPS, "ConfigMap", follows=("data",))
SSH = Dependent(SECRETS, "Secret", ("list", "watch", "create"), follows=())
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE = f"{HOSTFILE_DIR}/hostfile"
ROLE_ENV = "K_MPI_JOB_ROLE"
SSH_VOLUME, CONFIG_VOLUME = "mpi-ssh-auth", "mpi-job-config"
KEY_FILES = [("ssh-privatekey", "id_ed25519"), ("ssh-publickey", "id_ed25519.pub"),
             ("authorized_keys", "authorized_keys")]
RSH_ARGS = "-o ConnectionAttempts=10"


def config_name(job: MPIJob) -> str:
    return f"{job.name}-config"


def ssh_name(job: MPIJob) -> str:
    return f"{job.name}-ssh"


def host(job: MPIJob, replica_type: str, rank: int) -> str:
    """A replica's fully qualified name: its pod's hostname under the job's Service (the subdomain)."""
    return f"{replica_name(job.name, replica_type, rank)}.{job.name}.{job.namespace}.svc"


def replicas(job: MPIJob) -> list[tuple[str, int]]:
    """The hostfile's replicas in rank order: the launcher first when it runs as a worker, then every worker."""
    first = [(LAUNCHER, 0)] if job.spec.run_launcher_as_worker else []
    return first + [(WORKER, rank) for rank in range(job.spec.worker.replicas)]


def hosts(job: MPIJob) -> list[str]:
    return [host(job, replica_type, rank) for replica_type, rank in replicas(job)]


def hostfile(job: MPIJob) -> str:
    slots = job.spec.slots_per_worker
    if job.spec.mpi_implementation == MPIImplementation.OPEN_MPI:
        return "".join(f"{name} slots={slots}\n" for name in hosts(job))
    return "".join(f"{name}:{slots}\n" for name in hosts(job))  # MPICH and Intel (Hydra)


def discover_hosts(job: MPIJob, running: Collection[str] = ()) -> str:
    """Horovod elastic's host discovery script: prints the hosts of the hostfile whose pods are Running (`running`:
    their replicas' names), so that a worker still starting, or gone, is not handed to mpirun."""
    lines = "".join(f"echo {host(job, replica_type, rank)}:{job.spec.slots_per_worker}\n"
                    for replica_type, rank in replicas(job) if replica_name(job.name, replica_type, rank) in running)
    return f"#!/bin/sh\n{lines}"


def _metadata(job: MPIJob, api: KindApi, name: str) -> dict:
    return {"name": name, "namespace": job.namespace, "labels": job_labels(api, job.name, job.uid),
            "ownerReferences": [owner_reference(api, job.name, job.uid)]}


def config_map(job: MPIJob, api: KindApi, running: Collection[str] = ()) -> dict:
    """The hostfile (every worker) and discover_hosts.sh (those `running`: replica names whose pods are Running)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _metadata(job, api, config_name(job)),
            "data": {"hostfile": hostfile(job), "discover_hosts.sh": discover_hosts(job, running)}}


def ssh_secret(job: MPIJob, api: KindApi) -> dict:
    """The job's key pair (ed25519, OpenSSH's formats): created once for the job (`SSH.follows` is empty), so the
    one made here is used only when the job has none. Made once per job uid while it is remembered (a key costs
    ~0.2 ms, and the plan asks for it every reconcile): plans of the same job are then equal, too."""
    return copy.deepcopy(_ssh_secret(job.name, job.namespace, job.uid, api))


@functools.lru_cache(maxsize=256)  # the jobs being started at once, at most ~1 KiB each
def _ssh_secret(name: str, namespace: str, uid: str, api: KindApi) -> dict:
    metadata = {"name": f"{name}-ssh", "namespace": namespace, "labels": job_labels(api, name, uid),
                "ownerReferences": [owner_reference(api, name, uid)]}
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH) + \
        f" {name}@{namespace}\n".encode()
    data = {"ssh-privatekey": private, "ssh-publickey": public, "authorized_keys": public}
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/ssh-auth", "metadata": metadata,
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def launcher_env(job: MPIJob) -> list[tuple[str, str]]:
    """The launcher's MPI settings: where the hostfile is, and SSH retried while the workers' names appear."""
    spec = job.spec
    if spec.mpi_implementation == MPIImplementation.OPEN_MPI:  # OpenMPI 4's ORTE names, then OpenMPI 5's PRRTE's
        return [("OMPI_MCA_orte_default_hostfile", HOSTFILE), ("OMPI_MCA_plm_rsh_args", RSH_ARGS),
                ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                ("OMPI_MCA_orte_set_default_slots", str(spec.slots_per_worker)),
                ("PRTE_MCA_prte_default_hostfile", HOSTFILE), ("PRTE_MCA_plm_ssh_args", RSH_ARGS),
                ("PRTE_MCA_prte_keep_fqdn_hostnames", "true")]
    if spec.mpi_implementation == MPIImplementation.MPICH:
        return [("HYDRA_HOST_FILE", HOSTFILE)]
    return [("I_MPI_HYDRA_HOST_FILE", HOSTFILE), ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", RSH_ARGS)]


def environment(job: MPIJob, replica_type: str) -> list[tuple[str, str]]:
    common = [(ROLE_ENV, replica_type), ("PYTHONUNBUFFERED", "1")]
    return common + launcher_env(job) if replica_type == LAUNCHER else common


def mount(job: MPIJob, replica_type: str, pod_spec: dict) -> None:
    """The keys (read-only, mode 0600) in every container at sshAuthMountPath; the hostfile and discover_hosts.sh
    at /etc/mpi in the launcher's."""
    volumes = pod_spec.setdefault("volumes", [])
    volumes.append({"name": SSH_VOLUME, "secret": {"secretName": ssh_name(job), "defaultMode": 0o600,
                                                   "items": [{"key": k, "path": p} for k, p in KEY_FILES]}})
    mounts = [{"name": SSH_VOLUME, "mountPath": job.spec.ssh_auth_mount_path, "readOnly": True}]
    if replica_type == LAUNCHER:
        volumes.append({"name": CONFIG_VOLUME, "configMap": {"name": config_name(job), "items": [
            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555}]}})
        mounts.append({"name": CONFIG_VOLUME, "mountPath": HOSTFILE_DIR})
    for container in pod_spec.get("containers") or ():
        if isinstance(container, dict):
            container.setdefault("volumeMounts", []).extend(copy.deepcopy(mounts))
