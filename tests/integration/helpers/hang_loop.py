"""hang_loop.py CTL - a plain PyTorch gloo all_reduce loop with no shim call, steered
from the test through files in the directory CTL, to be held in the ways a step hangs.

Each rank writes its pid to CTL/pid.RANK; rank 0 writes its iteration to CTL/iter.
While CTL/sleep.RANK exists, that rank sleeps between two collectives (the others
wait in the next one); once CTL/stop exists, every rank leaves after its collective."""
import os
import sys
import time

import torch
import torch.distributed as dist

from torch_store import use_libuv_only_if_built

ctl = sys.argv[1]
use_libuv_only_if_built()
dist.init_process_group("gloo")
rank = dist.get_rank()
with open(f"{ctl}/pid.{rank}", "w") as f:
    f.write(str(os.getpid()))
t = torch.ones(1024)
i = 0
while not os.path.exists(f"{ctl}/stop"):
    dist.all_reduce(t)
    t.fill_(1.0)
    i += 1
    if rank == 0:
        with open(f"{ctl}/iter.tmp", "w") as f:
            f.write(str(i))
        os.replace(f"{ctl}/iter.tmp", f"{ctl}/iter")
    while os.path.exists(f"{ctl}/sleep.{rank}"):
        time.sleep(0.2)
    time.sleep(0.1)  # a light load: the suite runs beside it
dist.destroy_process_group()
sys.stdout.flush()
os._exit(0)
