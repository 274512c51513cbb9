/* env.h - the environment a training task gets (torchrun's contract).
 *
 * The front end gathers the step's facts once per node (struct dist_step),
 * then for each task asks for the variables of that rank and sets them.
 */
#ifndef DIST_ENV_H
#define DIST_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address.h"
#include "config.h"

#define DIST_ENV_MAX 32
#define DIST_VALUE_MAX 64

/* What is the same for every task of the step on one node. */
struct dist_step {
    uint32_t job_id;
    uint32_t step_id;
    uint32_t world_size; /* tasks in the step */
    uint32_t node_rank; /* index of this node in the step */
    uint32_t node_count; /* nodes in the step */
    uint32_t local_world_size; /* tasks of the step on this node */
    uint32_t cpus_per_task;
    uint32_t restart_count; /* SLURM_RESTART_COUNT, 0 if unset */
    uint32_t watchdog_s; /* SPEC watchdog=: DIST_TRAIN_WATCHDOG, 0 = off */
    uint32_t nproc_per_node; /* launcher: the processes each node's launcher starts */
    char master_addr[DIST_ADDR_MAX];
    uint16_t master_port;
    uint16_t ras_port; /* NCCL's RAS client port, NCCL_RAS_ADDR; 0 none */
    uint16_t port_lo, port_hi; /* the admin's port_range, for the doctor; 0 unknown */
    char ifname[DIST_IFNAME_MAX]; /* interface that reaches rank 0; "" unknown */
};

enum dist_overwrite {
    DIST_FACT, /* a fact of the layout: always set from Slurm */
    DIST_DEFAULT, /* a choice the user may have made: keep theirs */
};

/* A set of profiles, a bit for each. */
#define DIST_P(profile) (1u << DIST_PROFILE_##profile)
#define DIST_P_ALL                                                                                 \
    (DIST_P (TORCH) | DIST_P (JAX) | DIST_P (TF) | DIST_P (LAUNCHER) | DIST_P (LIGHTNING)          \
     | DIST_P (SUBMITIT))
#define DIST_P_TASK_RANKS (DIST_P (TORCH) | DIST_P (LIGHTNING) | DIST_P (JAX) | DIST_P (TF))
#define DIST_P_SIZES (DIST_P_ALL & ~DIST_P (SUBMITIT))

/* Every variable the plugin may set in a task, and nothing else: its name, whether
 * a value the user exported before srun is kept (DIST_DEFAULT) or replaced by the
 * plugin's (DIST_FACT), and the profiles that get it.  env.c builds the contract's
 * variables from it, and the plugin sets every other one (binding, groups, the key)
 * by its id, so that one list says what a task can get; the user guide's table is
 * checked against it (test_task_vars). */
