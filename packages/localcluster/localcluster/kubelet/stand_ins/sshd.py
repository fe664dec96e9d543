"""In place of a pod's `sshd -D` in a local run: waits until the pod stops (SIGTERM), as sshd would.

A local run may not run an sshd (it would need root, host keys in /etc/ssh and port 22): `ssh` from the run's
pods to this pod's address reaches the local kubelet instead, which runs the command in this container's
environment, as sshd would run it here (localcluster/kubelet/remote_shell.py)."""

import os
import signal
import sys

if __name__ == "__main__":
    print(f"sshd (local run's stand-in, pid {os.getpid()}): ssh from this run's pods to this pod runs the command "
          f"here; arguments {' '.join(sys.argv[1:]) or '(none)'} ignored", file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
    sys.exit(0)
