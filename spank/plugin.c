/* plugin.c - the SPANK entry points: each callback goes to the file of the
 * running context (option.c, local.c for srun, remote.c for slurmstepd). */

#include <slurm/spank.h>

#include "dist_train.h"

SPANK_PLUGIN (dist_train, 1);

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
