"""Pod networking for the process runner: an address per pod on the loopback network (the podnet shim,
podnet.c, preloaded into the pod's processes), and a name table per pod (nss_wrapper) kept current as
Services and pods change. pod_network.PodNetwork ties them together; preload.py finds and builds the
libraries; claims.py claims a /16 no other cluster on this machine holds; addresses.py hands out its
addresses; names.py writes what a pod's names resolve to."""
