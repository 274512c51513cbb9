/* remote.c - slurmstepd: the node's plan once (user_init), then each task's
 * share of it (task_init, just before exec), and the end of each task. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "compat.h"
#include "dist_train.h"
#include "libdist/netgroup.h"
#include "libdist/tfconfig.h"

/* A slurmstepd node's state: made in user_init, read by every forked task,
 * freed in slurm_spank_exit. */
struct stepd_node {
    const struct dist_config *cfg;
    char error[DIST_ERR_MAX]; /* reported by task_init, "" = none */
    char node_name[64]; /* this node's name in the step, for messages */
    struct dist_step step; /* the node's facts */
    char *tf_config; /* tf profile: TF_CONFIG up to the index */
    struct dist_handover srun; /* what srun worked out for this step */
    bool have_srun; /* srun handed it over (local.c) */
    /* The rank order and the network's groups, as this node's tasks need them: worked out
     * from the runs srun handed over (dist_local_order_make, at a cost that does not grow
     * with the step), or from the whole order where more is needed (full). */
    bool have_order; /* the fields below hold them: else Slurm's order, and no groups */
    bool have_groups; /* srun handed over the groups */
    uint32_t slurm_rank0; /* the Slurm rank that is RANK 0 */
    uint32_t node_rank; /* GROUP_RANK */
    uint32_t ngroups, group_size; /* the groups; the ranks of this node's */
    uint32_t nlocal;
    uint32_t *local_rank; /* RANK of each local task */
    uint32_t *local_group_rank; /* its index among its group's ranks */
    char *rank_layout; /* rank 0's DIST_TRAIN_LAYOUT, where the runs gave it; else NULL */
    bool full; /* order and layout hold the whole step's (else zeroed) */
    struct dist_netorder order;
    struct dist_step_layout layout; /* the step's, read once (user_init); zeroed if none */
    uint32_t slurm_node; /* this node's index in Slurm's order (SLURM_NODEID) */
    uint32_t group; /* this node's group */
    struct container_note *container;
    struct node_topology *topology;
    struct node_binding *binding;
    struct failfast failfast;
};

static struct stepd_node *node;

/* Remember an error found in slurmstepd, to fail the tasks with it later
 * (failing user_init could drain the node). */
static void defer_error (struct stepd_node *n, const char *msg)
{
    if (n->error[0] == '\0') {
        snprintf (n->error, sizeof (n->error), "%s", msg);
        dist_printable (n->error);
    }
}

/* Read a uint32_t item, with a message naming it when Slurm has none. */
static int get_u32 (struct stepd_node *n, spank_t sp, spank_item_t item, const char *what,
                    uint32_t *value)
{
    char msg[DIST_ERR_MAX];

    if (spank_get_item (sp, item, value) != ESPANK_SUCCESS) {
        snprintf (msg, sizeof (msg), "cannot read the step's %s from Slurm", what);
        defer_error (n, msg);
        return -1;
    }
    return 0;
}

/* torchrun's restart count: the job's requeues (Slurm's item is 0 in the
 * steps of a requeued batch job; SLURM_RESTART_COUNT in its environment is
 * right), or what scripts/dist-train-restart counts, requeues included, in
 * DIST_TRAIN_RESTART_COUNT. */
static void restart_count (spank_t sp, uint32_t *count)
{
    uint32_t n;

    if (spank_get_item (sp, S_SLURM_RESTART_COUNT, count) != ESPANK_SUCCESS)
        *count = 0;
    if (dist_train_env_count (sp, "SLURM_RESTART_COUNT", &n) && n > *count)
        *count = n;
    if (dist_train_env_count (sp, "DIST_TRAIN_RESTART_COUNT", &n))
        *count = n;
}

static int collect_counts (struct stepd_node *n, spank_t sp)
{
    struct dist_step *step = &n->step;

    if (get_u32 (n, sp, S_JOB_NNODES, "node count", &step->node_count) < 0
        || get_u32 (n, sp, S_JOB_NODEID, "node index", &step->node_rank) < 0
        || get_u32 (n, sp, S_JOB_TOTAL_TASK_COUNT, "task count", &step->world_size) < 0
        || get_u32 (n, sp, S_JOB_LOCAL_TASK_COUNT, "local task count", &step->local_world_size) < 0
        || get_u32 (n, sp, S_STEP_CPUS_PER_TASK, "CPUs per task", &step->cpus_per_task) < 0)
        return -1;
    n->slurm_node = step->node_rank;
    restart_count (sp, &step->restart_count);
    step->watchdog_s = n->cfg->watchdog_s;
    return 0;
}

