"""ddp_env.py [MEETING_DIR] - a PyTorch DDP program as a container or a
launcher (torchrun) runs it: the process group from the environment (env://,
gloo), one all_reduce and a DDP step, then one line with what the rank saw
and when (epoch seconds) its first all_reduce returned, for container.bats,
frameworks.bats and scripts/bench-launcher.

With MEETING_DIR, rank 0 waits (at most 60 s) until another step's rank 0
has left its mark there too, so that two steps hold their MASTER_PORT at the
same time."""
import datetime
import faulthandler
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
from torch_store import store_kwargs, use_libuv_only_if_built


def affinity():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split()[1]
    return "?"


def meet(path):
    os.makedirs(path, exist_ok=True)
    mine = os.path.join(path, f"{os.environ['SLURM_JOB_ID']}.{os.environ['SLURM_STEP_ID']}")
    open(mine, "w").close()
    deadline = time.monotonic() + 60
    while len(os.listdir(path)) < 2:
        if time.monotonic() > deadline:
            sys.exit("ddp_env: the other step never came")
        time.sleep(0.2)


def process_group():
    """The process group from the environment, env:// as torch does it."""
    # (180 s, not 60: beside busy lanes rank 0 can take over a minute to
    # start its store, in a container most of all, and the others must not
    # give up on it first; each test bounds the whole step)
    timeout = datetime.timedelta(seconds=180)
    use_libuv_only_if_built()
    env = os.environ
    if env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and store_kwargs():
        # Under torchrun, env:// makes a client of the agent's store, asking
        # for libuv whatever USE_LIBUV says (PyTorch 2.6): the same client
        # without it
        store = dist.TCPStore(host_name=env["MASTER_ADDR"], port=int(env["MASTER_PORT"]),
                              world_size=int(env["WORLD_SIZE"]), is_master=False,
                              timeout=timeout, **store_kwargs())
        dist.init_process_group("gloo", store=store, rank=int(env["RANK"]),
                                world_size=int(env["WORLD_SIZE"]), timeout=timeout)
    else:
        dist.init_process_group("gloo", init_method="env://", timeout=timeout)


def main():
    # A rank still here after 200 s, short of the tests' 240 s bound on the step, is
    # hung: its threads' stacks go to stderr, which the failing test shows, and it exits.
    faulthandler.dump_traceback_later(200, exit=True)
    process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    reduced_at = time.time()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.ones(2, 4)).sum().backward()
    if len(sys.argv) > 1 and rank == 0:
        meet(sys.argv[1])
    dist.barrier()
    env = os.environ.get
    line = (f"RANK={rank} WORLD={world} LOCAL_RANK={env('LOCAL_RANK', 'unset')}"
            f" HOST={socket.gethostname()} SUM={int(t.item())}"
            f" MASTER_ADDR={env('MASTER_ADDR', 'unset')} MASTER_PORT={env('MASTER_PORT', 'unset')}"
            f" CVD={env('CUDA_VISIBLE_DEVICES', 'unset')} ORDER={env('CUDA_DEVICE_ORDER', 'unset')}"
            f" CPUS={env('DIST_TRAIN_CPUS', 'unset')} AFFINITY={affinity()}"
            f" OMP={env('OMP_NUM_THREADS', 'unset')} IMAGE={env('PYTORCH_VERSION', 'unset')}"
            f" LWS={env('LOCAL_WORLD_SIZE', 'unset')} GROUP={env('GROUP_RANK', 'unset')}"
            f" RUN_ID={env('TORCHELASTIC_RUN_ID', 'unset')} REDUCED_AT={reduced_at:.3f}")
    # (one write, whole: torchrun runs its processes with python -u, where print writes
    # the text and its newline apart, and the processes of a node share one stdout)
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())
    dist.destroy_process_group()


main()
