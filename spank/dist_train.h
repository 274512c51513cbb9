/* dist_train.h - state shared by the plugin's files, one process at a time.
 *
 * Each Slurm process (srun, sbatch/salloc, slurmstepd) loads its own copy of
 * the plugin, so this state belongs to that one process: in slurmstepd it is
 * filled once per node in user_init and read by every forked task.
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

#define PLUGIN_NAME "dist-train"

struct dist_train {
    struct dist_config cfg;
    bool option_given;          /* --dist-train seen (srun, or via sbatch) */
    bool active;                /* remote: this step gets the environment */
    char error[DIST_ERR_MAX];   /* remote: reported by task_init, "" = none */
    char node_name[64];         /* remote: this node's name in the step, for messages */
    struct dist_step step;      /* remote: the node's facts */
    char *tf_config;            /* remote, tf profile: TF_CONFIG up to the index */
    struct dist_handover srun;  /* remote: what srun worked out for this step */
    bool have_srun;             /* remote: srun handed it over (local.c) */
    char **srun_env;            /* remote: the step's environment in user_init (srun's) */
    ino_t stepd_mount_ns;       /* remote: slurmstepd's mount namespace, 0 unknown */
    bool container_asked;       /* remote: pyxis's --container-image/-name given */
};

extern struct dist_train dist_train;

/* Remember an error found in slurmstepd, to fail the tasks with it later
 * (failing user_init could drain the node). */
void dist_train_defer_error (const char *msg);

/* Under the arbitrary distribution only srun can tell which node runs each
 * rank (local.c), and this step's did not. */
#define DIST_TRAIN_NO_SRUN_LAYOUT                                                                  \
    "the arbitrary distribution: which node runs each rank comes from srun, and this step's srun " \
    "handed none over (it reads a plugstack.conf without the plugin: load the plugin there too); " \
    "or set MASTER_ADDR yourself"

/* Whether a step is one a user launched (not the batch script, the extern
 * step or salloc's interactive step). */
bool dist_train_is_training_step (uint32_t step_id);

/* A variable of the step's environment of any size up to 4 MiB (node lists
 * of thousands of nodes; malloc'ed), or NULL when unset or larger. */
char *dist_train_getenv_any (spank_t sp, const char *name);

/* The step's nodes (SLURM_STEP_NODELIST), or NULL. */
dt_hostlist_t dist_train_step_hostlist (spank_t sp);

/* option.c */
int dist_train_register_option (spank_t sp);
int dist_train_apply_env_default (spank_t sp);

/* layout.c: the node of every rank, for block, cyclic and plane */
struct step_layout {
    uint32_t nnodes;
    uint32_t ntasks;
    char **names;             /* node names, by node rank */
    uint32_t *node_of_rank;   /* node rank, by rank */
};
int dist_train_layout_load (spank_t sp, const struct dist_step *st,
                            struct step_layout *layout);

void dist_train_layout_free (struct step_layout *layout);

/* local.c (srun): rank 0's node, its NodeAddr, fail fast, handed over */
/* srun, after its options and before it creates the step: what refuses the
 * step outright (-1). */
int dist_train_local_check (void);
int dist_train_local_user_init (spank_t sp);

/* remote.c (slurmstepd) */
int dist_train_remote_user_init (spank_t sp);
int dist_train_remote_task_init (spank_t sp);

/* bind.c: GPU/CPU/NIC binding, planned once per node, applied per task
 * (never fails the step; problems are reported by local rank 0) */
void dist_train_bind_plan (spank_t sp);
void dist_train_bind_task (spank_t sp, int local_rank, uint32_t *omp_threads);
/* The step's GPUs on this node (0 when none, or Slurm's lists make no sense). */
int dist_train_step_gpu_count (spank_t sp);

/* topocache.c: where the node's topology comes from, and its per-boot cache */
struct dist_topo;
enum topo_source {
    TOPO_NONE = 0,   /* not loaded: the message is in err */
    TOPO_SITE_FILE,  /* plugstack topology= (read in a child) or HWLOC_XMLFILE */
    TOPO_SITE_COPY,  /* our checked copy of plugstack topology= */
    TOPO_CACHE,      /* our cache of an earlier step's live load */
    TOPO_LIVE,       /* the machine, without I/O devices */
    TOPO_LIVE_IO,    /* the machine, with GPUs and NICs */
};
enum topo_source dist_train_topology_load (struct dist_topo *t, bool need_io, char *err,
                                           size_t errsz);
/* As root (task_init_privileged): save a live topology for later steps. */
void dist_train_topology_save (struct dist_topo *t, bool io);
/* As root: save the checked copy of plugstack topology= this step made, if any. */
void dist_train_topology_save_site (void);
void dist_train_bind_save_topology (spank_t sp);

/* container.c: the plugin's values in a container (pyxis) */
/* user_init: srun's environment, where the user's own values are, and
 * whether a container plugin will start the tasks in a container; -1 when
 * out of memory. */
int dist_train_container_note (spank_t sp);
void dist_train_container_release (void);
/* task_init: set a variable the user may choose, to the user's value when
 * srun's environment had one, else to value; either replaces what another
 * plugin put there since. */
int dist_train_set_default (spank_t sp, const char *name, const char *value);
enum dist_container {
    DIST_NO_CONTAINER,     /* no container asked for */
    DIST_IN_CONTAINER,     /* task_init runs in the container's mount namespace */
    DIST_CONTAINER_LATER,  /* asked for, and entered after this plugin's task_init */
};
enum dist_container dist_train_container_state (void);

/* failfast.c: one failed task stops the step on every node */
int dist_train_remote_task_exit (spank_t sp);
/* Wait (at most 0.6 s) until slurmstepd has read what was written to fd, a pipe it
 * forwards to srun, and a moment for srun to print it: srun drops output still on its way
 * once it has had a failed step killed. */
void dist_train_wait_forwarded (int fd);

/* network.c */
int dist_train_resolve_master (spank_t sp, const char *node, const char *node_addr,
                               bool here, char *addr, size_t addrsz, char *err, size_t errsz);
void dist_train_find_ifname (const char *master_addr, char *ifname, size_t ifsz);
int dist_train_check_port_free (const char *master_addr, uint16_t port,
                                char *err, size_t errsz);

#endif /* DIST_TRAIN_H */