/* The network's groups srun handed over (libdist/netgroup.h) into group[node_count]:
 * their number, or 0 when none. */
static uint32_t read_groups (const struct stepd_node *n, spank_t sp, uint32_t *group)
{
    char *text = dist_train_getenv_any (sp, DIST_NETGROUP_VAR);
    uint32_t ngroups = 0;

    if (text != NULL
        && dist_netgroup_text_parse (text, n->step.job_id, n->step.step_id, n->step.node_count,
                                     group, &ngroups)
               < 0)
        ngroups = 0;
    free (text);
    return ngroups;
}

/* This node's Slurm ranks, by local rank, into n->nlocal and *mine (malloc'ed). */
static int local_ranks (struct stepd_node *n, spank_t sp, uint32_t **mine)
{
    uint32_t i, count = n->step.local_world_size;

    n->local_rank = calloc (count > 0 ? count : 1, sizeof (*n->local_rank));
    n->local_group_rank = calloc (count > 0 ? count : 1, sizeof (*n->local_group_rank));
    *mine = calloc (count > 0 ? count : 1, sizeof (**mine));
    if (n->local_rank == NULL || n->local_group_rank == NULL || *mine == NULL)
        return -1;
    for (i = 0; i < count; i++)
        if (spank_get_item (sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &(*mine)[i]) != ESPANK_SUCCESS)
            return -1;
    n->nlocal = count;
    return 0;
}

/* The order from the runs srun handed over, without the whole layout: 0, or -1 when there
 * are none, or the nodes do not come in their own order, or rank 0's layout by RANK
 * (DIST_TRAIN_LAYOUT) does not fit as the runs give it. */
static int order_from_runs (struct stepd_node *n, spank_t sp, const uint32_t *mine)
{
    const struct dist_step *st = &n->step;
    char *layout_text = dist_train_getenv_any (sp, DIST_LAYOUT_VAR);
    char *group_text = dist_train_getenv_any (sp, DIST_NETGROUP_VAR);
    struct dist_runs layout = {0}, groups = {0};
    struct dist_local_order o = {0};
    uint32_t ngroups = 1, lid;
    bool have_groups, by_group;
    int rc = -1;

    have_groups = group_text != NULL
                  && dist_netgroup_text_runs (group_text, st->job_id, st->step_id, st->node_count,
                                              &groups, &ngroups)
                         == 0;
    by_group = n->cfg->rank_order_topology && have_groups;
    if (layout_text == NULL
        || dist_layout_text_runs (layout_text, st->job_id, st->step_id, st->node_count,
                                  st->world_size, &layout)
               < 0
        || dist_local_order_make (&o, by_group, &layout, have_groups ? &groups : NULL,
                                  have_groups ? ngroups : 1, n->slurm_node, mine, n->nlocal)
               < 0)
        goto out;
    /* RANK 0 here: its task gets the layout by RANK, which is srun's text in Slurm's order,
     * else the groups' ranks in turn (the whole order's, where too long for that) */
    if (spank_get_item (sp, S_JOB_GLOBAL_TO_LOCAL_ID, o.slurm_rank0, &lid) == ESPANK_SUCCESS) {
        n->rank_layout = by_group ? dist_local_order_layout_text (st->job_id, st->step_id, &layout,
                                                                  &groups, ngroups)
                                  : layout_text;
        if (n->rank_layout == NULL)
            goto out;
        if (!by_group)
            layout_text = NULL;
    }
    n->slurm_rank0 = o.slurm_rank0;
    n->node_rank = o.node_rank;
    n->ngroups = o.ngroups;
    n->group = o.group;
    n->group_size = o.group_size;
    memcpy (n->local_rank, o.rank, n->nlocal * sizeof (*o.rank));
    memcpy (n->local_group_rank, o.group_rank, n->nlocal * sizeof (*o.group_rank));
    n->have_groups = have_groups;
    rc = 0;
out:
    dist_local_order_free (&o);
    dist_runs_free (&layout);
    dist_runs_free (&groups);
    free (layout_text);
    free (group_text);
    return rc;
}

