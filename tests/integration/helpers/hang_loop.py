"""hang_loop.py CTL - a plain PyTorch gloo all_reduce loop with no shim call, steered
from the test through files in the directory CTL, to be held in the ways a step hangs.

Each rank writes its pid to CTL/pid.RANK; rank 0 writes its iteration to CTL/iter.
While CTL/sleep.RANK exists, that rank sleeps between two collectives (the others
wait in the next one); once CTL/other.RANK exists, that rank calls a broadcast where the
others all-reduce, which holds the step for good; once CTL/stop exists, every rank leaves
after the next collective.
Work that is progress while the others wait, once, when the test asks for it:
CTL/checkpoint.RANK holding seconds makes that rank write a checkpoint for that long
(1 MiB rewritten in place, 4 times a second), CTL/compute.RANK makes it compute (half
of one CPU); the file is removed when the work is done."""
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


def work(kind):
    """Do CTL/KIND.RANK's work, if the test asked for it."""
    path = f"{ctl}/{kind}.{rank}"
    try:
        with open(path) as f:
            seconds = float(f.read().strip() or "0")
    except (FileNotFoundError, ValueError):
        return
    end = time.monotonic() + seconds
    block = b"\0" * (1 << 20)
    with open(f"{ctl}/checkpoint.data.{rank}", "wb") as out:
        while time.monotonic() < end:
            if kind == "checkpoint":
                out.seek(0)
                out.write(block)
                out.flush()
                time.sleep(0.25)
            else:
                busy = time.monotonic() + 0.1
                while time.monotonic() < busy:
                    pass
                time.sleep(0.1)
    os.unlink(path)


world = dist.get_world_size()
while True:
    # (rank 0 alone reads CTL/stop, and tells the others in the sum: all leave together)
    t.fill_(1.0)
    if rank == 0 and os.path.exists(f"{ctl}/stop"):
        t[0] = 1.0 + world
    if os.path.exists(f"{ctl}/other.{rank}"):
        dist.broadcast(t, 0)
    else:
        dist.all_reduce(t)
    if t[0].item() > world:
        break
    i += 1
    if rank == 0:
        with open(f"{ctl}/iter.tmp", "w") as f:
            f.write(str(i))
        os.replace(f"{ctl}/iter.tmp", f"{ctl}/iter")
    work("checkpoint")
    work("compute")
    # (sleeps of a second: a probe that looks between two short ones finds the rank
    # running, not asleep, as one did on a loaded machine)
    while os.path.exists(f"{ctl}/sleep.{rank}"):
        time.sleep(1.0)
    time.sleep(0.1)  # a light load: the suite runs beside it
dist.destroy_process_group()
sys.stdout.flush()
os._exit(0)
