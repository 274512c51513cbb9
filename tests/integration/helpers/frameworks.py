"""frameworks.py FRAMEWORK [MODE] - what a training framework that Debian does
not package decides from a task's environment, reproduced from its source,
then a process group (gloo) and one all_reduce with the values it would use.
One line per rank on stdout, for frameworks.bats:

  lightning          PyTorch Lightning 2.6.2: which cluster environment it
                     picks, whether it registers its Slurm auto-requeue
  submitit export    submitit 1.5.4: TorchDistributedEnvironment().export()
                     as most programs call it
  submitit recipe    the user guide's recipe: export() with rank 0's address and
                     port from DIST_TRAIN_MASTER_ADDR/_PORT, and the GPU order kept
  deepspeed          DeepSpeed 0.19.6: whether init_distributed() skips its
                     discovery (mpi4py) and takes the process group from the
                     environment

Each function names the file it mirrors.  Only the decisions are reproduced,
not the frameworks: a change upstream needs a change here."""
import datetime
import faulthandler
import os
import re
import socket
import sys

TIMEOUT = datetime.timedelta(seconds=60)


def allreduce(init_method, rank, world):
    """A process group with these values and one all_reduce: the sum of 1..world."""
    # (torch only where it is used: importing it costs seconds of CPU per rank,
    # and what submitit's export() and DeepSpeed's discovery decide needs none)
    import torch
    import torch.distributed as dist
    from torch_store import use_libuv_only_if_built
    use_libuv_only_if_built()
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world,
                            timeout=TIMEOUT)
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    dist.destroy_process_group()
    return int(t.item())


# --- Lightning ----------------------------------------------------------------
# src/lightning/fabric/plugins/environments/slurm.py (SLURMEnvironment)
def slurm_detect():
    # _is_srun_used(): SLURM_NTASKS set and not _is_slurm_interactive_mode()
    return "SLURM_NTASKS" in os.environ and os.environ.get("SLURM_JOB_NAME") not in (
        "bash", "interactive")


def lightning():
    env = os.environ
    # src/lightning/pytorch/trainer/connectors/accelerator_connector.py,
    # _choose_and_init_cluster_environment: TorchElasticEnvironment first ("it can
    # also be used inside SLURM"), then SLURMEnvironment, LSF, MPI, else
    # LightningEnvironment.  TorchElasticEnvironment.detect() is torch's own
    # is_torchelastic_launched(): TORCHELASTIC_RUN_ID is set.
    import torch.distributed as dist
    if dist.is_available() and dist.is_torchelastic_launched():
        chosen = "TorchElasticEnvironment"
    elif slurm_detect():
        chosen = "SLURMEnvironment"
    else:
        chosen = "LightningEnvironment"  # (no LSF or MPI on the test cluster)
    # src/lightning/pytorch/trainer/connectors/signal_connector.py,
    # register_signal_handlers: the requeue handler only for a SLURMEnvironment
    # with auto_requeue (True by default), on its requeue_signal (SIGUSR1)
    requeue = "SIGUSR1" if chosen == "SLURMEnvironment" else "none"
    if chosen == "SLURMEnvironment":
        # SLURMEnvironment._validate_srun_variables
        if int(env["SLURM_NTASKS"]) > 1 and "SLURM_NTASKS_PER_NODE" not in env:
            sys.exit("lightning: RuntimeError: SLURM_NTASKS_PER_NODE is unset")
        # main_address: MASTER_ADDR, else the first host of SLURM_NODELIST;
        # main_port: MASTER_PORT, else the job id's last 4 digits + 15000
        addr = env.get("MASTER_ADDR") or "(first of SLURM_NODELIST)"
        port = int(env["MASTER_PORT"]) if "MASTER_PORT" in env else int(
            env["SLURM_JOB_ID"][-4:]) + 15000
        rank, world = int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"])
    else:
        # TorchElasticEnvironment: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
        addr, port = env.get("MASTER_ADDR", "127.0.0.1"), int(env.get("MASTER_PORT", 12910))
        rank, world = int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1))
    total = allreduce(f"tcp://{fmt_host(addr)}:{port}", rank, world)
    print(f"RANK={rank} ENV={chosen} REQUEUE={requeue} MASTER={addr}:{port} SUM={total}"
          f" HOST={socket.gethostname()}", flush=True)