/* The order from the whole layout: srun's, or block, cyclic and plane recomputed; and
 * the groups.  0, or -1 when there is no layout to be had. */
static int order_from_layout (struct stepd_node *n, spank_t sp, const uint32_t *mine)
{
    const struct dist_step *st = &n->step;
    uint32_t *group = calloc (st->node_count > 0 ? st->node_count : 1, sizeof (*group)), ngroups;
    const struct dist_netorder *o = &n->order;

    ngroups = group != NULL ? read_groups (n, sp, group) : 0;
    /* (the layout is kept: TF_CONFIG, the verbose table and rank 0's DIST_TRAIN_LAYOUT
     * read it too; the first two also its names, one per node, which the others do
     * without) */
    if (group == NULL || dist_train_layout_load (sp, st, &n->layout) < 0
        || ((n->cfg->verbose || n->cfg->profile == DIST_PROFILE_TF)
            && dist_train_layout_names (sp, &n->layout) < 0)
        || dist_netorder_make (&n->order, n->cfg->rank_order_topology && ngroups > 0,
                               ngroups > 0 ? ngroups : 1, group, st->node_count,
                               n->layout.node_of_rank, st->world_size)
               < 0) {
        dist_step_layout_free (&n->layout);
        free (group);
        return -1;
    }
    free (group);
    n->full = true;
    n->slurm_rank0 = o->slurm_rank0;
    n->node_rank = o->new_node[n->slurm_node];
    n->ngroups = o->ngroups;
    n->group = o->group_of_node[n->slurm_node];
    n->group_size = o->group_size[n->group];
    for (uint32_t i = 0; i < n->nlocal; i++) {
        n->local_rank[i] = mine[i] < o->nranks ? o->new_rank[mine[i]] : mine[i];
        n->local_group_rank[i] = mine[i] < o->nranks ? o->group_rank[mine[i]] : 0;
    }
    n->have_groups = ngroups > 0;
    return 0;
}

/* The rank order, from the step's layout: the nodes in the order of their first rank
 * (SLURM_NODEID does not follow the ranks under -m arbitrary, nor in 26.05's topology
 * order), and the ranks by the network's groups where srun handed them over and
 * rank_order=topology asks.  Without a layout, Slurm's order.  -1 (the error kept) when
 * rank_order=topology cannot be had. */
static int plan_order (struct stepd_node *n, spank_t sp)
{
    uint32_t *mine = NULL;

    if (n->cfg->rank_order_topology && !n->have_srun) {
        defer_error (n, "rank_order=topology: the network's groups come from srun, and this "
                        "step's srun handed none over (it reads a plugstack.conf without the "
                        "plugin: load the plugin there too)");
        return -1;
    }
    /* (the verbose table and TF_CONFIG list every rank: they need the whole layout) */
    if (local_ranks (n, sp, &mine) == 0
        && ((!n->cfg->verbose && n->cfg->profile != DIST_PROFILE_TF
             && order_from_runs (n, sp, mine) == 0)
            || order_from_layout (n, sp, mine) == 0))
        n->have_order = true;
    else
        n->have_groups = false;
    free (mine);
    return 0;
}

static int collect_step (struct stepd_node *n, spank_t sp)
{
    struct dist_step *step = &n->step;
    char err[DIST_ERR_MAX];

    if (collect_counts (n, sp) < 0 || plan_order (n, sp) < 0)
        return -1;
    /* (srun refuses it before launch; an srun without the plugin does not) */
    if (dist_train_container_own_net (n->container) && step->node_count > 1) {
        dist_train_own_net_refusal (step->node_count, err, sizeof (err));
        defer_error (n, err);
        return -1;
    }
    if (dist_train_master_choose (sp, n->cfg, n->have_srun ? &n->srun : NULL,
                                  n->have_order ? n->slurm_rank0 : 0,
                                  dist_train_container_own_net (n->container), step, n->node_name,
                                  sizeof (n->node_name), err, sizeof (err))
        < 0) {
        defer_error (n, err);
        return -1;
    }
    /* (from here on, this node's index in the step's order: GROUP_RANK) */
    if (n->have_order)
        step->node_rank = n->node_rank;
    return 0;
}

