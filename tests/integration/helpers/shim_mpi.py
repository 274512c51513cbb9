"""libdtshim inside an MPI program: OpenMPI (mpi4py) initializes PMIx in the same process.

Each rank prints "ok rank=R size=N" when dtshim's facts and collectives agree with MPI's,
or "FAIL ..." and exits 1.
"""
import socket
import sys

from mpi4py import MPI

import dtshim

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
dtshim.init()


def fail(what):
    print(f"FAIL rank={rank}: {what}", flush=True)
    sys.exit(1)


if (dtshim.rank(), dtshim.size()) != (rank, comm.Get_size()):
    fail(f"dtshim says {dtshim.rank()}/{dtshim.size()}, MPI {rank}/{comm.Get_size()}")
mine = f"{rank}@{socket.gethostname()}".encode()
for _ in range(3):
    # MPI and dtshim collectives interleaved, both over the same PMIx client
    if dtshim.allgather(mine) != [b.encode() for b in comm.allgather(mine.decode())]:
        fail("allgather differs from MPI's")
    comm.Barrier()
    dtshim.barrier()
    if dtshim.broadcast(b"from-last" if rank == comm.Get_size() - 1 else None,
                        root=comm.Get_size() - 1) != b"from-last":
        fail("broadcast")
if comm.allreduce(int(dtshim.should_preempt())) != 0:
    fail("should_preempt without a signal")
dtshim.finalize()
print(f"ok rank={rank} size={comm.Get_size()}", flush=True)
