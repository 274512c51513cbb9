/* dist_train.h - what the plugin's files offer each other, by context.
 *
 * Each Slurm process (srun, sbatch/salloc, slurmstepd) loads its own copy of
 * the plugin.  No file reads another's state: each context's state is private
 * to the file that owns it and passed by pointer.
 */
#ifndef DIST_TRAIN_H
#define DIST_TRAIN_H

#include <stdbool.h>
#include <sys/types.h>
#include <slurm/spank.h>

#include "compat.h"
#include "libdist/config.h"
#include "libdist/env.h"
#include "libdist/handover.h"
#include "libdist/layout.h"

#define PLUGIN_NAME "dist-train"

/* Each Slurm process owns its state in the file of its context, and hands the
 * others what they need by pointer: the settings (option.c), srun's (local.c),
 * a slurmstepd node's (remote.c), and a task's (task_init, on its stack). */

/* option.c: the admin's plugstack arguments and the user's SPEC, read in
 * slurm_spank_init and init_post_opt by every context. */
/* Parse plugstack.conf's arguments and register --dist-train; -1 stops srun. */
int dist_train_options_init (spank_t sp, int ac, char **av);
int dist_train_apply_env_default (spank_t sp);
const struct dist_config *dist_train_config (void);
/* slurmstepd: what was wrong in the settings, for task_init to fail the
 * tasks with (failing init could drain the node); "" when nothing. */
const char *dist_train_config_error (void);

/* Under the arbitrary distribution only srun can tell which node runs each
 * rank (local.c), and this step's did not. */
#define DIST_TRAIN_NO_SRUN_LAYOUT                                                                  \
    "the arbitrary distribution: which node runs each rank comes from srun, and this step's srun " \
    "handed none over (it reads a plugstack.conf without the plugin: load the plugin there too); " \
    "or set MASTER_ADDR yourself"

/* stepenv.c: the step's facts from its environment and items */
/* Whether a step is one a user launched (not the batch script, the extern
 * step or salloc's interactive step). */
bool dist_train_is_training_step (uint32_t step_id);

/* A variable of the step's environment of any size up to 4 MiB (node lists
 * of thousands of nodes; malloc'ed), or NULL when unset or larger. */
char *dist_train_getenv_any (spank_t sp, const char *name);

/* The step's nodes (SLURM_STEP_NODELIST), or NULL. */
dt_hostlist_t dist_train_step_hostlist (spank_t sp);

/* Whether the step's tasks are laid out by srun -m arbitrary (SLURM_HOSTFILE). */
bool dist_train_is_arbitrary (spank_t sp);

/* A count from the step's environment; false when unset or not a number. */
bool dist_train_env_count (spank_t sp, const char *name, uint32_t *count);

/* layout.c: the step's layout in slurmstepd, read once in user_init: srun's hand-over,
 * else block, cyclic and plane recomputed; -1 (nothing held) when neither can be had.
 * The node of every rank only: the names, which only some need, are
 * dist_train_layout_names's. */
int dist_train_layout_load (spank_t sp, const struct dist_step *st,
                            struct dist_step_layout *layout);
/* The layout's node names (l->names), from the step's node list: 0, or -1 (none held). */
int dist_train_layout_names (spank_t sp, struct dist_step_layout *l);

/* local.c (srun): refuse what must not start (-1) before the step is made,
 * then hand the nodes what only srun knows. */
/* hangwatch.c: hang=SECONDS, the node's watcher, started as the job's user
 * by the node's first task; 0, or -1 after saying why it could not be. */
struct dist_hang_watch {
    const char *doctor, *node_name;
    const char *addr, *key; /* MASTER_ADDR, the step's key ("" none) */
    uint32_t job_id, step_id, seconds;
    uint32_t node_count, node_id, local_tasks; /* node_id: SLURM_NODEID */
    uint16_t port; /* the decider's, on MASTER_ADDR: the step's second */
    bool lead; /* this node runs rank 0: its watcher decides */
};
int dist_train_hang_watch_start (spank_t sp, const struct dist_hang_watch *h);

int dist_train_local_check (const struct dist_config *cfg);
int dist_train_local_user_init (spank_t sp, const struct dist_config *cfg);

/* remote.c (slurmstepd): the node's plan once, then each task's share */
int dist_train_remote_user_init (spank_t sp, const struct dist_config *cfg);
void dist_train_remote_task_init_privileged (spank_t sp);
int dist_train_remote_task_init (spank_t sp);
int dist_train_remote_task_exit (spank_t sp);
void dist_train_remote_exit (void);

/* master.c: rank 0's address, MASTER_PORT and the interface towards rank 0.
 * srun is what srun handed over, NULL when nothing; slurm_rank0 the Slurm rank
 * (SLURM_PROCID) that is RANK 0; step->node_rank still Slurm's index of this node;
 * node_name gets this node's name (for messages).  own_net: the tasks run in
 * a network namespace of their own, loopback alone (a one-node step): rank 0
 * is at 127.0.0.1 by lo, and its port is not checked out here.  -1 with a
 * message in err. */
int dist_train_master_choose (spank_t sp, const struct dist_config *cfg,
                              const struct dist_handover *srun, uint32_t slurm_rank0, bool own_net,
                              struct dist_step *step, char *node_name, size_t node_name_size,
                              char *err, size_t errsz);

/* report.c: verbose, what the step got, said once by rank 0; order is the step's rank
 * order (NULL: Slurm's), holding the network's groups when groups is true. */
struct dist_netorder;
void dist_train_report_step (spank_t sp, const struct dist_config *cfg, const struct dist_step *st,
                             const struct dist_step_layout *layout,
                             const struct dist_netorder *order, bool groups);