/* RANK of Slurm's rank r, from the whole order (which the tf profile has). */
static uint32_t rank_of (const struct stepd_node *n, uint32_t r)
{
    return n->full && r < n->order.nranks ? n->order.new_rank[r] : r;
}

/* tf profile: TF_CONFIG lists every task as host:port, so this node needs
 * the whole layout; built once here, finished per task with its index. */
static int build_tf_config (struct stepd_node *n)
{
    const struct dist_step *st = &n->step;
    const struct dist_step_layout *layout = &n->layout;
    const char **host_of_rank;
    uint32_t rank;

    if (layout->node_of_rank != NULL) {
        host_of_rank = calloc (st->world_size, sizeof (*host_of_rank));
        if (host_of_rank != NULL) {
            for (rank = 0; rank < st->world_size; rank++)
                host_of_rank[rank_of (n, rank)] = layout->names[layout->node_of_rank[rank]];
            if (!dist_tf_config_fits (host_of_rank, st->world_size)) {
                free (host_of_rank);
                defer_error (n, "the tf profile's TF_CONFIG for this many ranks is larger "
                                "than Linux allows for one variable (128 KiB); use the "
                                "torch or jax profile");
                return -1;
            }
            n->tf_config = dist_tf_config_prefix (host_of_rank, st->world_size, st->master_port,
                                                  n->cfg->port_lo, n->cfg->port_hi);
            free (host_of_rank);
        }
    }
    if (n->tf_config == NULL) {
        defer_error (n, "the tf profile needs a layout it can read (block, cyclic, "
                        "plane, or arbitrary as srun hands it over) and a port_range "
                        "with a port for every task; use another profile");
        return -1;
    }
    return 0;
}

/* What srun worked out for this step (local.c), if it is for this step. */
static void read_srun_handover (struct stepd_node *n, spank_t sp)
{
    char text[DIST_HANDOVER_MAX];

    n->have_srun = spank_getenv (sp, DIST_HANDOVER_VAR, text, sizeof (text)) == ESPANK_SUCCESS
                   && dist_handover_parse (text, &n->srun) == 0 && n->srun.job_id == n->step.job_id
                   && n->srun.step_id == n->step.step_id;
    if (!n->have_srun)
        memset (&n->srun, 0, sizeof (n->srun));
}

/* Whether this is one component of a heterogeneous step (srun
 * --het-group=0,1, or srun A : B).  Each component reaches the nodes as a
 * step of its own, with its own task count and ranks, while the tasks'
 * environment counts all components' tasks; in a step of one component,
 * also one of a heterogeneous job, the two agree. */
static bool heterogeneous_step (spank_t sp)
{
    char het[32], all[32], *end;
    uint32_t mine;
    unsigned long n;

    if (spank_getenv (sp, "SLURM_HET_SIZE", het, sizeof (het)) != ESPANK_SUCCESS
        || spank_getenv (sp, "SLURM_NTASKS", all, sizeof (all)) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_TOTAL_TASK_COUNT, &mine) != ESPANK_SUCCESS)
        return false;
    errno = 0;
    n = strtoul (all, &end, 10);
    return errno == 0 && end != all && *end == '\0' && n != mine;
}

/* The processes a launcher starts on each node: SPEC nproc=, else a number the user
 * gave torchrun in PET_NPROC_PER_NODE, else the node's GPUs in the step, else
 * srun's --gpus-per-node, else 1. */
static uint32_t launcher_nproc (const struct dist_config *cfg, spank_t sp)
{
    char value[64], *count, *end;
    unsigned long n;
    uint32_t u;
    int gpus;

    if (cfg->nproc > 0)
        return cfg->nproc;
    if (dist_train_env_count (sp, "PET_NPROC_PER_NODE", &u) && u >= 1 && u <= DIST_NPROC_MAX)
        return u;
    if ((gpus = dist_train_step_gpu_count (sp)) > 0)
        return (uint32_t) gpus;
    /* "N" or "TYPE:N" */
    if (spank_getenv (sp, "SLURM_GPUS_PER_NODE", value, sizeof (value)) == ESPANK_SUCCESS) {
        count = strrchr (value, ':') != NULL ? strrchr (value, ':') + 1 : value;
        n = strtoul (count, &end, 10);
        if (count[0] >= '1' && count[0] <= '9' && *end == '\0' && n <= DIST_NPROC_MAX)
            return (uint32_t) n;
    }
    return 1;
}

