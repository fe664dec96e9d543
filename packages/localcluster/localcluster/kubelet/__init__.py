"""The node side: the scheduler and kubelet of localcluster. The pod runners (none, scripted, process:
containers as local processes), the one Node they register, the Events they record about a pod, a
container's environment, its ConfigMap and Secret volumes (pod_volumes.py), ssh between pods in place of an
sshd (remote_shell.py), and a pod's streams: its logs (kept and served here, and kept_logs.py: copied for a
person once the pod is gone), exec, port-forward over SPDY, and the checks before a client is connected to a
container."""