def fmt_host(addr):
    return f"[{addr}]" if ":" in addr else addr


# --- submitit -----------------------------------------------------------------
def parse_node_list(text):
    """submitit/slurm/slurm.py, _parse_node_list: a Slurm node list, expanded."""
    hosts = []
    for group in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", text):
        m = re.fullmatch(r"(.*)\[(.*)\]", group)
        if not m:
            hosts.append(group)
            continue
        for part in m.group(2).split(","):
            lo, _, hi = part.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                hosts.append(f"{m.group(1)}{str(i).zfill(len(lo))}")
    return hosts


class TorchDistributedEnvironment:
    """submitit/helpers.py, TorchDistributedEnvironment, with JobEnvironment's
    Slurm variables (submitit/slurm/slurm.py, SlurmJobEnvironment._env)."""

    def __init__(self):
        env = os.environ
        self.master_addr = parse_node_list(env.get("SLURM_JOB_NODELIST", ""))[0]
        if "MASTER_PORT" in env:  # _get_master_port
            self.master_port = int(env["MASTER_PORT"])
        else:
            import random
            self.master_port = random.Random(env["SLURM_JOB_ID"]).randint(20000, 60000)
        self.rank = int(env.get("SLURM_PROCID", 0))
        self.world_size = int(env.get("SLURM_NTASKS", 1))
        self.local_rank = int(env.get("SLURM_LOCALID", 0))
        self.local_world_size = self.world_size // int(env.get("SLURM_JOB_NUM_NODES", 1))

    def export(self, set_cuda_visible_devices=True, overwrite=False):
        env_vars = {
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_world_size),
        }
        if not overwrite:
            for key in env_vars:
                if key in os.environ:
                    raise RuntimeError(
                        f"Cannot export environment variables as {key} is already set")
        if set_cuda_visible_devices:
            env_vars["CUDA_VISIBLE_DEVICES"] = str(self.local_rank)
        os.environ.update(env_vars)
        return self


def submitit(mode):
    cvd_before = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
    denv = TorchDistributedEnvironment()
    try:
        if mode == "recipe":
            denv.master_addr = os.environ.get("DIST_TRAIN_MASTER_ADDR", denv.master_addr)
            denv.master_port = int(os.environ.get("DIST_TRAIN_MASTER_PORT", denv.master_port))
            denv.export(set_cuda_visible_devices=False)
        else:
            denv.export()
    except RuntimeError as e:
        print(f"RANK={denv.rank} EXPORT=raised ({e})", flush=True)
        return
    env = os.environ
    line = (f"RANK={env['RANK']} EXPORT=ok MASTER={env['MASTER_ADDR']}:{env['MASTER_PORT']}"
            f" WORLD={env['WORLD_SIZE']} LOCAL_RANK={env['LOCAL_RANK']}"
            f" CVD_BEFORE={cvd_before} CVD={env.get('CUDA_VISIBLE_DEVICES', 'unset')}")
    if mode == "recipe":
        line += f" SUM={allreduce('env://', int(env['RANK']), int(env['WORLD_SIZE']))}"
    print(line + f" HOST={socket.gethostname()}", flush=True)


# --- DeepSpeed ----------------------------------------------------------------
def deepspeed():
    # deepspeed/comm/comm.py, init_distributed(auto_mpi_discovery=True): without
    # all five, it runs mpi_discovery() (mpi4py), or the AzureML/SageMaker patches
    required_env = ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"]
    missing = [v for v in required_env if v not in os.environ]
    if missing:
        print(f"RANK=? DISCOVERY=mpi4py MISSING={','.join(missing)}", flush=True)
        return
    # then TorchBackend.init_process_group(backend, timeout, init_method=None,
    # rank=-1, world_size=-1): env://
    env = os.environ
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    total = allreduce("env://", rank, world)
    print(f"RANK={rank} DISCOVERY=skipped SUM={total} HOST={socket.gethostname()}", flush=True)


def main():
    # A rank still here after 200 s, short of the tests' 240 s bound on the step, is
    # hung: its threads' stacks go to stderr, which the failing test shows, and it exits.
    faulthandler.dump_traceback_later(200, exit=True)
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "lightning":
        lightning()
    elif what == "submitit":
        submitit(sys.argv[2] if len(sys.argv) > 2 else "export")
    elif what == "deepspeed":
        deepspeed()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
