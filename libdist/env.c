/* env.c - each profile's variables from Slurm's facts: torchrun's contract for one task
 * per rank, and the launchers' for one task per node. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "env.h"

const struct dist_var_info dist_task_vars[DIST_VAR_COUNT] = {
#define INFO(id, name, overwrite, profiles) [DIST_VAR_##id] = {name, overwrite, profiles},
    DIST_TASK_VARS (INFO)
#undef INFO
};

struct env_builder {
    struct dist_var *out;
    size_t n;
};

/* A string variable; one with no value (an unknown interface) is left out. */
static void put_str (struct env_builder *b, enum dist_var_id id, const char *value)
{
    struct dist_var *v;

    /* (the profiles fit DIST_ENV_MAX: asserted below, at compile time) */
    if (value[0] == '\0' || b->n >= DIST_ENV_MAX)
        return;
    v = &b->out[b->n++];
    v->id = id;
    snprintf (v->value, sizeof (v->value), "%s", value);
}

static void put_num (struct env_builder *b, enum dist_var_id id, unsigned long value)
{
    char buf[24];
    snprintf (buf, sizeof (buf), "%lu", value);
    put_str (b, id, buf);
}

/* A number whose 0 means "off": left out then. */
static void put_pos (struct env_builder *b, enum dist_var_id id, unsigned long value)
{
    if (value > 0)
        put_num (b, id, value);
}

/* Each profile is a list of its variables, VAR (kind, id, value), made
 * of the parts below: the one list both sets them (SET, in dist_env_build, where the
 * values' names are in scope) and counts them (COUNT), so that no profile can
 * outgrow the caller's array of DIST_ENV_MAX without this file failing to compile.
 * kind is str, num or pos (put_str, put_num, put_pos). */
#define SET(kind, id, value) put_##kind (&b, DIST_VAR_##id, value);
#define COUNT(kind, id, value) +1

/* What every profile gets: the interface that reaches rank 0, the shim's watchdog; and
 * the plugin's own choices under names a user does not set, so that dist-train-doctor
 * can compare them with NCCL's, gloo's and the kernel's. */
#define COMMON_VARS(VAR)                                                                           \
    VAR (str, NCCL_SOCKET_IFNAME, step->ifname)                                                    \
    VAR (str, GLOO_SOCKET_IFNAME, step->ifname)                                                    \
    VAR (pos, WATCHDOG, step->watchdog_s)                                                          \
    VAR (str, IFNAME, step->ifname)                                                                \
    VAR (str, PORT_RANGE, ports)

/* The ranks of one task per rank: submitit's export() writes them itself. */
#define RANK_VARS(VAR)                                                                             \
    VAR (num, RANK, rank)                                                                          \
    VAR (num, LOCAL_RANK, local_rank)                                                              \
    VAR (num, WORLD_SIZE, step->world_size)                                                        \
    VAR (num, LOCAL_WORLD_SIZE, step->local_world_size)

#define NODE_VARS(VAR)                                                                             \
    VAR (num, GROUP_RANK, step->node_rank)                                                         \
    VAR (num, NODE_RANK, step->node_rank)                                                          \
    VAR (num, GROUP_WORLD_SIZE, step->node_count)

#define MASTER_VARS(VAR)                                                                           \
    VAR (str, MASTER_ADDR, step->master_addr)                                                      \
    VAR (num, MASTER_PORT, step->master_port)

/* submitit's rank 0 under our own names (its export() refuses to replace
 * MASTER_*): the plugin's answer, for the program to hand to submitit. */
#define SUBMITIT_MASTER_VARS(VAR)                                                                  \
    VAR (str, SUBMITIT_MASTER_ADDR, step->master_addr)                                             \
    VAR (num, SUBMITIT_MASTER_PORT, step->master_port)

#define THREAD_VARS(VAR)                                                                           \
    VAR (num, OMP_NUM_THREADS, step->cpus_per_task > 0 ? step->cpus_per_task : 1)