#define DIST_TASK_VARS(X)                                                                          \
    /* the contract, from the step's facts (env.c) */                                              \
    X (RANK, "RANK", DIST_FACT, DIST_P_TASK_RANKS)                                                 \
    X (LOCAL_RANK, "LOCAL_RANK", DIST_FACT, DIST_P_TASK_RANKS)                                     \
    X (WORLD_SIZE, "WORLD_SIZE", DIST_FACT, DIST_P_SIZES)                                          \
    X (LOCAL_WORLD_SIZE, "LOCAL_WORLD_SIZE", DIST_FACT, DIST_P_SIZES)                              \
    X (GROUP_RANK, "GROUP_RANK", DIST_FACT, DIST_P_ALL)                                            \
    X (NODE_RANK, "NODE_RANK", DIST_FACT, DIST_P_ALL)                                              \
    X (GROUP_WORLD_SIZE, "GROUP_WORLD_SIZE", DIST_FACT, DIST_P_ALL)                                \
    X (ROLE_NAME, "ROLE_NAME", DIST_FACT, DIST_P (TORCH) | DIST_P (LIGHTNING))                     \
    X (ROLE_RANK, "ROLE_RANK", DIST_FACT, DIST_P (TORCH) | DIST_P (LIGHTNING))                     \
    X (ROLE_WORLD_SIZE, "ROLE_WORLD_SIZE", DIST_FACT, DIST_P (TORCH) | DIST_P (LIGHTNING))         \
    X (MASTER_ADDR, "MASTER_ADDR", DIST_DEFAULT, DIST_P_SIZES)                                     \
    X (MASTER_PORT, "MASTER_PORT", DIST_DEFAULT, DIST_P_SIZES)                                     \
    X (SUBMITIT_MASTER_ADDR, "DIST_TRAIN_MASTER_ADDR", DIST_FACT, DIST_P (SUBMITIT))               \
    X (SUBMITIT_MASTER_PORT, "DIST_TRAIN_MASTER_PORT", DIST_FACT, DIST_P (SUBMITIT))               \
    X (TORCHELASTIC_RUN_ID, "TORCHELASTIC_RUN_ID", DIST_FACT, DIST_P (TORCH))                      \
    X (TORCHELASTIC_RESTART_COUNT, "TORCHELASTIC_RESTART_COUNT", DIST_FACT, DIST_P (TORCH))        \
    X (TORCHELASTIC_MAX_RESTARTS, "TORCHELASTIC_MAX_RESTARTS", DIST_DEFAULT, DIST_P (TORCH))       \
    X (TORCH_NCCL_ASYNC_ERROR_HANDLING, "TORCH_NCCL_ASYNC_ERROR_HANDLING", DIST_DEFAULT,           \
       DIST_P (TORCH) | DIST_P (LIGHTNING) | DIST_P (SUBMITIT) | DIST_P (LAUNCHER))                \
    X (OMP_NUM_THREADS, "OMP_NUM_THREADS", DIST_DEFAULT, DIST_P_ALL)                               \
    X (NCCL_SOCKET_IFNAME, "NCCL_SOCKET_IFNAME", DIST_DEFAULT, DIST_P_ALL)                         \
    X (GLOO_SOCKET_IFNAME, "GLOO_SOCKET_IFNAME", DIST_DEFAULT, DIST_P_ALL)                         \
    X (NCCL_RAS_ADDR, "NCCL_RAS_ADDR", DIST_DEFAULT, DIST_P_ALL & ~DIST_P (TF))                    \
    X (JAX_COORDINATOR_ADDRESS, "JAX_COORDINATOR_ADDRESS", DIST_DEFAULT, DIST_P (JAX))             \
    X (JAX_NUM_PROCESSES, "JAX_NUM_PROCESSES", DIST_FACT, DIST_P (JAX))                            \
    X (JAX_PROCESS_ID, "JAX_PROCESS_ID", DIST_FACT, DIST_P (JAX))                                  \
    X (PET_NNODES, "PET_NNODES", DIST_FACT, DIST_P (LAUNCHER))                                     \
    X (PET_NODE_RANK, "PET_NODE_RANK", DIST_FACT, DIST_P (LAUNCHER))                               \
    X (PET_NPROC_PER_NODE, "PET_NPROC_PER_NODE", DIST_DEFAULT, DIST_P (LAUNCHER))                  \
    X (PET_MASTER_ADDR, "PET_MASTER_ADDR", DIST_DEFAULT, DIST_P (LAUNCHER))                        \
    X (PET_MASTER_PORT, "PET_MASTER_PORT", DIST_DEFAULT, DIST_P (LAUNCHER))                        \
    X (PET_RDZV_ID, "PET_RDZV_ID", DIST_DEFAULT, DIST_P (LAUNCHER))                                \
    X (BASE_RANK, "BASE_RANK", DIST_FACT, DIST_P (LAUNCHER))                                       \
    X (IFNAME, "DIST_TRAIN_IFNAME", DIST_FACT, DIST_P_ALL)                                         \
    X (PORT_RANGE, "DIST_TRAIN_PORT_RANGE", DIST_FACT, DIST_P_ALL)                                 \
    X (WATCHDOG, "DIST_TRAIN_WATCHDOG", DIST_DEFAULT, DIST_P_ALL)                                  \
    /* the plugin's, per node and rank (spank/remote.c) */                                         \
    X (TF_CONFIG, "TF_CONFIG", DIST_DEFAULT, DIST_P (TF))                                          \
    X (STEP_KEY, "DIST_TRAIN_STEP_KEY", DIST_FACT, DIST_P_ALL)                                     \
    X (LAYOUT, "DIST_TRAIN_LAYOUT", DIST_FACT, DIST_P_ALL)                                         \
    X (TOPOLOGY_GROUP, "DIST_TRAIN_TOPOLOGY_GROUP", DIST_FACT, DIST_P_ALL)                         \
    X (TOPOLOGY_GROUPS, "DIST_TRAIN_TOPOLOGY_GROUPS", DIST_FACT, DIST_P_ALL)                       \
    X (TOPOLOGY_RANK, "DIST_TRAIN_TOPOLOGY_RANK", DIST_FACT, DIST_P_ALL)                           \
    X (TOPOLOGY_SIZE, "DIST_TRAIN_TOPOLOGY_SIZE", DIST_FACT, DIST_P_ALL)                           \
    X (RANK_ORDER, "DIST_TRAIN_RANK_ORDER", DIST_FACT, DIST_P_ALL)                                 \
    /* the binding (spank/bind.c) */                                                               \
    X (CUDA_VISIBLE_DEVICES, "CUDA_VISIBLE_DEVICES", DIST_FACT, DIST_P_ALL)                        \
    X (CUDA_DEVICE_ORDER, "CUDA_DEVICE_ORDER", DIST_FACT, DIST_P_ALL)                              \
    X (GPUS, "DIST_TRAIN_GPUS", DIST_FACT, DIST_P_ALL)                                             \
    X (DEVICE, "DIST_TRAIN_DEVICE", DIST_FACT, DIST_P_ALL)                                         \
    X (CPUS, "DIST_TRAIN_CPUS", DIST_FACT, DIST_P_ALL)                                             \
    X (MEMS, "DIST_TRAIN_MEMS", DIST_FACT, DIST_P_ALL)                                             \
    X (NIC, "DIST_TRAIN_NIC", DIST_FACT, DIST_P_ALL)                                               \
    X (NCCL_IB_HCA, "NCCL_IB_HCA", DIST_DEFAULT, DIST_P_ALL)                                       \
    X (UCX_NET_DEVICES, "UCX_NET_DEVICES", DIST_DEFAULT, DIST_P_ALL)

