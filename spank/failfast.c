/* failfast.c - when one task of a training step fails, stop all of them.
 *
 * A rank that dies leaves the others blocked in a collective for hours.  The
 * slurmstepd that sees the failure tells srun which rank failed first (a job
 * notification: srun prints it on stderr) and asks slurmctld to kill the
 * step on every node.  Each node acts at most once per step; a task that
 * exits 0 early is not a failure.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <slurm/slurm.h>

#include "dist_train.h"

static bool stopping; /* this node already stopped the step */

static void describe (int status, char *buf, size_t size)
{
    if (WIFEXITED (status)) {
        snprintf (buf, size, "exited with status %d", WEXITSTATUS (status));
    } else if (WIFSIGNALED (status)) {
        const char *name = sigabbrev_np (WTERMSIG (status));
        snprintf (buf, size, "was killed by signal %d (SIG%s)%s", WTERMSIG (status),
                  name != NULL ? name : "?", WCOREDUMP (status) ? ", core dumped" : "");
    } else {
        snprintf (buf, size, "ended with wait status 0x%x", (unsigned) status);
    }
}

int dist_train_remote_task_exit (spank_t sp)
{
    const struct dist_step *st = &dist_train.step;
    char how[96], msg[320];
    uint32_t rank;
    int status;

    if (!dist_train.active || stopping || !dist_config_fail_fast (&dist_train.cfg))
        return 0;
    if (spank_get_item (sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS)
        return 0;
    if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
        return 0;
    stopping = true;
    describe (status, how, sizeof (how));
    snprintf (msg, sizeof (msg),
              "%s: rank %lu on %s %s: stopping every rank of step %lu.%lu "
              "(--dist-train=fail_fast=off lets the others run)",
              PLUGIN_NAME, (unsigned long) rank, dist_train.node_name, how,
              (unsigned long) st->job_id, (unsigned long) st->step_id);
    slurm_info ("%s", msg);
    if (slurm_notify_job (st->job_id, msg) != SLURM_SUCCESS)
        slurm_error ("%s: cannot tell srun: %s", PLUGIN_NAME, slurm_strerror (slurm_get_errno ()));
    if (slurm_kill_job_step (st->job_id, st->step_id, SIGKILL) != SLURM_SUCCESS)
        slurm_error ("%s: cannot stop step %lu.%lu: %s", PLUGIN_NAME,
                     (unsigned long) st->job_id, (unsigned long) st->step_id,
                     slurm_strerror (slurm_get_errno ()));
    return 0;
}
