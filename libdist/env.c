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

/* A string variable; one with no value (an unknown interface) is left out. */
static void put_str (struct env_builder *b, const char *name, enum dist_overwrite overwrite,
                     const char *value)
{
    struct dist_var *v;

    /* (the profiles fit DIST_ENV_MAX: asserted below, at compile time) */
    if (value[0] == '\0' || b->n >= DIST_ENV_MAX)
        return;
    v = &b->out[b->n++];
    v->name = name;
    v->overwrite = overwrite;
    snprintf (v->value, sizeof (v->value), "%s", value);
}

static void put_num (struct env_builder *b, const char *name, enum dist_overwrite overwrite,
                     unsigned long value)
{
    char buf[24];
    snprintf (buf, sizeof (buf), "%lu", value);
    put_str (b, name, overwrite, buf);
}

/* A number whose 0 means "off": left out then. */
static void put_pos (struct env_builder *b, const char *name, enum dist_overwrite overwrite,
                     unsigned long value)
{
    if (value > 0)
        put_num (b, name, overwrite, value);
}

/* Each profile is a list of its variables, VAR (kind, name, overwrite, value), made
 * of the parts below: the one list both sets them (SET, in dist_env_build, where the
 * values' names are in scope) and counts them (COUNT), so that no profile can
 * outgrow the caller's array of DIST_ENV_MAX without this file failing to compile.
 * kind is str, num or pos (put_str, put_num, put_pos). */
#define SET(kind, name, overwrite, value) put_##kind (&b, name, overwrite, value);
#define COUNT(kind, name, overwrite, value) +1

/* What every profile gets: the interface that reaches rank 0, the shim's watchdog; and
 * the plugin's own choices under names a user does not set, so that dist-train-doctor
 * can compare them with NCCL's, gloo's and the kernel's. */
#define COMMON_VARS(VAR)                                                                           \
    VAR (str, "NCCL_SOCKET_IFNAME", DIST_DEFAULT, step->ifname)                                    \
    VAR (str, "GLOO_SOCKET_IFNAME", DIST_DEFAULT, step->ifname)                                    \
    VAR (pos, "DIST_TRAIN_WATCHDOG", DIST_DEFAULT, step->watchdog_s)                               \
    VAR (str, "DIST_TRAIN_IFNAME", DIST_FACT, step->ifname)                                        \
    VAR (str, "DIST_TRAIN_PORT_RANGE", DIST_FACT, ports)

/* The ranks of one task per rank: submitit's export() writes them itself. */
#define RANK_VARS(VAR)                                                                             \
    VAR (num, "RANK", DIST_FACT, rank)                                                             \
    VAR (num, "LOCAL_RANK", DIST_FACT, local_rank)                                                 \
    VAR (num, "WORLD_SIZE", DIST_FACT, step->world_size)                                           \
    VAR (num, "LOCAL_WORLD_SIZE", DIST_FACT, step->local_world_size)

#define NODE_VARS(VAR)                                                                             \
    VAR (num, "GROUP_RANK", DIST_FACT, step->node_rank)                                            \
    VAR (num, "NODE_RANK", DIST_FACT, step->node_rank)                                             \
    VAR (num, "GROUP_WORLD_SIZE", DIST_FACT, step->node_count)

#define MASTER_VARS(VAR)                                                                           \
    VAR (str, "MASTER_ADDR", DIST_DEFAULT, step->master_addr)                                      \
    VAR (num, "MASTER_PORT", DIST_DEFAULT, step->master_port)

/* submitit's rank 0 under our own names (its export() refuses to replace
 * MASTER_*): the plugin's answer, for the program to hand to submitit. */
#define SUBMITIT_MASTER_VARS(VAR)                                                                  \
    VAR (str, "DIST_TRAIN_MASTER_ADDR", DIST_FACT, step->master_addr)                              \
    VAR (num, "DIST_TRAIN_MASTER_PORT", DIST_FACT, step->master_port)

#define THREAD_VARS(VAR)                                                                           \
    VAR (num, "OMP_NUM_THREADS", DIST_DEFAULT, step->cpus_per_task > 0 ? step->cpus_per_task : 1)

#define NCCL_VARS(VAR) VAR (str, "TORCH_NCCL_ASYNC_ERROR_HANDLING", DIST_DEFAULT, "1")

/* What one task per rank gets. */
#define GENERIC_VARS(VAR)                                                                          \
    RANK_VARS (VAR) NODE_VARS (VAR) MASTER_VARS (VAR) THREAD_VARS (VAR) COMMON_VARS (VAR)

/* torchrun's own variables. */
#define ROLE_VARS(VAR)                                                                             \
    VAR (str, "ROLE_NAME", DIST_FACT, "default")                                                   \
    VAR (num, "ROLE_RANK", DIST_FACT, rank)                                                        \
    VAR (num, "ROLE_WORLD_SIZE", DIST_FACT, step->world_size)

/* They tell torch (is_torchelastic_launched()) and Lightning that torchrun
 * started the task. */
#define ELASTIC_VARS(VAR)                                                                          \
    VAR (str, "TORCHELASTIC_RUN_ID", DIST_FACT, run)                                               \
    VAR (num, "TORCHELASTIC_RESTART_COUNT", DIST_FACT, step->restart_count)                        \
    VAR (num, "TORCHELASTIC_MAX_RESTARTS", DIST_DEFAULT, 0)

