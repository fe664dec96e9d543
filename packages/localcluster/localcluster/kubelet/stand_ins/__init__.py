"""Programs a local run puts in place of those a cluster's images run and this machine must not (remote_shell.py):
each is a script of the standard library alone, run by the server's own interpreter in isolated mode (`-I`)."""
