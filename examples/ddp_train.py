#!/usr/bin/env python3
"""A small but real PyTorch DDP training run, launched by `srun --dist-train`.

Nothing in here knows about Slurm: like under torchrun, the process group is
set up from the environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
The data is synthetic (a noisy linear target), so the run needs no download.

    srun --dist-train -N2 -n4 python3 examples/ddp_train.py --steps 40
"""
import argparse
import gc
import hashlib
import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40, help="training steps")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate")
    return p.parse_args()


def synthetic_batch(gen, batch, features=16):
    """x ~ N(0, 1); y = x . w_true + small noise, with w_true fixed by seed."""
    w_true = torch.arange(1, features + 1, dtype=torch.float32) / features
    x = torch.randn(batch, features, generator=gen)
    y = x @ w_true + 0.01 * torch.randn(batch, generator=gen)
    return x, y.unsqueeze(1)


def parameter_digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def train(args):
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # same initial weights everywhere (DDP also broadcasts them)
    model = DDP(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard

    if rank == 0:
        print(f"training on {world} ranks, master {os.environ['MASTER_ADDR']}:"
              f"{os.environ['MASTER_PORT']}", flush=True)
    for step in range(args.steps):
        x, y = synthetic_batch(gen, args.batch)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        # the loss averaged over all ranks, so rank 0 reports the global one
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        avg /= world
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"step {step:3d}  loss {avg.item():.6f}", flush=True)

    print(f"rank {rank} on {socket.gethostname()}: final parameters "
          f"{parameter_digest(model.module)}", flush=True)
    dist.barrier()


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
    dist.init_process_group("gloo")  # env:// rendezvous, as torchrun users write it
    train(args)
    # The model, its DDP reducer and every tensor are gone with train()'s frame;
    # collect what cycles keep, then end the group while Python is fully alive.
    # Left to interpreter exit, PyTorch's gloo backend can deadlock (a freed
    # reducer joins gloo's worker threads while one of them waits for the GIL:
    # pytorch/pytorch#56297), and that rank spins at 100% CPU after the others
    # have finished.
    gc.collect()
    dist.destroy_process_group()
    # Every result is printed and the group is gone: what is left is the
    # interpreter's teardown of PyTorch's threads and atexit hooks, and a rank
    # has still been seen to hang after its last line (PyTorch 2.x, Python
    # 3.14), holding the whole step until its time limit. Leave without it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
