"""The differential corpus's third part: a watch resumed from older resourceVersions, and admission's refusals.

Watches: one resumed from the version of a list made before some changes replays those changes (ADDED, MODIFIED,
DELETED); one of a custom resource from resourceVersion 1, older than its CRD, is refused with 410 (its watch cache
starts when the CRD is served). A fresh server's built-in caches start before its own first writes (measured on
1.35.3: a ConfigMap watch from 1 replays every event; after a restart the caches start afresh and refuse older
versions with 410, tests/e2e's restart tests), but a server that has served other tests has let old events go, so
that case is not in the corpus (its answer depends on the server's past). Admission: the CRD's own
validation (its schema's enum, minimum, maxItems and its CEL rules, `x-kubernetes-validations`), and a
ValidatingWebhookConfiguration calling a webhook that is not there, by url: failurePolicy Fail refuses what it
selects (the objects labelled `webhook: fail`), Ignore lets it through, and the objects its objectSelector leaves
out never meet it. `{rv of NAME}` in a request's params is the resourceVersion of the list named NAME (test_fidelity
fills it in).
"""

from __future__ import annotations

from .corpus import NS, Request

CMS = f"/api/v1/namespaces/{NS}/configmaps"
JOBS = f"/apis/batch.tensorstack.dev/v1beta1/namespaces/{NS}/genericjobs"
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MERGE = "application/merge-patch+json"
BEFORE = "resumption: the list the watch resumes from"


def configmap(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"resume": "yes", **labels}},
            "data": {"k": "v"}}


def job(name: str, **spec) -> dict:
    replica = {"type": "worker", "replicas": 1, "template": {"spec": {"containers": [
        {"name": "main", "image": "busybox:1.36"}]}}}
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": name},
            "spec": {"replicaSpecs": [replica], **spec}}


def resumption() -> list[Request]:
    watch = {"watch": "1", "labelSelector": "resume=yes", "timeoutSeconds": "1"}
    return [
        Request("resumption: a first ConfigMap", "POST", CMS, configmap("resume-0")),
        Request(BEFORE, "GET", CMS, params={"labelSelector": "resume=yes"}),
        Request("resumption: a second ConfigMap", "POST", CMS, configmap("resume-1")),
        Request("resumption: the first edited", "PATCH", f"{CMS}/resume-0", {"data": {"k": "w"}}, MERGE),
        Request("resumption: the first deleted", "DELETE", f"{CMS}/resume-0"),
        Request("resumption: a watch from the earlier list replays the changes", "GET", CMS,
                params={**watch, "resourceVersion": f"{{rv of {BEFORE}}}"}),
        Request("resumption: a watch from the earlier list, bookmarks allowed", "GET", CMS,
                params={**watch, "resourceVersion": f"{{rv of {BEFORE}}}", "allowWatchBookmarks": "true"}),
        # Not a ConfigMap watch from 1: the built-ins' caches start before the server's first write, so a fresh
        # server replays it, but a server that has served other tests first has let those events go (its cache
        # keeps about the last 75 s): its answer depends on the server's past, which the two servers do not share.
        # A custom resource's cache starts when its CRD is served: from 1 is refused on both, whatever the past.
        Request("resumption: a watch of a custom resource from resourceVersion 1", "GET", JOBS,
                params={"watch": "1", "timeoutSeconds": "1", "resourceVersion": "1"}),
    ]


def crd_validation() -> list[Request]:
    replica = job("x")["spec"]["replicaSpecs"][0]
    return [
        Request("crd validation: an enum violated", "POST", JOBS, job("enum", cleanUpPolicy="Sometimes")),
        Request("crd validation: a minimum violated", "POST", JOBS,
                job("minimum", replicaSpecs=[{**replica, "replicas": -1}])),
        Request("crd validation: a required field missing", "POST", JOBS,
                job("required", replicaSpecs=[{"type": "worker"}])),
        Request("crd validation: a CEL rule (unique types)", "POST", JOBS,
                job("unique", replicaSpecs=[replica, replica])),
        Request("crd validation: a CEL rule (no replica at all)", "POST", JOBS,
                job("none", replicaSpecs=[{**replica, "replicas": 0}])),
        Request("crd validation: too few items", "POST", JOBS, job("few", replicaSpecs=[])),
        Request("crd validation: a valid job", "POST", JOBS, job("valid")),
        Request("crd validation: an update breaking a CEL rule", "PATCH", f"{JOBS}/valid",
                {"spec": {"replicaSpecs": [replica, replica]}}, MERGE),
        Request("crd validation: a status patch ignores the spec", "PATCH", f"{JOBS}/valid/status",
                {"spec": {"replicaSpecs": [replica, replica]}, "status": {"phase": "Running"}}, MERGE),
    ]


def webhook(name: str, policy: str) -> dict:
    hook = {"name": f"{name}.fidelity.example.com", "failurePolicy": policy, "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 2,
            "clientConfig": {"url": "https://127.0.0.1:1/validate"},  # nothing listens on port 1
            "objectSelector": {"matchLabels": {"webhook": policy.lower()}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"], "scope": "Namespaced"}]}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name}, "webhooks": [hook]}


def webhook_denials() -> list[Request]:
    return [
        Request("webhook: a configuration with a bad url", "POST", CONFIGURATIONS,
                {**webhook("bad-url", "Fail"), "webhooks": [{**webhook("bad-url", "Fail")["webhooks"][0],
                                                             "clientConfig": {"url": "http://127.0.0.1:1/"}}]}),
        Request("webhook: the failing configuration", "POST", CONFIGURATIONS, webhook("fidelity-fail", "Fail")),
        Request("webhook: the ignored configuration", "POST", CONFIGURATIONS, webhook("fidelity-ignore", "Ignore")),
        Request("webhook: an object it selects, refused (Fail)", "POST", CMS,
                {**configmap("hooked"), "metadata": {"name": "hooked", "labels": {"webhook": "fail"}}}),
        Request("webhook: an object it selects, let through (Ignore)", "POST", CMS,
                {**configmap("ignored"), "metadata": {"name": "ignored", "labels": {"webhook": "ignore"}}}),
        Request("webhook: an object it leaves out", "POST", CMS, configmap("unhooked")),
        Request("webhook: an update into its selection, refused", "PATCH", f"{CMS}/unhooked",
                {"metadata": {"labels": {"webhook": "fail"}}}, MERGE),
        Request("webhook: a delete is not among its operations", "DELETE", f"{CMS}/unhooked"),
        Request("webhook: the failing configuration removed", "DELETE", f"{CONFIGURATIONS}/fidelity-fail"),
        Request("webhook: the object it refused, made once it is gone", "POST", CMS,
                {**configmap("hooked"), "metadata": {"name": "hooked", "labels": {"webhook": "fail"}}}),
        Request("webhook: the ignored configuration removed", "DELETE", f"{CONFIGURATIONS}/fidelity-ignore"),
    ]


def admission() -> list[Request]:
    return resumption() + crd_validation() + webhook_denials()
