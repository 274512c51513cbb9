/* handover.h - what srun works out once per step and hands to every node.
 *
 * srun (the local context) asks slurmctld, once per step, which node runs
 * rank 0 and what Slurm's NodeAddr for it is, and whether it armed fail
 * fast.  It passes that in one variable of the step's environment, so that
 * no slurmstepd has to call slurmctld (a call that deadlocks on Slurm's
 * auth lock inside slurmstepd since 23.11, and costs O(nodes) RPCs).
 *
 * The text is "step=JOB.STEP rank0=NODE addr=NODEADDR fail_fast=0|1": it is
 * tied to one step, so a stale copy in a nested environment is ignored.
 */
#ifndef DIST_HANDOVER_H
#define DIST_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIST_HANDOVER_VAR "DIST_TRAIN_SRUN"
#define DIST_NODE_MAX 256 /* a node name or a NodeAddr (a name or an address) */
#define DIST_HANDOVER_MAX (2 * DIST_NODE_MAX + 80)

struct dist_handover {
    uint32_t job_id;
    uint32_t step_id;
    char rank0_node[DIST_NODE_MAX]; /* "" when srun could not tell */
    char rank0_addr[DIST_NODE_MAX]; /* Slurm's NodeAddr of it, "" = none */
    bool fail_fast; /* srun stops the step on a bad exit */
};

/* Write h as text; -1 when a name has a character outside [A-Za-z0-9._:-]
 * or the text does not fit. */
int dist_handover_format (const struct dist_handover *h, char *buf, size_t size);

/* Read text into h; -1 (h cleared) for anything malformed: unknown keys,
 * bad numbers, bad characters, overlong names, a missing step. */
int dist_handover_parse (const char *text, struct dist_handover *h);

#endif /* DIST_HANDOVER_H */
