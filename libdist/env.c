/* env.c - each profile's variables from Slurm's facts: torchrun's contract for one task
 * per rank, and the launchers' for one task per node. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "env.h"

struct env_builder {
    struct dist_var *out;
    size_t n;
};

static void put (struct env_builder *b, const char *name,
                 enum dist_overwrite overwrite, const char *value)
{
    struct dist_var *v;

    if (value[0] == '\0' || b->n >= DIST_ENV_MAX)
        return;
    v = &b->out[b->n++];
    v->name = name;
    v->overwrite = overwrite;
    snprintf (v->value, sizeof (v->value), "%s", value);
}

static void put_u (struct env_builder *b, const char *name,
                   enum dist_overwrite overwrite, unsigned long value)
{
    char buf[24];
    snprintf (buf, sizeof (buf), "%lu", value);
    put (b, name, overwrite, buf);
}

/* What every profile gets: the interface that reaches rank 0, the shim's watchdog. */
static void put_common (struct env_builder *b, const struct dist_step *step)
{
    put (b, "NCCL_SOCKET_IFNAME", DIST_DEFAULT, step->ifname);
    put (b, "GLOO_SOCKET_IFNAME", DIST_DEFAULT, step->ifname);
    if (step->watchdog_s > 0) /* read by the shim's watchdog */
        put_u (b, "DIST_TRAIN_WATCHDOG", DIST_DEFAULT, step->watchdog_s);
}

/* What one task per rank gets; `for_submitit` leaves out the variables submitit's
 * export() writes (it refuses to replace them) and names rank 0 under our own names. */
static void put_generic (struct env_builder *b, const struct dist_step *step,
                         uint32_t rank, uint32_t local_rank, bool for_submitit)
{
    if (!for_submitit) {
        put_u (b, "RANK", DIST_FACT, rank);
        put_u (b, "LOCAL_RANK", DIST_FACT, local_rank);
        put_u (b, "WORLD_SIZE", DIST_FACT, step->world_size);
        put_u (b, "LOCAL_WORLD_SIZE", DIST_FACT, step->local_world_size);
    }
    put_u (b, "GROUP_RANK", DIST_FACT, step->node_rank);
    put_u (b, "NODE_RANK", DIST_FACT, step->node_rank);
    put_u (b, "GROUP_WORLD_SIZE", DIST_FACT, step->node_count);
    if (!for_submitit) {
        put (b, "MASTER_ADDR", DIST_DEFAULT, step->master_addr);
        put_u (b, "MASTER_PORT", DIST_DEFAULT, step->master_port);
    } else {
        /* the plugin's answer, for the program to hand to submitit */
        put (b, "DIST_TRAIN_MASTER_ADDR", DIST_FACT, step->master_addr);
        put_u (b, "DIST_TRAIN_MASTER_PORT", DIST_FACT, step->master_port);
    }
    put_u (b, "OMP_NUM_THREADS", DIST_DEFAULT,
           step->cpus_per_task > 0 ? step->cpus_per_task : 1);
    put_common (b, step);
}

static void run_id (const struct dist_step *step, char id[DIST_VALUE_MAX])
{
    snprintf (id, DIST_VALUE_MAX, "slurm-%lu.%lu", (unsigned long) step->job_id,
              (unsigned long) step->step_id);
}

/* torchrun's own variables; `elastic` adds TORCHELASTIC_*, which tell torch
 * (is_torchelastic_launched()) and Lightning that torchrun started the task. */
static void put_torch (struct env_builder *b, const struct dist_step *step,
                       uint32_t rank, bool elastic)
{
    char id[DIST_VALUE_MAX];

    put (b, "ROLE_NAME", DIST_FACT, "default");
    put_u (b, "ROLE_RANK", DIST_FACT, rank);
    put_u (b, "ROLE_WORLD_SIZE", DIST_FACT, step->world_size);
    if (elastic) {
        run_id (step, id);
        put (b, "TORCHELASTIC_RUN_ID", DIST_FACT, id);
        put_u (b, "TORCHELASTIC_RESTART_COUNT", DIST_FACT, step->restart_count);
        put_u (b, "TORCHELASTIC_MAX_RESTARTS", DIST_DEFAULT, 0);
    }
    put (b, "TORCH_NCCL_ASYNC_ERROR_HANDLING", DIST_DEFAULT, "1");
}