#define TORCH_VARS(VAR) GENERIC_VARS (VAR) ROLE_VARS (VAR) ELASTIC_VARS (VAR) NCCL_VARS (VAR)

/* Lightning picks TorchElasticEnvironment over SLURMEnvironment whenever
 * TORCHELASTIC_RUN_ID is set: torch's profile without it. */
#define LIGHTNING_VARS(VAR) GENERIC_VARS (VAR) ROLE_VARS (VAR) NCCL_VARS (VAR)

/* torch's without the variables submitit's export() writes (it refuses to replace them). */
#define SUBMITIT_VARS(VAR)                                                                         \
    NODE_VARS (VAR) SUBMITIT_MASTER_VARS (VAR) THREAD_VARS (VAR) COMMON_VARS (VAR) NCCL_VARS (VAR)

/* jax.distributed.initialize()'s coordinator and process facts. */
#define JAX_VARS(VAR)                                                                              \
    GENERIC_VARS (VAR)                                                                             \
    VAR (str, "JAX_COORDINATOR_ADDRESS", DIST_DEFAULT, coordinator)                                \
    VAR (num, "JAX_NUM_PROCESSES", DIST_FACT, step->world_size)                                    \
    VAR (num, "JAX_PROCESS_ID", DIST_FACT, rank)

#define TF_VARS(VAR) GENERIC_VARS (VAR)

/* One task per node, a launcher in it.  torchrun reads each flag from PET_<FLAG>;
 * composer's launcher reads WORLD_SIZE, LOCAL_WORLD_SIZE (its processes on this node),
 * NODE_RANK, BASE_RANK and MASTER_*; accelerate has no variables and takes its flags
 * from these.  The sizes count the processes the launchers start, not Slurm's tasks;
 * the node's CPUs are shared by its processes (torchrun would set OMP_NUM_THREADS=1). */
#define LAUNCHER_VARS(VAR)                                                                         \
    VAR (num, "PET_NNODES", DIST_FACT, step->node_count)                                           \
    VAR (num, "PET_NODE_RANK", DIST_FACT, step->node_rank)                                         \
    VAR (num, "PET_NPROC_PER_NODE", DIST_DEFAULT, nproc)                                           \
    VAR (str, "PET_MASTER_ADDR", DIST_DEFAULT, step->master_addr)                                  \
    VAR (num, "PET_MASTER_PORT", DIST_DEFAULT, step->master_port)                                  \
    VAR (str, "PET_RDZV_ID", DIST_DEFAULT, run)                                                    \
    VAR (num, "WORLD_SIZE", DIST_FACT, (unsigned long) ((uint64_t) step->node_count * nproc))      \
    VAR (num, "LOCAL_WORLD_SIZE", DIST_FACT, nproc)                                                \
    NODE_VARS (VAR)                                                                                \
    VAR (num, "BASE_RANK", DIST_FACT, (unsigned long) ((uint64_t) step->node_rank * nproc))        \
    MASTER_VARS (VAR)                                                                              \
    VAR (num, "OMP_NUM_THREADS", DIST_DEFAULT,                                                     \
         step->cpus_per_task > nproc ? step->cpus_per_task / nproc : 1)                            \
    NCCL_VARS (VAR) COMMON_VARS (VAR)

/* Every profile that sets variables, with its list. */
#define PROFILES(P)                                                                                \
    P (DIST_PROFILE_TORCH, TORCH_VARS)                                                             \
    P (DIST_PROFILE_LIGHTNING, LIGHTNING_VARS)                                                     \
    P (DIST_PROFILE_SUBMITIT, SUBMITIT_VARS)                                                       \
    P (DIST_PROFILE_JAX, JAX_VARS)                                                                 \
    P (DIST_PROFILE_TF, TF_VARS)                                                                   \
    P (DIST_PROFILE_LAUNCHER, LAUNCHER_VARS)

/* Strictly less: a caller (or test) that sees a full array knows a variable was dropped. */
#define FITS(profile, vars)                                                                        \
    _Static_assert((0 vars (COUNT)) < DIST_ENV_MAX, #vars " outgrows DIST_ENV_MAX");
PROFILES (FITS)

size_t dist_env_build (enum dist_profile profile, const struct dist_step *step, uint32_t rank,
                       uint32_t local_rank, struct dist_var out[DIST_ENV_MAX])
{
    struct env_builder b = {.out = out, .n = 0};
    uint32_t nproc = step->nproc_per_node > 0 ? step->nproc_per_node : 1;
    char run[DIST_VALUE_MAX], coordinator[DIST_VALUE_MAX], ports[16] = "";

    snprintf (run, sizeof (run), "slurm-%lu.%lu", (unsigned long) step->job_id,
              (unsigned long) step->step_id);
    snprintf (coordinator, sizeof (coordinator),
              strchr (step->master_addr, ':') != NULL ? "[%s]:%u" : "%s:%u", step->master_addr,
              (unsigned) step->master_port);
    if (step->port_lo > 0)
        snprintf (ports, sizeof (ports), "%u-%u", (unsigned) step->port_lo,
                  (unsigned) step->port_hi);
#define CASE(p, vars)                                                                              \
    case p:                                                                                        \
        vars (SET) break;
    switch (profile) {
    case DIST_PROFILE_OFF:
        break;
        PROFILES (CASE)
    }
#undef CASE
    return b.n;
}