/* The step's own port for NCCL's RAS client socket: its default is one port per node
 * for every step.  Not tf's: its tasks take MASTER_PORT and the ports after it. */
#define RAS_VARS(VAR) VAR (str, NCCL_RAS_ADDR, ras)

#define NCCL_VARS(VAR) VAR (str, TORCH_NCCL_ASYNC_ERROR_HANDLING, "1") RAS_VARS (VAR)

/* What one task per rank gets. */
#define GENERIC_VARS(VAR)                                                                          \
    RANK_VARS (VAR) NODE_VARS (VAR) MASTER_VARS (VAR) THREAD_VARS (VAR) COMMON_VARS (VAR)

/* torchrun's own variables. */
#define ROLE_VARS(VAR)                                                                             \
    VAR (str, ROLE_NAME, "default")                                                                \
    VAR (num, ROLE_RANK, rank)                                                                     \
    VAR (num, ROLE_WORLD_SIZE, step->world_size)

/* They tell torch (is_torchelastic_launched()) and Lightning that torchrun
 * started the task. */
#define ELASTIC_VARS(VAR)                                                                          \
    VAR (str, TORCHELASTIC_RUN_ID, run)                                                            \
    VAR (num, TORCHELASTIC_RESTART_COUNT, step->restart_count)                                     \
    VAR (num, TORCHELASTIC_MAX_RESTARTS, 0)

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
    VAR (str, JAX_COORDINATOR_ADDRESS, coordinator)                                                \
    VAR (num, JAX_NUM_PROCESSES, step->world_size)                                                 \
    VAR (num, JAX_PROCESS_ID, rank)                                                                \
    RAS_VARS (VAR)

#define TF_VARS(VAR) GENERIC_VARS (VAR)

/* One task per node, a launcher in it.  torchrun reads each flag from PET_<FLAG>;
 * composer's launcher reads WORLD_SIZE, LOCAL_WORLD_SIZE (its processes on this node),
 * NODE_RANK, BASE_RANK and MASTER_*; accelerate has no variables and takes its flags
 * from these.  The sizes count the processes the launchers start, not Slurm's tasks;
 * the node's CPUs are shared by its processes (torchrun would set OMP_NUM_THREADS=1). */
#define LAUNCHER_VARS(VAR)                                                                         \
    VAR (num, PET_NNODES, step->node_count)                                                        \
    VAR (num, PET_NODE_RANK, step->node_rank)                                                      \
    VAR (num, PET_NPROC_PER_NODE, nproc)                                                           \
    VAR (str, PET_MASTER_ADDR, step->master_addr)                                                  \
    VAR (num, PET_MASTER_PORT, step->master_port)                                                  \
    VAR (str, PET_RDZV_ID, run)                                                                    \
    VAR (num, WORLD_SIZE, (unsigned long) ((uint64_t) step->node_count * nproc))                   \
    VAR (num, LOCAL_WORLD_SIZE, nproc)                                                             \
    NODE_VARS (VAR)                                                                                \
    VAR (num, BASE_RANK, (unsigned long) ((uint64_t) step->node_rank * nproc))                     \
    MASTER_VARS (VAR)                                                                              \
    VAR (num, OMP_NUM_THREADS, step->cpus_per_task > nproc ? step->cpus_per_task / nproc : 1)      \
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
    char run[DIST_VALUE_MAX], coordinator[DIST_VALUE_MAX], ports[16] = "", ras[24] = "";

    snprintf (run, sizeof (run), "slurm-%lu.%lu", (unsigned long) step->job_id,
              (unsigned long) step->step_id);
    snprintf (coordinator, sizeof (coordinator),
              strchr (step->master_addr, ':') != NULL ? "[%s]:%u" : "%s:%u", step->master_addr,
              (unsigned) step->master_port);
    if (step->ras_port > 0)
        snprintf (ras, sizeof (ras), "localhost:%u", (unsigned) step->ras_port);
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