/* One task per node, a launcher in it.  torchrun reads each flag from PET_<FLAG>;
 * composer's launcher reads WORLD_SIZE, LOCAL_WORLD_SIZE (its processes on this node),
 * NODE_RANK, BASE_RANK and MASTER_*; accelerate has no variables and takes its flags
 * from these.  The sizes count the processes the launchers start, not Slurm's tasks. */
static void put_launcher (struct env_builder *b, const struct dist_step *step)
{
    uint32_t nproc = step->nproc_per_node > 0 ? step->nproc_per_node : 1;
    uint64_t world = (uint64_t) step->node_count * nproc;
    char id[DIST_VALUE_MAX];

    put_u (b, "PET_NNODES", DIST_FACT, step->node_count);
    put_u (b, "PET_NODE_RANK", DIST_FACT, step->node_rank);
    put_u (b, "PET_NPROC_PER_NODE", DIST_DEFAULT, nproc);
    put (b, "PET_MASTER_ADDR", DIST_DEFAULT, step->master_addr);
    put_u (b, "PET_MASTER_PORT", DIST_DEFAULT, step->master_port);
    run_id (step, id);
    put (b, "PET_RDZV_ID", DIST_DEFAULT, id);
    put_u (b, "WORLD_SIZE", DIST_FACT, (unsigned long) world);
    put_u (b, "LOCAL_WORLD_SIZE", DIST_FACT, nproc);
    put_u (b, "NODE_RANK", DIST_FACT, step->node_rank);
    put_u (b, "GROUP_RANK", DIST_FACT, step->node_rank);
    put_u (b, "GROUP_WORLD_SIZE", DIST_FACT, step->node_count);
    put_u (b, "BASE_RANK", DIST_FACT, (unsigned long) ((uint64_t) step->node_rank * nproc));
    put (b, "MASTER_ADDR", DIST_DEFAULT, step->master_addr);
    put_u (b, "MASTER_PORT", DIST_DEFAULT, step->master_port);
    /* the node's CPUs shared by its processes (torchrun would set 1) */
    put_u (b, "OMP_NUM_THREADS", DIST_DEFAULT,
           step->cpus_per_task > nproc ? step->cpus_per_task / nproc : 1);
    put (b, "TORCH_NCCL_ASYNC_ERROR_HANDLING", DIST_DEFAULT, "1");
    put_common (b, step);
}

/* jax.distributed.initialize()'s coordinator and process facts. */
static void put_jax (struct env_builder *b, const struct dist_step *step,
                     uint32_t rank)
{
    char coordinator[DIST_VALUE_MAX];
    bool ipv6 = strchr (step->master_addr, ':') != NULL;

    snprintf (coordinator, sizeof (coordinator), ipv6 ? "[%s]:%u" : "%s:%u",
              step->master_addr, (unsigned) step->master_port);
    put (b, "JAX_COORDINATOR_ADDRESS", DIST_DEFAULT, coordinator);
    put_u (b, "JAX_NUM_PROCESSES", DIST_FACT, step->world_size);
    put_u (b, "JAX_PROCESS_ID", DIST_FACT, rank);
}

size_t dist_env_build (enum dist_profile profile, const struct dist_step *step,
                       uint32_t rank, uint32_t local_rank,
                       struct dist_var out[DIST_ENV_MAX])
{
    struct env_builder b = { .out = out, .n = 0 };

    switch (profile) {
    case DIST_PROFILE_OFF:
        break;
    case DIST_PROFILE_LAUNCHER:
        put_launcher (&b, step);
        break;
    case DIST_PROFILE_TORCH:
    case DIST_PROFILE_LIGHTNING:
        put_generic (&b, step, rank, local_rank, false);
        put_torch (&b, step, rank, profile == DIST_PROFILE_TORCH);
        break;
    case DIST_PROFILE_SUBMITIT:
        put_generic (&b, step, rank, local_rank, true);
        put (&b, "TORCH_NCCL_ASYNC_ERROR_HANDLING", DIST_DEFAULT, "1");
        break;
    case DIST_PROFILE_JAX:
        put_generic (&b, step, rank, local_rank, false);
        put_jax (&b, step, rank);
        break;
    case DIST_PROFILE_TF:
        put_generic (&b, step, rank, local_rank, false);
        break;
    }
    return b.n;
}
