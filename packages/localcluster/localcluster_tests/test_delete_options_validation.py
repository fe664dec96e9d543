"""DeleteOptions' propagation policy is validated as the API server's ValidateDeleteOptions does (found by the
envtest tier's differential corpus: localcluster carried out a delete the API server refuses)."""

from __future__ import annotations

import json

from kubernetes_asyncio.client.exceptions import ApiException


async def test_an_unknown_propagation_policy_is_refused_and_nothing_is_deleted(core):
    await core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}})
    try:
        await core.delete_namespaced_config_map("kept", "default", propagation_policy="Sometimes")
        raise AssertionError("deleted")
    except ApiException as refused:
        assert refused.status == 422
        assert json.loads(refused.body)["message"] == (
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sometimes": supported '
            'values: "Foreground", "Background", "Orphan", "nil"')  # the API server's, word for word
    assert (await core.read_namespaced_config_map("kept", "default")).metadata.name == "kept"
