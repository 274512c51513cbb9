"""An MPI program (mpi4py on Debian's OpenMPI) for the contract tests.

Each rank prints what MPI says (rank, size, host, a reduction and an
allgather that cross every node) and, apart, what --dist-train set, so a
test can check that the flag changes nothing MPI does.
"""
import os
import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
gathered = comm.allgather((rank, socket.gethostname()))
total = comm.allreduce(rank + 1)
hosts = ",".join(h for _, h in gathered)
print(f"mpi rank={rank} size={comm.Get_size()} host={socket.gethostname()} "
      f"sum={total} hosts={hosts} | RANK={os.environ.get('RANK', 'unset')}",
      flush=True)
