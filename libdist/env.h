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
    uint16_t port_lo, port_hi; /* the admin's port_range, for the doctor; 0 unknown */
    char ifname[DIST_IFNAME_MAX]; /* interface that reaches rank 0; "" unknown */
};

enum dist_overwrite {
    DIST_FACT, /* a fact of the layout: always set from Slurm */
    DIST_DEFAULT, /* a choice the user may have made: keep theirs */
};

struct dist_var {
    const char *name;
    char value[DIST_VALUE_MAX];
    enum dist_overwrite overwrite;
};

/* Fill out[] with the variables of a profile for one task and return how
 * many (fewer than DIST_ENV_MAX: env.c fails to compile if a profile could
 * set more, so none is ever dropped): the generic ones every profile sets (RANK,
 * sizes, MASTER_ADDR/PORT, OMP_NUM_THREADS, interfaces), then the profile's
 * own.  Variables with no value (an unknown interface) are left out. */
size_t dist_env_build (enum dist_profile profile, const struct dist_step *step, uint32_t rank,
                       uint32_t local_rank, struct dist_var out[DIST_ENV_MAX]);

#endif /* DIST_ENV_H */
