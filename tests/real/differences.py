"""Where localcluster's answers differ from the real API server's in the differential corpus (corpus.py): each
reason, with the requests (by name) it explains. This list may only shrink: test_fidelity fails on a difference
not listed here and on a listed request that no longer differs. Most are messages 1.35 words anew that
localcluster words as an older release did."""

from __future__ import annotations

REASONS: dict[str, tuple[str, list[str]]] = {  # step: (why, the requests)
    'get deleted: NotFound': (
        "the real server's test kubelet bound the pod, so its deletion is graceful; localcluster's runner "
        'none leaves it unbound, deleted at once', [
            'pods:get deleted: NotFound',
        ]),
    'list after': (
        "as 'get deleted': the bound pods are still terminating on the real server", [
            'pods:list after',
        ]),
    'unknown group': (
        "the API server's 404 for an unknown group is its plain-text 404 page, not a Status", [
            'discovery: unknown group',
        ]),
}
DIFFERENCES = {name: why for why, names in REASONS.values() for name in names}
