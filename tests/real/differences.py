"""Where localcluster's answers differ from the real API server's in the differential corpus (corpus.py): each
reason, with the requests (by name) it explains. This list may only shrink: test_fidelity fails on a difference
not listed here and on a listed request that no longer differs. Most are messages 1.35 words anew that
localcluster words as an older release did; two are to fix (a PUT that creates; the JSON patch error that prints
the object)."""

from __future__ import annotations

REASONS: dict[str, tuple[str, list[str]]] = {  # step: (why, the requests)
    'create, not JSON': (
        "message: the API server prefixes 'the object provided is unrecognized (must be of type X)' and "
        'quotes the body', [
            'configmaps:create, not JSON',
            'secrets:create, not JSON',
            'services:create, not JSON',
            'serviceaccounts:create, not JSON',
            'roles:create, not JSON',
            'genericjobs:create, not JSON',
            'pods:create, not JSON',
            'podgroups:create, not JSON',
        ]),
    'create, wrong kind': (
        "message: the API server says no kind 'Nope' is registered in its scheme (naming the scheme's file); "
        'localcluster says the API version does not match', [
            'configmaps:create, wrong kind',
            'secrets:create, wrong kind',
            'services:create, wrong kind',
            'serviceaccounts:create, wrong kind',
            'roles:create, wrong kind',
            'genericjobs:create, wrong kind',
            'pods:create, wrong kind',
            'podgroups:create, wrong kind',
        ]),
    'list, unknown field selector': (
        'message: 1.35 says \'"spec.nope" is not a known field selector: only ...\'; localcluster has the older '
        "'field label not supported'", [
            'configmaps:list, unknown field selector',
            'serviceaccounts:list, unknown field selector',
            'roles:list, unknown field selector',
        ]),
    'json patch, failed test': (
        "message: the API server says only 'the server rejected our request due to an error in our request'; "
        'localcluster names the failed test', [
            'configmaps:json patch, failed test',
            'secrets:json patch, failed test',
            'services:json patch, failed test',
            'serviceaccounts:json patch, failed test',
            'roles:json patch, failed test',
            'genericjobs:json patch, failed test',
            'pods:json patch, failed test',
            'podgroups:json patch, failed test',
        ]),
    'json patch, bad path': (
        "message: the API server says only 'the server rejected our request ...'; localcluster names the "
        'missing member and prints the whole object (to fix)', [
            'configmaps:json patch, bad path',
            'secrets:json patch, bad path',
            'services:json patch, bad path',
            'serviceaccounts:json patch, bad path',
            'roles:json patch, bad path',
            'genericjobs:json patch, bad path',
            'pods:json patch, bad path',
            'podgroups:json patch, bad path',
        ]),
    'delete, wrong uid precondition': (
        "message: 1.35 words a uid precondition failure anew ('the UID in the precondition (...) does not "
        "match the UID in record'); localcluster has the older wording", [
            'configmaps:delete, wrong uid precondition',
            'secrets:delete, wrong uid precondition',
            'services:delete, wrong uid precondition',
            'serviceaccounts:delete, wrong uid precondition',
            'roles:delete, wrong uid precondition',
            'genericjobs:delete, wrong uid precondition',
            'pods:delete, wrong uid precondition',
            'podgroups:delete, wrong uid precondition',
        ]),
    'update missing': (
        "to fix in localcluster: a PUT of a missing Service or Role creates it (the registry's "
        'AllowCreateOnUpdate); localcluster answers 404', [
            'services:update missing',
            'roles:update missing',
        ]),
    'delete missing: NotFound': (
        "follows from 'update missing': the real server created the object the PUT named", [
            'services:delete missing: NotFound',
            'roles:delete missing: NotFound',
        ]),
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