/* The launcher profile: one task per node, which starts the node's ranks itself. */
static int launcher_check (struct stepd_node *n, spank_t sp)
{
    char msg[DIST_ERR_MAX];
    uint32_t local;

    if (get_u32 (n, sp, S_JOB_LOCAL_TASK_COUNT, "local task count", &local) < 0)
        return -1;
    if (local != 1) {
        snprintf (msg, sizeof (msg),
                  "--dist-train=launcher runs one task per node, which starts the ranks "
                  "(torchrun, accelerate launch, composer), and this step has %lu tasks on a "
                  "node: add --ntasks-per-node=1",
                  (unsigned long) local);
        defer_error (n, msg);
        return -1;
    }
    n->step.nproc_per_node = launcher_nproc (n->cfg, sp);
    return 0;
}

/* Whether this step is one to set up: not without the flag, nor for the
 * batch script, extern or interactive step. */
static bool wanted (struct stepd_node *n, spank_t sp)
{
    if (n->cfg->profile == DIST_PROFILE_OFF)
        return false;
    if (get_u32 (n, sp, S_JOB_ID, "job id", &n->step.job_id) < 0
        || get_u32 (n, sp, S_JOB_STEPID, "step id", &n->step.step_id) < 0)
        return true;
    return dist_train_is_training_step (n->step.step_id);
}

/* The node's plan: -1 with the error kept for task_init. */
static int plan_node (struct stepd_node *n, spank_t sp)
{
    if (heterogeneous_step (sp)) {
        defer_error (n, "a heterogeneous step (srun --het-group=0,1, or A : B) is not "
                        "supported: its components get no one world. Use one component "
                        "per step (srun --het-group=N --dist-train), or set RANK, "
                        "WORLD_SIZE and MASTER_ADDR yourself");
        return -1;
    }
    read_srun_handover (n, sp);
    if (n->cfg->profile == DIST_PROFILE_LAUNCHER && launcher_check (n, sp) < 0)
        return -1;
    if ((n->container = dist_train_container_note (sp)) == NULL
        || (n->topology = dist_train_topology_new (n->cfg)) == NULL) {
        defer_error (n, "out of memory");
        return -1;
    }
    if (collect_step (n, sp) < 0 || (n->cfg->profile == DIST_PROFILE_TF && build_tf_config (n) < 0))
        return -1;
    n->binding = dist_train_bind_plan (sp, n->cfg, n->topology, n->node_name,
                                       n->have_order ? n->local_rank : NULL, n->nlocal);
    n->failfast.armed = n->have_srun && n->srun.fail_fast;
    n->failfast.rank_of = n->have_order ? n->local_rank : NULL;
    n->failfast.nranks = n->nlocal;
    n->failfast.job_id = n->step.job_id;
    n->failfast.step_id = n->step.step_id;
    snprintf (n->failfast.node_name, sizeof (n->failfast.node_name), "%s", n->node_name);
    return 0;
}

int dist_train_remote_user_init (spank_t sp, const struct dist_config *cfg)
{
    struct stepd_node *n;

    if ((n = calloc (1, sizeof (*n))) == NULL) {
        slurm_error ("%s: out of memory", PLUGIN_NAME);
        return 0;
    }
    n->cfg = cfg;
    node = n;
    /* (a step that is not wanted keeps no error: not even the settings') */
    if (!wanted (n, sp))
        return 0;
    defer_error (n, dist_train_config_error ());
    if (n->error[0] == '\0')
        (void) plan_node (n, sp);
    return 0;
}

/* Whether the node's plan is for this step's tasks. */
static bool planned (const struct stepd_node *n)
{
    return n != NULL && n->error[0] == '\0' && n->binding != NULL;
}

