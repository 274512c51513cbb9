/* env.c - the torch profile: torchrun's variables from Slurm's facts. */
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

static void put_generic (struct env_builder *b, const struct dist_step *step,
                         uint32_t rank, uint32_t local_rank)
{
    put_u (b, "RANK", DIST_FACT, rank);
    put_u (b, "LOCAL_RANK", DIST_FACT, local_rank);
    put_u (b, "WORLD_SIZE", DIST_FACT, step->world_size);
    put_u (b, "LOCAL_WORLD_SIZE", DIST_FACT, step->local_world_size);
    put_u (b, "GROUP_RANK", DIST_FACT, step->node_rank);
    put_u (b, "NODE_RANK", DIST_FACT, step->node_rank);
    put_u (b, "GROUP_WORLD_SIZE", DIST_FACT, step->node_count);
    put (b, "MASTER_ADDR", DIST_DEFAULT, step->master_addr);
    put_u (b, "MASTER_PORT", DIST_DEFAULT, step->master_port);
    put_u (b, "OMP_NUM_THREADS", DIST_DEFAULT,
           step->cpus_per_task > 0 ? step->cpus_per_task : 1);
    put (b, "NCCL_SOCKET_IFNAME", DIST_DEFAULT, step->ifname);
    put (b, "GLOO_SOCKET_IFNAME", DIST_DEFAULT, step->ifname);
    if (step->watchdog_s > 0) /* read by the shim's watchdog */
        put_u (b, "DIST_TRAIN_WATCHDOG", DIST_DEFAULT, step->watchdog_s);
}

/* torchrun's own variables. */
static void put_torch (struct env_builder *b, const struct dist_step *step,
                       uint32_t rank)
{
    char run_id[DIST_VALUE_MAX];

    put (b, "ROLE_NAME", DIST_FACT, "default");
    put_u (b, "ROLE_RANK", DIST_FACT, rank);
    put_u (b, "ROLE_WORLD_SIZE", DIST_FACT, step->world_size);
    snprintf (run_id, sizeof (run_id), "slurm-%lu.%lu",
              (unsigned long) step->job_id, (unsigned long) step->step_id);
    put (b, "TORCHELASTIC_RUN_ID", DIST_FACT, run_id);
    put_u (b, "TORCHELASTIC_RESTART_COUNT", DIST_FACT, step->restart_count);
    put_u (b, "TORCHELASTIC_MAX_RESTARTS", DIST_DEFAULT, 0);
    put (b, "TORCH_NCCL_ASYNC_ERROR_HANDLING", DIST_DEFAULT, "1");
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

    if (profile == DIST_PROFILE_OFF)
        return 0;
    put_generic (&b, step, rank, local_rank);
    if (profile == DIST_PROFILE_TORCH)
        put_torch (&b, step, rank);
    else if (profile == DIST_PROFILE_JAX)
        put_jax (&b, step, rank);
    return b.n;
}
