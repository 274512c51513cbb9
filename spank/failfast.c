/* failfast.c - when one task of a training step fails, say which, once.
 *
 * A rank that dies leaves the others blocked in a collective for hours.  srun
 * stops the step: the plugin armed srun's kill-on-bad-exit (local.c), so srun
 * has Slurm kill every rank as soon as a task exits non-zero or is killed by
 * a signal, with one RPC whatever the node count.  Here, in slurmstepd, the
 * node that saw the failure names the rank, its node and how it ended, on the
 * step's stderr (which srun shows), and makes no RPC: calls to slurmctld from
 * slurmstepd deadlock on new Slurm and would multiply with the node count.
 * Each node speaks at most once per step; a task that exits 0 early is not a
 * failure.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "dist_train.h"

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

/* Whether a task was stopped rather than failed.  SIGTERM is how Slurm
 * stops a step (this fail fast, scancel, a time limit, preemption; Slurm
 * 26.05 also sends it to the other tasks when one fails), and a shell that
 * runs the rank's program exits 128+SIGTERM when it is stopped (bash and sh
 * for a child killed by it; the usual wrapper that traps TERM, passes it on
 * and exits 143).  Naming those ranks would only bury the one that failed;
 * srun still lists them. */
static bool stopped_by_slurm (int status)
{
    if (WIFSIGNALED (status))
        return WTERMSIG (status) == SIGTERM;
    return WIFEXITED (status) && WEXITSTATUS (status) == 128 + SIGTERM;
}

int dist_train_failfast_task_exit (spank_t sp, struct failfast *ff)
{
    char how[96], msg[320];
    uint32_t rank;
    int status, n, local;

    /* srun armed fail fast for this step, or nothing stops it */
    if (!ff->armed || ff->reported)
        return 0;
    if (spank_get_item (sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS)
        return 0;
    /* exit 0 is no failure */
    if ((WIFEXITED (status) && WEXITSTATUS (status) == 0) || stopped_by_slurm (status))
        return 0;
    ff->reported = true;
    if (ff->rank_of != NULL && spank_get_item (sp, S_TASK_ID, &local) == ESPANK_SUCCESS
        && local >= 0 && (uint32_t) local < ff->nranks)
        rank = ff->rank_of[local];
    describe (status, how, sizeof (how));
    n = snprintf (msg, sizeof (msg),
                  "%s: rank %lu on %s %s: stopping every rank of step %lu.%lu "
                  "(--dist-train=fail_fast=off lets the others run)\n",
                  PLUGIN_NAME, (unsigned long) rank, ff->node_name, how, (unsigned long) ff->job_id,
                  (unsigned long) ff->step_id);
    if (n <= 0 || (size_t) n >= sizeof (msg))
        return 0;
    /* slurmd's log, without the newline */
    slurm_info ("%.*s", n - 1, msg);
    /* The step's stderr, at once: slurmstepd's own log to it is buffered,
     * and a node whose last task just ended closes it before a flush. */
    if (!dist_train_stderr_line (msg, (size_t) n)) {
        slurm_verbose ("%s: the step's stderr takes no line now; srun reports the task",
                       PLUGIN_NAME);
        return 0;
    }
    dist_train_wait_forwarded (STDERR_FILENO);
    return 0;
}
