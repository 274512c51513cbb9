/* compat.c - the definitions behind compat.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h>

#include "compat.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/* slurm_spank_init fails only for what srun and sbatch must refuse (an
 * admin's plugstack typo, a failed option registration).  In slurmstepd
 * that is the job's fault, not the node's: fail the job, never drain the
 * node.  (Older releases have no such switch; the plugin never fails
 * slurm_spank_init in slurmstepd there, see plugin.c.) */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

/* srun's --kill-on-bad-exit defaults to slurm.conf's KillOnBadExit, which
 * srun keeps in libslurm's configuration (srun's _kill_on_bad_exit(), the
 * same from 22.05 to 26.05).  slurm.h declares its type; the variable is
 * libslurm's and srun reads it when a task ends, so a change made by the
 * plugin in srun applies to this srun's step only. */
extern slurm_conf_t slurm_conf;

void dist_train_compat_srun_kill_on_bad_exit (void)
{
    slurm_conf.kill_on_bad_exit = 1;
}

bool dist_train_compat_has_prepend_task_argv (void)
{
    return SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM (23, 11, 0);
}

int dist_train_compat_prepend_task_argv (spank_t sp, int argc, const char *argv[])
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
    return spank_prepend_task_argv (sp, argc, argv) == ESPANK_SUCCESS ? 0 : -1;
#else
    (void) sp, (void) argc, (void) argv;
    return -1;
#endif
}

bool dist_train_compat_has_network_topology (void)
{
    const char *plugin = slurm_conf.topology_plugin;

    return plugin != NULL && (strstr (plugin, "tree") != NULL || strstr (plugin, "block") != NULL);
}

/* Print what slurmctld answered into out, as its release prints it. */
static void print_topology (FILE *out, topo_info_response_msg_t *msg)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
    slurm_print_topo_info_msg (out, msg, NULL, NULL, 1);
#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
    slurm_print_topo_info_msg (out, msg, NULL, 1);
#else
    /* (this release logs an error for an empty answer) */
    if (msg->record_count > 0)
        slurm_print_topo_info_msg (out, msg, 1);
#endif
}

char *dist_train_compat_topology_text (void)
{
    topo_info_response_msg_t *msg = NULL;
    char *text = NULL, *len_limit;
    size_t size = 0;
    FILE *out;

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
    if (slurm_load_topo (&msg, NULL) != SLURM_SUCCESS || msg == NULL)
        return NULL;
#else
    if (slurm_load_topo (&msg) != SLURM_SUCCESS || msg == NULL)
        return NULL;
#endif
    /* SLURM_TOPO_LEN cuts the printed lines (for a terminal); whole ones are read here */
    len_limit = getenv ("SLURM_TOPO_LEN") != NULL ? strdup (getenv ("SLURM_TOPO_LEN")) : NULL;
    unsetenv ("SLURM_TOPO_LEN");
    if ((out = open_memstream (&text, &size)) != NULL) {
        print_topology (out, msg);
        if (fclose (out) != 0) {
            free (text);
            text = NULL;
        }
    }
    if (len_limit != NULL)
        setenv ("SLURM_TOPO_LEN", len_limit, 1);
    free (len_limit);
    slurm_free_topo_info_msg (msg);
    return text;
}