void dist_train_remote_task_init_privileged (spank_t sp)
{
    int local_rank;

    /* local rank 0's task, before it drops root: what later steps can read */
    if (planned (node) && spank_get_item (sp, S_TASK_ID, &local_rank) == ESPANK_SUCCESS
        && local_rank == 0)
        dist_train_topology_save (node->topology);
    if (node != NULL)
        dist_train_topology_task_done (node->topology);
}

/* What task_init knows of its task. */
struct task {
    spank_t sp;
    uint32_t slurm_rank; /* SLURM_PROCID */
    uint32_t rank; /* RANK */
    int local_rank;
    enum dist_container container;
    struct dist_step step; /* the node's, as this task's binding changes it */
};

/* The error found in user_init, said where srun shows it. */
static int refuse_deferred (const struct stepd_node *n)
{
    slurm_error ("%s: %s", PLUGIN_NAME, n->error);
    /* the task fails now and fail fast stops the step: the line must reach srun */
    dist_train_wait_forwarded (STDERR_FILENO);
    return -1;
}

static int read_task (const struct stepd_node *n, spank_t sp, struct task *t)
{
    t->sp = sp;
    t->step = n->step;
    if (spank_get_item (sp, S_TASK_GLOBAL_ID, &t->slurm_rank) != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_ID, &t->local_rank) != ESPANK_SUCCESS) {
        slurm_error ("%s: cannot read the task's rank from Slurm", PLUGIN_NAME);
        return -1;
    }
    t->rank = n->have_order && t->local_rank >= 0 && (uint32_t) t->local_rank < n->nlocal
                  ? n->local_rank[t->local_rank]
                  : t->slurm_rank;
    t->container = dist_train_container_state (n->container);
    return 0;
}

/* A container plugin listed after this one would replace every variable. */
static int refuse_container_later (const struct task *t)
{
    if (t->container != DIST_CONTAINER_LATER)
        return 0;
    if (t->local_rank == 0)
        slurm_error ("%s: plugstack.conf loads dist-train before pyxis, so the container's "
                     "environment would replace MASTER_ADDR, MASTER_PORT and the other "
                     "variables after dist-train set them. The admin must list dist-train "
                     "after pyxis (its snippet as plugstack.conf.d/zz-dist-train.conf); "
                     "until then, run the container without --dist-train",
                     PLUGIN_NAME);
    dist_train_wait_forwarded (STDERR_FILENO);
    return -1;
}

/* srun's notes to the nodes are not part of the contract; the key is this
 * step's srun's, never one a task inherited from another step. */
static void replace_srun_notes (const struct stepd_node *n, spank_t sp)
{
    spank_unsetenv (sp, DIST_HANDOVER_VAR);
    spank_unsetenv (sp, DIST_LAYOUT_VAR);
    spank_unsetenv (sp, DIST_NETGROUP_VAR);
    if (n->have_srun && n->srun.key[0] != '\0') {
        if (dist_train_setenv (n->container, sp, DIST_VAR_STEP_KEY, n->srun.key) < 0)
            slurm_verbose ("%s: cannot set %s", PLUGIN_NAME, DIST_STEP_KEY_VAR);
    } else
        dist_train_unsetenv (sp, DIST_VAR_STEP_KEY);
}

/* Where the rank sits in the network: its node's group, its place among the group's
 * ranks; and whether RANK follows the groups, which the shim reads. */
static int set_group_variables (const struct stepd_node *n, const struct task *t)
{
    const struct {
        enum dist_var_id id;
        uint32_t value;
    } vars[] = {
        {DIST_VAR_TOPOLOGY_GROUP, n->group},
        {DIST_VAR_TOPOLOGY_GROUPS, n->ngroups},
        {DIST_VAR_TOPOLOGY_RANK, t->local_rank >= 0 && (uint32_t) t->local_rank < n->nlocal
                                     ? n->local_group_rank[t->local_rank]
                                     : 0},
        {DIST_VAR_TOPOLOGY_SIZE, n->group_size},
    };
    char value[16];
    size_t i;

    dist_train_unsetenv (t->sp, DIST_VAR_RANK_ORDER);
    if (!n->have_groups)
        return 0;
    for (i = 0; i < sizeof (vars) / sizeof (vars[0]); i++) {
        snprintf (value, sizeof (value), "%lu", (unsigned long) vars[i].value);
        if (dist_train_setenv (n->container, t->sp, vars[i].id, value) < 0) {
            slurm_error ("%s: cannot set %s", PLUGIN_NAME, dist_task_vars[vars[i].id].name);
            return -1;
        }
    }
    if (n->cfg->rank_order_topology
        && dist_train_setenv (n->container, t->sp, DIST_VAR_RANK_ORDER, "topology") < 0) {
        slurm_error ("%s: cannot set DIST_TRAIN_RANK_ORDER", PLUGIN_NAME);
        return -1;
    }
    return 0;
}