enum dist_var_id {
#define DIST_VAR_ID(id, name, overwrite, profiles) DIST_VAR_##id,
    DIST_TASK_VARS (DIST_VAR_ID)
#undef DIST_VAR_ID
        DIST_VAR_COUNT
};

struct dist_var_info {
    const char *name;
    enum dist_overwrite overwrite;
    unsigned profiles; /* DIST_P () bits */
};

/* DIST_TASK_VARS as data, by id. */
extern const struct dist_var_info dist_task_vars[DIST_VAR_COUNT];

struct dist_var {
    enum dist_var_id id; /* its name and policy: dist_task_vars[id] */
    char value[DIST_VALUE_MAX];
};

/* Fill out[] with the variables of a profile for one task and return how
 * many (fewer than DIST_ENV_MAX: env.c fails to compile if a profile could
 * set more, so none is ever dropped): the generic ones every profile sets (RANK,
 * sizes, MASTER_ADDR/PORT, OMP_NUM_THREADS, interfaces), then the profile's
 * own.  Variables with no value (an unknown interface) are left out. */
size_t dist_env_build (enum dist_profile profile, const struct dist_step *step, uint32_t rank,
                       uint32_t local_rank, struct dist_var out[DIST_ENV_MAX]);

#endif /* DIST_ENV_H */
