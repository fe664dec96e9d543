"""An MPI allreduce across every rank (mpi4py): rank r gives r + 1, and each rank checks it got 1 + 2 + ... + size.

Run by `mpirun` in an MPIJob's launcher (examples/mpi-allreduce.yaml), one rank per slot of the hostfile's
workers. Each rank says where it runs (its host name, and the address that name has, its pod's); rank 0 says
the sum. A wrong sum fails the rank, and with it mpirun and the launcher.
"""

import socket
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
host = socket.gethostname()
total = comm.allreduce(rank + 1, op=MPI.SUM)
expected = size * (size + 1) // 2


def say(line: str, stream=sys.stdout) -> None:
    """One write of the whole line: mpirun forwards every rank's output to the launcher's as it comes, and with
    PYTHONUNBUFFERED (the controller sets it) print() writes the text and its newline apart, so two ranks' lines
    could run together."""
    stream.write(line + "\n")
    stream.flush()


say(f"rank {rank} of {size} on {host} ({socket.gethostbyname(host)}): allreduce sum {total}")
if total != expected:
    say(f"rank {rank}: the sum should be {expected}", sys.stderr)
    sys.exit(1)
if rank == 0:
    say(f"allreduce across {size} ranks: sum {total}, as expected")
