"""In place of `ssh` in a local run's pods: `ssh [OPTIONS] HOST COMMAND` runs COMMAND in the pod at HOST.

HOST is resolved as ssh resolves it, in the calling pod (its name table); when the address is a pod's of this run,
the request goes to the local kubelet (LOCALCLUSTER_SSH_SOCKET) with this process's stdin, stdout and stderr, and
the kubelet runs `sh -c COMMAND` in the environment of the pod's container that runs the sshd stand-in. Its exit
code is this one's; 255 when it could not be run, as ssh's. A pod without a running sshd refuses the connection,
retried as `-o ConnectionAttempts=N` asks (a second apart, as ssh does). Any other host is the real ssh's: the next
`ssh` on PATH is run with the same arguments. No key, no known_hosts, no ~/.ssh is read or written.
"""

import json
import os
import socket
import sys
import time

OPTIONS_WITH_ARGUMENT = set("BbcDEeFIiJLlmOopQRSWw")
SOCKET_ENV = "LOCALCLUSTER_SSH_SOCKET"
FAILED = 255


def parse(args):
    """(host, command, connection attempts) from ssh's arguments."""
    attempts = 1
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        flags = args[i][1:]
        for j, flag in enumerate(flags):
            if flag in OPTIONS_WITH_ARGUMENT:
                value = flags[j + 1:] or (args[i + 1] if i + 1 < len(args) else "")
                if not flags[j + 1:]:
                    i += 1
                if flag == "o" and value.lower().startswith("connectionattempts"):
                    attempts = max(1, int(value.replace("=", " ").split()[1]))
                break
        i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    if i >= len(args):
        return None, "", attempts
    return args[i].rpartition("@")[2], " ".join(args[i + 1:]), attempts


def real_ssh(argv):
    """Run the next `ssh` on PATH after this one's directory, with the same arguments."""
    here = os.path.dirname(os.path.abspath(__file__ if not sys.argv[0] else sys.argv[0]))
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and os.path.abspath(d) != here]
    for directory in path:
        candidate = os.path.join(directory, "ssh")
        if os.access(candidate, os.X_OK):
            os.execv(candidate, [candidate, *argv])
    print("ssh: not found on PATH", file=sys.stderr)
    return 127


def request(socket_path, address, command):
    """The kubelet's answer: {"exit": code}, {"refused": why} or {"elsewhere": true}."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(socket_path)
        message = json.dumps({"address": address, "command": command}).encode() + b"\n"
        socket.send_fds(conn, [message], [0, 1, 2])
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                return {"refused": "the local run's kubelet closed the connection"}
            reply += chunk
    return json.loads(reply)


def main(argv):
    socket_path = os.environ.get(SOCKET_ENV)
    host, command, attempts = parse(argv)
    if not socket_path or host is None:
        return real_ssh(argv)
    try:
        address = socket.getaddrinfo(host, 22, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except (socket.gaierror, UnicodeError):
        print(f"ssh: Could not resolve hostname {host}: Name or service not known", file=sys.stderr)
        return FAILED
    for attempt in range(attempts):
        try:
            answer = request(socket_path, address, command)
        except OSError as exc:
            answer = {"refused": f"the local run's kubelet cannot be reached: {exc}"}
        if "exit" in answer:
            return int(answer["exit"])
        if "elsewhere" in answer:
            return real_ssh(argv)
        print(f"ssh: connect to host {host} port 22: Connection refused ({answer['refused']})", file=sys.stderr)
        if attempt + 1 < attempts:
            time.sleep(1)  # ssh's pause between ConnectionAttempts
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
