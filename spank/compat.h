/* compat.h - the one place where the Slurm releases we support differ.
 *
 * One source tree builds against Slurm 22.05 to 26.05.  Everything that
 * changed between them is handled here, by SLURM_VERSION_NUMBER; the rest
 * of spank/ uses only what these releases share.  What changed, and how the
 * plugin deals with it:
 *
 *  - 23.11: hostlist_t became the struct itself (a pointer typedef before),
 *    and every slurm_hostlist_* call takes and returns hostlist_t *.  Code
 *    uses dt_hostlist_t, which is the pointer type in every release.
 *  - 23.11: slurmstepd holds Slurm's auth lock while it runs user_init as
 *    the user, so an RPC from there kills slurmstepd ("auth_g_create:
 *    pthread_rwlock_rdlock(): Resource deadlock avoided").  23.11, 25.11 and
 *    26.05 also changed slurm_kill_job_step and slurm_notify_job, and 24.11
 *    removed slurm_get_errno.  The plugin makes no RPC in slurmstepd at all:
 *    srun asks slurmctld once per step (local.c) and fail fast is srun's own
 *    kill-on-bad-exit (dist_train_compat_srun_kill_on_bad_exit below).
 *  - 23.11: spank_prepend_task_argv, which --dist-train=preflight needs
 *    (dist_train_compat_prepend_task_argv below; refused in srun before).
 *  - 25.05: slurm_spank_init_failure_mode; a failing slurm_spank_init then
 *    fails the job instead of draining the node (compat.c).
 *  - 23.11 and 25.05: slurm_print_topo_info_msg took a node list (23.11),
 *    then a unit, and slurm_load_topo a topology's name (25.05); 24.11 made
 *    the records plugin-private, printed only.  srun reads Slurm's network
 *    topology as that print, the text `scontrol show topology` shows in every
 *    release (dist_train_compat_topology_text below).
 *  - Unchanged 22.05 to 26.05, and used freely: spank_get_item and its items,
 *    spank_getenv/setenv/unsetenv, spank_option_register,
 *    slurm_job_step_layout_get/free, slurm_load_node_single,
 *    slurm_free_node_info_msg, slurm_strerror and the logging calls.
 */
#ifndef DIST_TRAIN_COMPAT_H
#define DIST_TRAIN_COMPAT_H

#include <stdbool.h>

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0)
#error "slurm-dist-train needs Slurm 22.05 or later"
#endif

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
typedef hostlist_t *dt_hostlist_t;
#else
typedef hostlist_t dt_hostlist_t;
#endif

/* In srun: make srun kill the whole step when a task exits non-zero or is
 * killed by a signal, as `srun --kill-on-bad-exit` does (one RPC, from srun,
 * whatever the node count).  A -K/--kill-on-bad-exit or SLURM_KILL_BAD_EXIT
 * the user gave still wins: srun reads this default only when they did not. */
void dist_train_compat_srun_kill_on_bad_exit (void);

/* Whether this Slurm can prepend to a task's command line (23.11 and later). */
bool dist_train_compat_has_prepend_task_argv (void);
/* In task_init: run argv[0..argc-1] before the task's own command line; -1 where Slurm
 * cannot (before 23.11) or refuses. */
int dist_train_compat_prepend_task_argv (spank_t sp, int argc, const char *argv[]);

/* In srun: whether slurm.conf names a topology plugin that groups nodes (topology/tree's
 * leaf switches, topology/block's blocks). */
bool dist_train_compat_has_network_topology (void);
/* In srun: slurmctld's network topology as `scontrol show topology` prints it, one record a
 * line (one RPC; malloc'ed), or NULL when it has none or cannot say. */
char *dist_train_compat_topology_text (void);

#endif /* DIST_TRAIN_COMPAT_H */