/* Rank 0's task: where every RANK runs, in the order the plugin numbered them, for
 * dist-train-doctor, which checks each rank against it. */
static void set_rank_layout (const struct stepd_node *n, const struct task *t)
{
    const struct dist_netorder *o = &n->order;
    uint32_t *by_rank, r;
    char *text = NULL;

    dist_train_unsetenv (t->sp, DIST_VAR_LAYOUT);
    if (t->rank != 0 || !n->have_order)
        return;
    /* (made from the runs in user_init: srun's text, or each group's ranks in turn) */
    if (n->rank_layout != NULL) {
        if (dist_train_setenv (n->container, t->sp, DIST_VAR_LAYOUT, n->rank_layout) < 0)
            slurm_verbose ("%s: cannot set DIST_TRAIN_LAYOUT", PLUGIN_NAME);
        return;
    }
    if (!n->full || (by_rank = calloc (o->nranks > 0 ? o->nranks : 1, sizeof (*by_rank))) == NULL)
        return;
    for (r = 0; r < o->nranks; r++)
        by_rank[o->new_rank[r]] = n->layout.node_of_rank[r];
    text = dist_layout_text (n->step.job_id, n->step.step_id, o->nnodes, by_rank, o->nranks);
    if (text != NULL && dist_train_setenv (n->container, t->sp, DIST_VAR_LAYOUT, text) < 0)
        slurm_verbose ("%s: cannot set DIST_TRAIN_LAYOUT", PLUGIN_NAME);
    free (text);
    free (by_rank);
}

/* The contract's variables for this rank. */
static int set_variables (const struct stepd_node *n, const struct task *t)
{
    struct dist_var vars[DIST_ENV_MAX];
    size_t i, count;

    count = dist_env_build (n->cfg->profile, &t->step, t->rank, (uint32_t) t->local_rank, vars);
    if (n->tf_config != NULL) {
        char *tf = malloc (strlen (n->tf_config) + 16);
        if (tf == NULL)
            return -1;
        sprintf (tf, "%s%lu}}", n->tf_config, (unsigned long) t->rank);
        (void) dist_train_setenv (n->container, t->sp, DIST_VAR_TF_CONFIG, tf);
        free (tf);
    }
    for (i = 0; i < count; i++) {
        /* (a choice of the user's that cannot be set is left to them) */
        const struct dist_var_info *v = &dist_task_vars[vars[i].id];
        if (dist_train_setenv (n->container, t->sp, vars[i].id, vars[i].value) < 0
            && v->overwrite == DIST_FACT) {
            slurm_error ("%s: cannot set %s", PLUGIN_NAME, v->name);
            return -1;
        }
    }
    return 0;
}

/* preflight in a container: the doctor runs there, from the image's files;
 * said once per node. */
static int doctor_in_container (const char *doctor, int local_rank)
{
    /* (a bare name is looked up on the task's PATH when it execs) */
    if (strchr (doctor, '/') == NULL || access (doctor, X_OK) == 0)
        return 0;
    if (local_rank == 0)
        slurm_error ("%s: preflight: the container has no %s: the admin can have enroot mount "
                     "the static doctor into every container (the packages' "
                     "/etc/enroot/mounts.d/90-dist-train-doctor.fstab); or install "
                     "slurm-dist-train in the image, or mount it with --container-mounts=%s:%s "
                     "(it needs the image's C library to be as new as the node's); or use "
                     "--dist-train=preflight=off",
                     PLUGIN_NAME, doctor, doctor, doctor);
    dist_train_wait_forwarded (STDERR_FILENO);
    return -1;
}

/* fabric=: the doctor's --fabric word, or NULL for fail, the doctor's own default, so
 * that the default step's command line stays what an older doctor understands. */
