"""The dtshim Python module in a PyTorch gloo job: rank 0 picks a free port and shares it
over PMIx, so no MASTER_ADDR/MASTER_PORT is needed; then an all_reduce, an exchange of
byte strings, and the preemption decision every rank takes at the same step.

Prints "ok rank=R sum=S stopped=K" per rank, or raises.
"""
import os
import signal
import socket

import torch
import torch.distributed as dist

import dtshim
from torch_store import port_from_rank0, use_libuv_only_if_built


ctx = dtshim.DistributedContext()
rank, size = ctx.rank, ctx.size
port = port_from_rank0(rank, dtshim.broadcast)
use_libuv_only_if_built()
dist.init_process_group("gloo", init_method=f"tcp://{ctx.chief_ip}:{port}",
                        rank=rank, world_size=size)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
want = size * (size + 1) / 2
assert t.item() == want, f"all_reduce gave {t.item()}, want {want}"
hosts = dtshim.allgather(socket.gethostname().encode())
assert len(hosts) == size and hosts[rank] == socket.gethostname().encode()
assert ctx.allgather({"rank": rank}) == [{"rank": r} for r in range(size)]

# The last rank signals itself at step 3; every rank must stop at the same step.
stop_at = int(os.environ.get("STOP_AT", "3"))
step = 0
while step < 100:
    if rank == size - 1 and step == stop_at:
        os.kill(os.getpid(), signal.SIGUSR2)
    if ctx.should_preempt():
        break
    dist.all_reduce(torch.ones(1))
    step += 1
print(f"ok rank={rank} sum={int(t.item())} stopped={step} nodes={ctx.cross_size}", flush=True)
# Every rank is past its last collective: leave without gloo's teardown, which has
# held a rank for good (pytorch#56297), as examples/ddp_train.py does.
os._exit(0)
