/* plugin.c - the SPANK entry points: parse the admin's arguments, register
 * --dist-train, and hand each callback to the code for the running context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "dist_train.h"

SPANK_PLUGIN (dist_train, 1);

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

/* A count from the step's environment; false when unset or not a number. */
bool dist_train_env_count (spank_t sp, const char *name, uint32_t *count)
{
    char value[16], *end;
    unsigned long n;

    if (spank_getenv (sp, name, value, sizeof (value)) != ESPANK_SUCCESS
        || value[0] < '0' || value[0] > '9')
        return false;
    n = strtoul (value, &end, 10);
    if (*end != '\0' || n > 1000000)
        return false;
    *count = (uint32_t) n;
    return true;
}

/* The contexts the plugin acts in: srun, sbatch/salloc and slurmstepd. */
static bool acts_in (spank_context_t ctx)
{
    return ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR;
}

int slurm_spank_init (spank_t sp, int ac, char **av)
{
    if (!acts_in (spank_context ()))
        return 0;
    return dist_train_options_init (sp, ac, av);
}

int slurm_spank_init_post_opt (spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context ();

    if (!acts_in (ctx))
        return 0;
    if (dist_train_apply_env_default (sp) < 0)
        return -1;
    /* srun refuses here, before it creates the step: a step that srun made
     * and then abandoned holds its allocation's resources until the job
     * ends (Slurm 22.05), and every later srun in it waits. */
    return ctx == S_CTX_LOCAL ? dist_train_local_check (dist_train_config ()) : 0;
}

int slurm_spank_local_user_init (spank_t sp, int ac, char **av)
{
    if (spank_context () != S_CTX_LOCAL)
        return 0;
    return dist_train_local_user_init (sp, dist_train_config ());
}

int slurm_spank_user_init (spank_t sp, int ac, char **av)
{
    if (spank_context () != S_CTX_REMOTE)
        return 0;
    return dist_train_remote_user_init (sp, dist_train_config ());
}

int slurm_spank_task_init_privileged (spank_t sp, int ac, char **av)
{
    if (spank_context () == S_CTX_REMOTE)
        dist_train_remote_task_init_privileged (sp);
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

int slurm_spank_exit (spank_t sp, int ac, char **av)
{
    if (spank_context () == S_CTX_REMOTE)
        dist_train_remote_exit ();
    return 0;
}