static const char *doctor_fabric (const struct dist_config *cfg)
{
    switch (dist_config_fabric (cfg)) {
    case DIST_FABRIC_WARN:
        return "warn";
    case DIST_FABRIC_OFF:
        return "off";
    default:
        return NULL;
    }
}

/* preflight: the task runs dist-train-doctor, which checks the step and then
 * execs the task's own command line unchanged. */
static int prepend_doctor (const struct stepd_node *n, const struct task *t)
{
    const char *fabric = doctor_fabric (n->cfg);
    const char *argv[4] = {n->cfg->doctor, "--then"};
    int argc = 2;

    if (!dist_config_preflight (n->cfg))
        return 0;
    if (t->container == DIST_IN_CONTAINER
        && doctor_in_container (n->cfg->doctor, t->local_rank) < 0)
        return -1;
    if (fabric != NULL) {
        argv[1] = "--fabric";
        argv[2] = fabric;
        argv[3] = "--then";
        argc = 4;
    }
    if (dist_train_compat_prepend_task_argv (t->sp, argc, argv) < 0) {
        slurm_error ("%s: preflight: this Slurm (%d.%02d) cannot run dist-train-doctor before "
                     "the program (23.11 or later can): use --dist-train=preflight=off",
                     PLUGIN_NAME, SLURM_VERSION_MAJOR (SLURM_VERSION_NUMBER),
                     SLURM_VERSION_MINOR (SLURM_VERSION_NUMBER));
        return -1;
    }
    return 0;
}

/* hang=SECONDS: the node's watcher, started by its first task; the one on
 * rank 0's node decides. */
static void start_hang_watch (const struct stepd_node *n, const struct task *t)
{
    uint32_t rank0 = n->have_order ? n->slurm_rank0 : 0, lid;
    struct dist_hang_watch h = {
        .doctor = n->cfg->doctor,
        .node_name = n->node_name,
        .addr = n->step.master_addr,
        .key = n->have_srun ? n->srun.key : "",
        .job_id = n->step.job_id,
        .step_id = n->step.step_id,
        .seconds = dist_config_hang (n->cfg),
        .node_count = n->step.node_count,
        .node_id = n->slurm_node,
        .local_tasks = n->step.local_world_size,
        .port = n->step.ras_port,
    };

    if (h.seconds == 0 || t->local_rank != 0)
        return;
    h.lead = spank_get_item (t->sp, S_JOB_GLOBAL_TO_LOCAL_ID, rank0, &lid) == ESPANK_SUCCESS;
    (void) dist_train_hang_watch_start (t->sp, &h);
}

int dist_train_remote_task_init (spank_t sp)
{
    const struct stepd_node *n = node;
    struct task t;

    if (n != NULL && n->error[0] != '\0')
        return refuse_deferred (n);
    if (!planned (n))
        return 0;
    if (read_task (n, sp, &t) < 0 || refuse_container_later (&t) < 0)
        return -1;
    if (n->cfg->verbose && t.rank == 0)
        dist_train_report_step (sp, n->cfg, &n->step, n->full ? &n->layout : NULL,
                                n->full ? &n->order : NULL, n->have_groups);
    replace_srun_notes (n, sp);
    dist_train_bind_task (n->binding, sp, t.local_rank, n->container, &t.step.cpus_per_task);
    if (set_variables (n, &t) < 0 || set_group_variables (n, &t) < 0)
        return -1;
    set_rank_layout (n, &t);
    if (prepend_doctor (n, &t) < 0)
        return -1;
    start_hang_watch (n, &t);
    return 0;
}

int dist_train_remote_task_exit (spank_t sp)
{
    if (!planned (node))
        return 0;
    return dist_train_failfast_task_exit (sp, &node->failfast);
}

void dist_train_remote_exit (void)
{
    if (node == NULL)
        return;
    dist_train_bind_free (node->binding);
    dist_train_topology_free (node->topology);
    dist_train_container_free (node->container);
    free (node->tf_config);
    dist_netorder_free (&node->order);
    dist_step_layout_free (&node->layout);
    free (node->local_rank);
    free (node->local_group_rank);
    free (node->rank_layout);
    free (node);
    node = NULL;
}
