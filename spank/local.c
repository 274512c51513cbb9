/* local.c - srun: what is worked out once per step, before launch, and
 * handed to every node (libdist/handover.h).
 *
 * slurmstepd must not call slurmctld (it deadlocks there since 23.11, and
 * every node asking is O(nodes) RPCs per step), so srun does it, once:
 * which node runs rank 0 (the step's real layout, whatever the
 * distribution) and Slurm's NodeAddr for it, for nodes whose names do not
 * resolve.  Fail fast is srun's own kill-on-bad-exit, armed here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "compat.h"
#include "dist_train.h"
#include "libdist/handover.h"

/* The name of the node that runs task 0 (malloc'ed), from the step layout
 * slurmctld holds: one RPC. */
static char *rank0_node (uint32_t job_id, uint32_t step_id)
{
    slurm_step_id_t id;
    slurm_step_layout_t *layout;
    dt_hostlist_t hl = NULL;
    char *name = NULL;
    uint32_t node, i, found = NO_VAL;

    memset (&id, 0, sizeof (id));
    id.job_id = job_id;
    id.step_id = step_id;
    id.step_het_comp = NO_VAL;
    if ((layout = slurm_job_step_layout_get (&id)) == NULL)
        return NULL;
    for (node = 0; node < layout->node_cnt && found == NO_VAL; node++)
        for (i = 0; i < layout->tasks[node]; i++)
            if (layout->tids[node][i] == 0) {
                found = node;
                break;
            }
    if (found != NO_VAL && (hl = slurm_hostlist_create (layout->node_list)) != NULL) {
        for (node = 0; node <= found; node++) {
            free (name);
            if ((name = slurm_hostlist_shift (hl)) == NULL)
                break;
        }
        slurm_hostlist_destroy (hl);
    }
    slurm_job_step_layout_free (layout);
    return name;
}

/* Slurm's NodeAddr for a node into addr ("" when it is the name itself or
 * unknown): one RPC. */
static void node_addr (const char *node, char *addr, size_t addrsz)
{
    node_info_msg_t *msg = NULL;
    char name[DIST_NODE_MAX];

    addr[0] = '\0';
    snprintf (name, sizeof (name), "%s", node);
    if (slurm_load_node_single (&msg, name, SHOW_ALL) != SLURM_SUCCESS || msg == NULL)
        return;
    if (msg->record_count == 1 && msg->node_array[0].node_addr != NULL
        && strcmp (msg->node_array[0].node_addr, node) != 0)
        snprintf (addr, addrsz, "%s", msg->node_array[0].node_addr);
    slurm_free_node_info_msg (msg);
}

int dist_train_local_check (void)
{
    if (dist_train.cfg.profile == DIST_PROFILE_OFF)
        return 0;
    if (dist_config_preflight (&dist_train.cfg) && !dist_compat_has_prepend_task_argv ()) {
        slurm_error ("%s: --dist-train=preflight (or the site's preflight=on) needs Slurm 23.11 "
                     "or later, which can run dist-train-doctor before the program; this is "
                     "Slurm %d.%02d: run the check yourself with `srun --dist-train ... "
                     "dist-train-doctor`, or use --dist-train=preflight=off",
                     PLUGIN_NAME, SLURM_VERSION_MAJOR (SLURM_VERSION_NUMBER),
                     SLURM_VERSION_MINOR (SLURM_VERSION_NUMBER));
        return -1;
    }
    return 0;
}

/* The launcher profile wants one task per node, as the step's layout (which
 * srun holds by now) says: refused here, before any task starts. */
static int launcher_tasks_refused (spank_t sp)
{
    uint32_t nodes, tasks;

    if (dist_train.cfg.profile != DIST_PROFILE_LAUNCHER
        || spank_get_item (sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_TOTAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS
        || tasks == nodes)
        return 0;
    slurm_error ("%s: --dist-train=launcher runs one task per node, which starts the ranks "
                 "(torchrun, accelerate launch, composer), and this step has %lu tasks on %lu "
                 "nodes: add --ntasks-per-node=1 (and nproc=N for the processes per node, "
                 "if not one per GPU)",
                 PLUGIN_NAME, (unsigned long) tasks, (unsigned long) nodes);
    return -1;
}

int dist_train_local_user_init (spank_t sp)
{
    struct dist_handover h;
    char text[DIST_HANDOVER_MAX];
    char *node;

    if (dist_train.cfg.profile == DIST_PROFILE_OFF)
        return 0;
    memset (&h, 0, sizeof (h));
    if (spank_get_item (sp, S_JOB_ID, &h.job_id) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_STEPID, &h.step_id) != ESPANK_SUCCESS
        || !dist_train_is_training_step (h.step_id))
        return 0;
    if (launcher_tasks_refused (sp) < 0)
        return -1;
    /* (without a key the tasks still start; dist-train-doctor says why it cannot run) */
    if (dist_random_hex (h.key, DIST_STEP_KEY_HEX / 2) < 0)
        slurm_verbose ("%s: cannot draw the step's key: %m", PLUGIN_NAME);
    h.fail_fast = dist_config_fail_fast (&dist_train.cfg);
    if (h.fail_fast)
        dist_compat_srun_kill_on_bad_exit ();
    /* A MASTER_ADDR the user set is kept: no need to ask. */
    if (getenv ("MASTER_ADDR") == NULL || getenv ("MASTER_ADDR")[0] == '\0') {
        if ((node = rank0_node (h.job_id, h.step_id)) != NULL) {
            snprintf (h.rank0_node, sizeof (h.rank0_node), "%s", node);
            node_addr (node, h.rank0_addr, sizeof (h.rank0_addr));
            free (node);
        } else {
            slurm_verbose ("%s: cannot read step %lu.%lu's layout from slurmctld: %s", PLUGIN_NAME,
                           (unsigned long) h.job_id, (unsigned long) h.step_id,
                           slurm_strerror (errno));
        }
    }
    /* (a name Slurm would not hold is left for the nodes to find) */
    if (dist_handover_format (&h, text, sizeof (text)) < 0) {
        h.rank0_node[0] = h.rank0_addr[0] = '\0';
        if (dist_handover_format (&h, text, sizeof (text)) < 0)
            return 0;
    }
    /* srun adds its environment to the step's after this callback. */
    if (setenv (DIST_HANDOVER_VAR, text, 1) < 0)
        slurm_verbose ("%s: cannot set %s", PLUGIN_NAME, DIST_HANDOVER_VAR);
    return 0;
}
