"""PyTorch's TCPStore broadcast of 128 bytes (rank 0 set, the others get) against
dtshim.broadcast of 128 bytes from Python, in one step. Rank 0 prints the figures.
Used by scripts/bench-shim:  shim_bench_tcpstore.py [ITERATIONS]"""
import os
import socket
import sys
import time
from datetime import timedelta

import torch.distributed as dist

import dtshim

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
warm = 20

def use_libuv_only_if_built():
    """Set USE_LIBUV=0 when this PyTorch lacks libuv (unless the user chose).

    PyTorch 2.4 and later rendezvous (env://, tcp://) through a libuv TCPStore
    unless USE_LIBUV=0, and fail where PyTorch was built without libuv, as
    Debian forky's 2.14 is: "use_libuv was requested but PyTorch was built
    without libuv support, run with USE_LIBUV=0".  A throwaway store server on
    a free loopback port tells; PyTorch without the option (Debian 12's 1.13)
    never uses libuv and is left alone.
    """
    if "USE_LIBUV" in os.environ:
        return
    try:
        store = dist.TCPStore("127.0.0.1", 0, 1, True, use_libuv=True, wait_for_workers=False)
    except TypeError:  # no use_libuv: PyTorch before libuv
        return
    except RuntimeError as e:
        if "libuv" in str(e):
            os.environ["USE_LIBUV"] = "0"
        return
    del store


ctx = dtshim.DistributedContext()
rank, size = ctx.rank, ctx.size
port = b""
if rank == 0:
    with socket.socket() as s:
        s.bind(("", 0))
        port = str(s.getsockname()[1]).encode()
port = int(dtshim.broadcast(port))
use_libuv_only_if_built()
libuv = {"use_libuv": False} if os.environ.get("USE_LIBUV") == "0" else {}
store = dist.TCPStore(ctx.chief_ip, port, size, rank == 0, timeout=timedelta(seconds=60), **libuv)
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
