"""torch_store.py - PyTorch's TCPStore made to work where PyTorch was built without libuv,
for the helpers beside it that rendezvous through one (they import it; run it to see what
this PyTorch needs: python3 torch_store.py).

PyTorch 2.4 and later rendezvous (env://, tcp://) through a libuv TCPStore unless
USE_LIBUV=0, and a TCPStore made directly asks for libuv whatever USE_LIBUV says; both
fail where PyTorch was built without libuv, as Debian 13's and forky's are: "use_libuv was
requested but PyTorch was built without libuv support, run with USE_LIBUV=0".  Debian 12's
PyTorch 1.13 predates the keyword, never uses libuv and is left alone."""
import functools
import os
import socket

import torch.distributed as dist


@functools.lru_cache(maxsize=None)
def libuv_built():
    """Whether this PyTorch has libuv: None when it predates the use_libuv keyword.

    A throwaway store server on a free loopback port tells; one that fails for
    another reason says nothing about libuv, and leaves PyTorch's default."""
    try:
        store = dist.TCPStore("127.0.0.1", 0, 1, True, use_libuv=True, wait_for_workers=False)
    except TypeError:  # no use_libuv: PyTorch before libuv
        return None
    except RuntimeError as e:
        return "libuv" not in str(e)
    del store
    return True


def use_libuv_only_if_built():
    """Set USE_LIBUV=0 for torch's rendezvous when this PyTorch lacks libuv (unless
    the user chose)."""
    if "USE_LIBUV" not in os.environ and libuv_built() is False:
        os.environ["USE_LIBUV"] = "0"


def store_kwargs():
    """The keywords a TCPStore made directly needs here: use_libuv=False where this
    PyTorch lacks libuv or USE_LIBUV=0 says so, none where PyTorch has no such keyword."""
    built = libuv_built()
    if built is None:
        return {}
    if built is False or os.environ.get("USE_LIBUV") == "0":
        return {"use_libuv": False}
    return {}


def port_from_rank0(rank, broadcast):
    """A port free on rank 0's node for the store, picked by rank 0 and learnt by every
    rank through broadcast (dtshim's: bytes from rank 0 to all), so that the step needs
    no MASTER_PORT."""
    port = b""
    if rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = str(s.getsockname()[1]).encode()
    return int(broadcast(port))


if __name__ == "__main__":
    use_libuv_only_if_built()
    print(f"libuv_built={libuv_built()} USE_LIBUV={os.environ.get('USE_LIBUV', 'unset')}"
          f" store_kwargs={store_kwargs()}")
