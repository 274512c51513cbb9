/* plugin.c - the SPANK entry points: parse the admin's arguments, register
 * --dist-train, and hand each callback to the code for the running context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "dist_train.h"

SPANK_PLUGIN (dist_train, 1);

struct dist_train dist_train;

void dist_train_defer_error (const char *msg)
{
    if (dist_train.error[0] == '\0') {
        snprintf (dist_train.error, sizeof (dist_train.error), "%s", msg);
        dist_printable (dist_train.error);
    }
}

#define ENV_VALUE_MAX (4 << 20)

char *dist_train_getenv_any (spank_t sp, const char *name)
{
    size_t size = 8192;
    char *value = NULL, *bigger;
    spank_err_t rc;

    do {
        if ((bigger = realloc (value, size)) == NULL)
            break;
        value = bigger;
        rc = spank_getenv (sp, name, value, (int) size);
        if (rc == ESPANK_SUCCESS)
            return value;
        size *= 2;
    } while (rc == ESPANK_NOSPACE && size <= ENV_VALUE_MAX);
    free (value);
    return NULL;
}

dt_hostlist_t dist_train_step_hostlist (spank_t sp)
{
    char *nodelist = dist_train_getenv_any (sp, "SLURM_STEP_NODELIST");
    dt_hostlist_t hl = nodelist != NULL ? slurm_hostlist_create (nodelist) : NULL;

    free (nodelist);
    return hl;
}

bool dist_train_is_training_step (uint32_t step_id)
{
    return step_id != SLURM_BATCH_SCRIPT && step_id != SLURM_EXTERN_CONT
           && step_id != SLURM_INTERACTIVE_STEP && step_id != SLURM_PENDING_STEP;
}

int slurm_spank_init (spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context ();
    char err[DIST_ERR_MAX];
    int i;

    memset (&dist_train, 0, sizeof (dist_train));
    dist_config_init (&dist_train.cfg);
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return 0;

    for (i = 0; i < ac; i++) {
        if (dist_config_parse_arg (&dist_train.cfg, av[i], err, sizeof (err)) < 0) {
            /* srun and sbatch stop here, so an admin's typo is seen at once;
             * slurmstepd keeps the node healthy and fails the step instead. */
            dist_printable (err);
            if (ctx != S_CTX_REMOTE) {
                slurm_error ("%s: plugstack.conf: %s", PLUGIN_NAME, err);
                return -1;
            }
            dist_train_defer_error (err);
        }
    }
    return dist_train_register_option (sp);
}

int slurm_spank_init_post_opt (spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context ();

    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return 0;
    if (dist_train_apply_env_default (sp) < 0)
        return -1;
    /* srun refuses here, before it creates the step: a step that srun made
     * and then abandoned holds its allocation's resources until the job
     * ends (Slurm 22.05), and every later srun in it waits. */
    return ctx == S_CTX_LOCAL ? dist_train_local_check () : 0;
}

int slurm_spank_local_user_init (spank_t sp, int ac, char **av)
{
    if (spank_context () != S_CTX_LOCAL)
        return 0;
    return dist_train_local_user_init (sp);
}

int slurm_spank_user_init (spank_t sp, int ac, char **av)
{
    if (spank_context () != S_CTX_REMOTE)
        return 0;
    return dist_train_remote_user_init (sp);
}

int slurm_spank_task_init_privileged (spank_t sp, int ac, char **av)
{
    if (spank_context () != S_CTX_REMOTE)
        return 0;
    dist_train_bind_save_topology (sp);
    return 0;
}

int slurm_spank_task_init (spank_t sp, int ac, char **av)
{
    if (spank_context () != S_CTX_REMOTE)
        return 0;
    return dist_train_remote_task_init (sp);
}

int slurm_spank_task_exit (spank_t sp, int ac, char **av)
{
    if (spank_context () != S_CTX_REMOTE)
        return 0;
    return dist_train_remote_task_exit (sp);
}
