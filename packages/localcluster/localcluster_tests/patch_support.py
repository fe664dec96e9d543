"""Helpers for the patch tests: a patch applied without touching its inputs, and pod-shaped targets."""

import copy

from localcluster.fields.patch import strategic_merge_patch


def assert_untouched(func, target, patch, *args):
    """Call func and check it changed neither input; return its result."""
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    result = func(target, patch, *args)
    assert target == target_before
    assert patch == patch_before
    return result


def directive_keys(value):
    """Every "$..." key anywhere in a JSON value."""
    if isinstance(value, dict):
        found = {k for k in value if k.startswith("$")}
        for v in value.values():
            found |= directive_keys(v)
        return found
    if isinstance(value, list):
        return set().union(*(directive_keys(v) for v in value)) if value else set()
    return set()


def container(name, **fields):
    return {"name": name, **fields}


def pod(containers=None, **spec):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": containers if containers is not None else [container("a", image="nginx")], **spec},
    }


def smp(target, patch, kind="Pod"):
    result = assert_untouched(strategic_merge_patch, target, patch, kind)
    assert not directive_keys(result), "a patch directive leaked into the result"
    return result


def names(items):
    return [item["name"] for item in items]
