#!/usr/bin/env python3
"""PyTorch DDP that stops together and resumes: the gang pattern of --dist-train.

- The process group comes from the environment --dist-train sets (env://).
- After each step, dtshim.progress() feeds the optional watchdog
  (--dist-train=watchdog=SECONDS) and dtshim.should_preempt() asks every rank
  at once whether any of them got the preemption signal (SIGUSR2 from
  `#SBATCH --signal=USR2@120` or `scancel --signal=USR2`, or SIGTERM).  When
  one did, every rank leaves at the same step and rank 0 saves a checkpoint.
- On a restart (TORCHELASTIC_RESTART_COUNT > 0: a requeue, or an attempt of
  dist-train-restart) it resumes from that checkpoint.

    srun --dist-train --mpi=pmix -N2 -n4 python3 examples/preempt_train.py --dir /shared/run1
"""
import argparse
import gc
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import dtshim


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, help="checkpoint directory (shared by the nodes)")
    p.add_argument("--steps", type=int, default=1000, help="training steps in all")
    p.add_argument("--step-time", type=float, default=0.05, help="extra seconds per step")
    p.add_argument("--ask-every", type=int, default=1,
                   help="ask should_preempt() every N steps (it is a collective)")
    p.add_argument("--hang", type=int, nargs=2, metavar=("RANK", "STEP"),
                   help="test only: RANK stops making progress at STEP")
    return p.parse_args()


def train(args):
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ckpt = os.path.join(args.dir, "checkpoint.pt")
    start = 0
    if restart > 0 and os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    # From here the shim records the preemption signal; before it, SIGUSR2
    # ends this rank (its default action).  So "starting" tells whoever
    # waits for it that the signal may come.
    dtshim.init()
    print(f"rank {rank} of {world}: restart {restart}, starting at step {start}"
          f" (the shim over {dtshim.backend()})", flush=True)

    gen = torch.Generator().manual_seed(1000 * (restart + 1) + rank)
    step = start
    while step < args.steps:
        if args.hang and rank == args.hang[0] and step == args.hang[1]:
            time.sleep(3600)  # a wedged rank: no progress, no exit
        x = torch.randn(32, 16, generator=gen)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        dtshim.progress()
        time.sleep(args.step_time)
        if step % args.ask_every == 0 and dtshim.should_preempt():
            break
    if rank == 0:
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                    "step": step}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
    dist.barrier()
    print(f"rank {rank}: stopped at step {step} "
          f"({'preempted' if step < args.steps else 'done'})", flush=True)


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


def main():
    args = parse_args()
    use_libuv_only_if_built()
    dist.init_process_group("gloo")
    train(args)
    # End the group while Python is fully alive, after the model is gone with
    # train()'s frame: see examples/ddp_train.py (a gloo deadlock at exit).
    gc.collect()
    dist.destroy_process_group()
    dtshim.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
