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
print(f"rank {rank} of {size} on {host} ({socket.gethostbyname(host)}): allreduce sum {total}", flush=True)
if total != expected:
    print(f"rank {rank}: the sum should be {expected}", file=sys.stderr, flush=True)
    sys.exit(1)
if rank == 0:
    print(f"allreduce across {size} ranks: sum {total}, as expected", flush=True)