/* container.c: the plugin's values in a container (pyxis) */
struct container_note;
/* user_init: srun's environment, where the user's own values are, and
 * whether a container plugin will start the tasks in a container; NULL when
 * out of memory. */
struct container_note *dist_train_container_note (spank_t sp);
void dist_train_container_free (struct container_note *c);
/* task_init: set one of DIST_TASK_VARS, the only way the plugin sets a task's
 * variable.  One the user may choose (DIST_DEFAULT) gets the user's value when
 * srun's environment had one, else value; either replaces what another plugin
 * put there since.  0, or -1 when Slurm refused it. */
int dist_train_setenv (const struct container_note *c, spank_t sp, enum dist_var_id id,
                       const char *value);
/* ... and take it out of the task's environment (one inherited from an outer step) */
void dist_train_unsetenv (spank_t sp, enum dist_var_id id);
enum dist_container {
    DIST_NO_CONTAINER, /* no container asked for */
    DIST_IN_CONTAINER, /* task_init runs in the container's mount namespace */
    DIST_CONTAINER_LATER, /* asked for, and entered after this plugin's task_init */
};
enum dist_container dist_train_container_state (const struct container_note *c);
/* pyxis's defaults for the options not given: PYXIS_CONTAINER_IMAGE, _NAME
 * and _UNSHARE in the step's environment (NULL: unset). */
struct pyxis_defaults {
    const char *image, *name, *unshare;
};
/* Whether pyxis (0.24 and later) starts the tasks in a container with a
 * network namespace of its own, which has loopback alone: a container asked
 * for, and --container-unshare (or its default) naming net.  Works in srun
 * and in slurmstepd. */
bool dist_train_pyxis_own_net (spank_t sp, const struct pyxis_defaults *env);
/* ... as user_init found it */
bool dist_train_container_own_net (const struct container_note *c);
/* Why a step of `nodes` nodes in such containers is refused, and what to do. */
void dist_train_own_net_refusal (uint32_t nodes, char *buf, size_t size);

/* topocache.c: a node's topology, from the first of its sources that has
 * one (the site's file, HWLOC_XMLFILE, the per-boot cache, the live
 * machine), kept for the cache until the node's state ends. */
struct dist_topo;
struct node_topology;
enum topo_source {
    TOPO_NONE = 0, /* not loaded */
    TOPO_SITE_FILE, /* plugstack topology= (read in a child) or HWLOC_XMLFILE */
    TOPO_SITE_COPY, /* our checked copy of plugstack topology= */
    TOPO_CACHE, /* our cache of an earlier step's live load */
    TOPO_LIVE, /* the machine, without I/O devices */
    TOPO_LIVE_IO, /* the machine, with GPUs and NICs */
};
struct node_topology *dist_train_topology_new (const struct dist_config *cfg);
/* The topology (owned by nt), or NULL with the reason in err. */
const struct dist_topo *dist_train_topology_load (struct node_topology *nt, bool need_io, char *err,
                                                  size_t errsz);
/* Where it came from, and in words for verbose ("from this node's cache" ...). */
enum topo_source dist_train_topology_source (const struct node_topology *nt);
const char *dist_train_topology_said (const struct node_topology *nt);
/* Planning is over (user_init): what need not be saved is let go, and what a save needs
 * from the host's mount namespace is taken now. */
void dist_train_topology_planned (struct node_topology *nt);
/* As root (task_init_privileged): save what later steps can read. */
void dist_train_topology_save (struct node_topology *nt);
/* In each task (task_init_privileged), after any save: let go of what the save needed. */
void dist_train_topology_task_done (struct node_topology *nt);
void dist_train_topology_free (struct node_topology *nt);

/* bind.c: GPU/CPU/NIC binding, planned once per node, applied per task
 * (never fails the step; problems are reported by local rank 0) */
struct node_binding;
/* rank_of: RANK of each of the node's nranks tasks, by local rank, for verbose (NULL:
 * Slurm's). */
struct node_binding *dist_train_bind_plan (spank_t sp, const struct dist_config *cfg,
                                           struct node_topology *nt, const char *node_name,
                                           const uint32_t *rank_of, uint32_t nranks);
void dist_train_bind_task (const struct node_binding *b, spank_t sp, int local_rank,
                           const struct container_note *c, uint32_t *omp_threads);
void dist_train_bind_free (struct node_binding *b);
/* The step's GPUs on this node (0 when none, or Slurm's lists make no sense). */
int dist_train_step_gpu_count (spank_t sp);

/* failfast.c: one failed task stops the step on every node */
struct failfast {
    bool armed; /* srun armed kill-on-bad-exit for this step */
    const uint32_t *rank_of; /* RANK of each of the node's tasks, by local rank; NULL: Slurm's */
    uint32_t nranks;
    bool reported; /* this node already named a failed rank */
    uint32_t job_id, step_id;
    char node_name[64];
};
int dist_train_failfast_task_exit (spank_t sp, struct failfast *ff);

/* forward.c: lines for the step's stderr, which slurmstepd forwards to srun */
/* Write msg (one line) to slurmstepd's stderr at once or not at all: whether
 * it went out. */
bool dist_train_stderr_line (const char *msg, size_t len);
/* Wait (at most 0.6 s) until slurmstepd has read what was written to fd, a pipe it
 * forwards to srun, and a moment for srun to print it: srun drops output still on its way
 * once it has had a failed step killed. */
void dist_train_wait_forwarded (int fd);

/* network.c */
int dist_train_resolve_master (spank_t sp, const char *node, const char *node_addr, bool here,
                               char *addr, size_t addrsz, char *err, size_t errsz);
void dist_train_find_ifname (const char *master_addr, char *ifname, size_t ifsz);
int dist_train_check_port_free (const char *master_addr, uint16_t port, char *err, size_t errsz);

#endif /* DIST_TRAIN_H */
