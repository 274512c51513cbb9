"""PyTorch's TCPStore broadcast of 128 bytes (rank 0 set, the others get) against
dtshim.broadcast of 128 bytes from Python, in one step. Rank 0 prints the figures.
Used by scripts/bench-shim:  shim_bench_tcpstore.py [ITERATIONS]"""
import sys
import time
from datetime import timedelta

import torch.distributed as dist

import dtshim
from torch_store import port_from_rank0, store_kwargs

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
warm = 20

ctx = dtshim.DistributedContext()
rank, size = ctx.rank, ctx.size
port = port_from_rank0(rank, dtshim.broadcast)
store = dist.TCPStore(ctx.chief_ip, port, size, rank == 0, timeout=timedelta(seconds=60),
                      **store_kwargs())
payload = bytes(range(128))


def measure(step):
    times = []
    for i in range(n + warm):
        t0 = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - t0) * 1e6)
    times = times[warm:]
    mean = sum(times) / n
    slowest = max(float(m) for m in ctx.allgather(mean))
    return sorted(times)[n // 2], slowest


def tcpstore_bcast(i):
    if rank == 0:
        store.set(f"k{i}", payload)
    else:
        assert store.get(f"k{i}") == payload


def dtshim_bcast(i):
    assert dtshim.broadcast(payload if rank == 0 else None) == payload


dtshim.barrier()
res = {"TCPStore set/get 128 B": measure(tcpstore_bcast)}
dtshim.barrier()
res["dtshim.broadcast 128 B (Python)"] = measure(dtshim_bcast)
if rank == 0:
    print(f"{size} ranks on {ctx.cross_size} nodes, {n} iterations, from Python:")
    for name, (median, mean) in res.items():
        print(f"  {name:34s} median {median:8.1f} us   mean {mean:8.1f} us (slowest rank)")
dtshim.barrier()
