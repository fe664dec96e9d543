"""The scripted pod runner's pieces, for a kubelet of another API server that follows the same scripts, so that one
scenario runs on both (the controller's envtest tier: tests/real/kubelet.py): the scripts' annotation, the pod
statuses the runner writes at each step, the schedulers' rules, the Node it registers, the store's event shape.

`from localcluster.testing import pod_scripts`, then `pod_scripts.finished(pod, code, started)` and so on.
"""

from __future__ import annotations

import sys

from ..api import now_rfc3339
from ..auth.kubeconfig_file import write_private_file
from ..kubelet.nodes import NODE, node_object
from ..kubelet.runner import SCRIPT_ANNOTATION, UNSCHEDULABLE
from ..kubelet.runner import _condition as condition
from ..kubelet.runner import _container as container
from ..kubelet.runner import _finished as finished
from ..kubelet.runner import _terminated as terminated
from ..kubelet.runner import _waiting as waiting
from ..kubelet.scheduling import CRDS, PODGROUP_CRD, PODGROUPS, PODS, Schedulers
from ..storage.store import ADDED, DELETED, Event

__all__ = ["ADDED", "CRDS", "DELETED", "NODE", "PODGROUPS", "PODGROUP_CRD", "PODS", "SCRIPT_ANNOTATION",
           "UNSCHEDULABLE", "Event", "Schedulers", "condition", "container", "finished", "node_object", "now_rfc3339",
           "pod_scripts", "terminated", "waiting", "write_private_file"]

pod_scripts = sys.modules[__name__]  # what localcluster.testing's `pod_scripts` names: this module
