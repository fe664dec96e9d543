"""The controller's one Kubernetes API client: loading (kubeconfig or in-cluster), credentials that refresh,
TLS, proxies as client-go reads them, both connection pools (aiohttp for lists and watches, HTTP/1.1 for
writes), the client-side rate limit and request metrics. Informers, the engine and leader election all
reach the API server through it.

It stands above apimachinery (plain data and rules, no I/O) and below everything that makes requests.
"""
