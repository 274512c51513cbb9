/* remote.c - slurmstepd: compute the node's facts once (user_init), then give
 * each task its variables (task_init, just before exec). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "compat.h"
#include "dist_train.h"
#include "libdist/layout.h"
#include "libdist/port.h"
#include "libdist/tfconfig.h"

/* Read a uint32_t item, with a message naming it when Slurm has none. */
static int get_u32 (spank_t sp, spank_item_t item, const char *what,
                    uint32_t *value)
{
    char msg[DIST_ERR_MAX];

    if (spank_get_item (sp, item, value) != ESPANK_SUCCESS) {
        snprintf (msg, sizeof (msg), "cannot read the step's %s from Slurm", what);
        dist_train_defer_error (msg);
        return -1;
    }
    return 0;
}

/* The names of the step's first node and of node `index` (malloc'ed),
 * from one pass over the step's node list; -1 if either is missing. */
static int step_nodes (spank_t sp, uint32_t index, char **first, char **self)
{
    dt_hostlist_t hl;
    char *name;
    uint32_t i;

    *first = *self = NULL;
    if ((hl = dist_train_step_hostlist (sp)) == NULL)
        return -1;
    for (i = 0; i <= index && (name = slurm_hostlist_shift (hl)) != NULL; i++) {
        if (i == 0)
            *first = name;
        if (i == index)
            *self = i == 0 ? strdup (name) : name;
        else if (i != 0)
            free (name);
    }
    slurm_hostlist_destroy (hl);
    if (*first == NULL || *self == NULL) {
        free (*first);
        free (*self);
        *first = *self = NULL;
        return -1;
    }
    return 0;
}

static bool is_arbitrary (spank_t sp)
{
    char dist[64];
    return spank_getenv (sp, "SLURM_DISTRIBUTION", dist, sizeof (dist)) == ESPANK_SUCCESS
           && dist_distribution_parse (dist) == DIST_DIST_ARBITRARY;
}

/* Find the node that runs rank 0 (malloc'ed into *rank0), and whether it is
 * this one (self).  srun read it from the step's layout (local.c); without
 * that, block, cyclic and plane start on the step's first node, and the
 * arbitrary distribution cannot be told: SLURM_HOSTFILE names a path that
 * slurmstepd does not open. */
static int find_rank0_node (spank_t sp, const char *first, const char *self, char **rank0,
                            bool *here)
{
    char msg[DIST_ERR_MAX];
    uint32_t lid;
    bool runs_rank0;

    if (dist_train.have_srun && dist_train.srun.rank0_node[0] != '\0') {
        if ((*rank0 = strdup (dist_train.srun.rank0_node)) == NULL) {
            dist_train_defer_error ("out of memory");
            return -1;
        }
    } else if (is_arbitrary (sp)) {
        dist_train_defer_error (DIST_TRAIN_NO_SRUN_LAYOUT);
        return -1;
    } else if ((*rank0 = strdup (first)) == NULL) {
        dist_train_defer_error ("out of memory");
        return -1;
    }
    /* This node knows whether it runs rank 0: check what was derived. */
    runs_rank0 = spank_get_item (sp, S_JOB_GLOBAL_TO_LOCAL_ID, (uint32_t) 0, &lid)
                 == ESPANK_SUCCESS;
    *here = strcmp (self, *rank0) == 0;
    if (runs_rank0 != *here) {
        snprintf (msg, sizeof (msg),
                  "rank 0 runs on %.64s, not on %.64s as the step's layout says; "
                  "set MASTER_ADDR yourself for this layout",
                  runs_rank0 ? self : "another node", *rank0);
        dist_train_defer_error (msg);
        free (*rank0);
        *rank0 = NULL;
        return -1;
    }
    return 0;
}

/* A count from the step's environment; false when unset or not a number. */
static bool env_count (spank_t sp, const char *name, uint32_t *count)
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

/* torchrun's restart count: the job's requeues (Slurm's item is 0 in the
 * steps of a requeued batch job; SLURM_RESTART_COUNT in its environment is
 * right), or what scripts/dist-train-restart counts, requeues included, in
 * DIST_TRAIN_RESTART_COUNT. */
static void restart_count (spank_t sp, uint32_t *count)
{
    uint32_t n;

    if (spank_get_item (sp, S_SLURM_RESTART_COUNT, count) != ESPANK_SUCCESS)
        *count = 0;
    if (env_count (sp, "SLURM_RESTART_COUNT", &n) && n > *count)
        *count = n;
    if (env_count (sp, "DIST_TRAIN_RESTART_COUNT", &n))
        *count = n;
}

static int collect_step (spank_t sp, struct dist_step *step)
{
    char err[DIST_ERR_MAX];
    char msg[DIST_ERR_MAX + 128];
    char user_port[16];
    uint32_t user_port_n;
    char user_addr[256];
    char *node = NULL, *first = NULL, *self = NULL;
    bool here;
    int rc = -1;

    if (get_u32 (sp, S_JOB_NNODES, "node count", &step->node_count) < 0
        || get_u32 (sp, S_JOB_NODEID, "node index", &step->node_rank) < 0
        || get_u32 (sp, S_JOB_TOTAL_TASK_COUNT, "task count", &step->world_size) < 0
        || get_u32 (sp, S_JOB_LOCAL_TASK_COUNT, "local task count",
                    &step->local_world_size) < 0
        || get_u32 (sp, S_STEP_CPUS_PER_TASK, "CPUs per task",
                    &step->cpus_per_task) < 0)
        return -1;
    restart_count (sp, &step->restart_count);
    step->watchdog_s = dist_train.cfg.watchdog_s;
    /* one pass over the step's nodes: its first, and this one (for messages) */
    if (step_nodes (sp, step->node_rank, &first, &self) < 0) {
        dist_train_defer_error ("cannot read the step's nodes from SLURM_STEP_NODELIST");
        return -1;
    }
    snprintf (dist_train.node_name, sizeof (dist_train.node_name), "%s", self);
    /* (the step's environment is the user's: the name goes into log lines) */
    dist_printable (dist_train.node_name);

    /* A MASTER_ADDR the user set is kept: it only guides the interface. */
    if (spank_getenv (sp, "MASTER_ADDR", user_addr, sizeof (user_addr)) == ESPANK_SUCCESS
        && user_addr[0] != '\0') {
        /* jax builds JAX_COORDINATOR_ADDRESS from it: never from a cut name */
        if (dist_train.cfg.profile == DIST_PROFILE_JAX
            && strlen (user_addr) >= sizeof (step->master_addr)) {
            dist_train_defer_error ("the jax profile needs a MASTER_ADDR of at most 45 "
                                    "characters; set it to rank 0's address, not a long name");
            goto out;
        }
        /* (too long to be an address: the user's value is kept as it is) */
        snprintf (step->master_addr, sizeof (step->master_addr), "%.45s", user_addr);
        here = false;
    } else {
        if (find_rank0_node (sp, first, self, &node, &here) < 0)
            goto out;
        if (dist_train_resolve_master (sp, node,
                                       dist_train.have_srun ? dist_train.srun.rank0_addr : "",
                                       here, step->master_addr,
                                       sizeof (step->master_addr), err, sizeof (err)) < 0) {
            dist_train_defer_error (err);
            goto out;
        }
    }

    if (dist_train.cfg.ifname[0] != '\0')
        snprintf (step->ifname, sizeof (step->ifname), "%s", dist_train.cfg.ifname);
    else
        dist_train_find_ifname (step->master_addr, step->ifname, sizeof (step->ifname));

    step->master_port = dist_port_for_step (dist_train.cfg.port_lo, dist_train.cfg.port_hi,
                                            step->job_id, step->step_id);
    /* A port the user chose is theirs to check, and what the profile derives
     * from it (JAX_COORDINATOR_ADDRESS, PET_MASTER_PORT) follows it; ours is
     * checked where rank 0 will listen, so a collision fails now instead of
     * hanging later. */
    if (spank_getenv (sp, "MASTER_PORT", user_port, sizeof (user_port)) == ESPANK_SUCCESS) {
        if (env_count (sp, "MASTER_PORT", &user_port_n) && user_port_n >= 1
            && user_port_n <= 65535)
            step->master_port = (uint16_t) user_port_n;
    } else if (here
        && dist_train_check_port_free (step->master_addr, step->master_port,
                                       err, sizeof (err)) < 0) {
        snprintf (msg, sizeof (msg), "node %s: %s", node, err);
        dist_train_defer_error (msg);
        goto out;
    }
    rc = 0;
out:
    free (node);
    free (first);
    free (self);
    return rc;
}

/* tf profile: TF_CONFIG lists every task as host:port, so this node needs
 * the whole layout; built once here, finished per task with its index. */
static int build_tf_config (spank_t sp, const struct dist_step *st)
{
    struct step_layout layout;
    const char **host_of_rank;
    uint32_t rank;

    if (dist_train_layout_load (sp, st, &layout) == 0) {
        host_of_rank = calloc (st->world_size, sizeof (*host_of_rank));
        if (host_of_rank != NULL) {
            for (rank = 0; rank < st->world_size; rank++)
                host_of_rank[rank] = layout.names[layout.node_of_rank[rank]];
            if (!dist_tf_config_fits (host_of_rank, st->world_size)) {
                free (host_of_rank);
                dist_train_layout_free (&layout);
                dist_train_defer_error ("the tf profile's TF_CONFIG for this many ranks is larger "
                                        "than Linux allows for one variable (128 KiB); use the "
                                        "torch or jax profile");
                return -1;
            }
            dist_train.tf_config = dist_tf_config_prefix (
                host_of_rank, st->world_size, st->master_port,
                dist_train.cfg.port_lo, dist_train.cfg.port_hi);
            free (host_of_rank);
        }
        dist_train_layout_free (&layout);
    }
    if (dist_train.tf_config == NULL) {
        dist_train_defer_error ("the tf profile needs a layout it can read (block, cyclic, "
                                "plane, or arbitrary as srun hands it over) and a port_range "
                                "with a port for every task; use another profile");
        return -1;
    }
    return 0;
}

/* What srun worked out for this step (local.c), if it is for this step. */
static void read_srun_handover (spank_t sp, const struct dist_step *step)
{
    char text[DIST_HANDOVER_MAX];

    dist_train.have_srun =
        spank_getenv (sp, DIST_HANDOVER_VAR, text, sizeof (text)) == ESPANK_SUCCESS
        && dist_handover_parse (text, &dist_train.srun) == 0
        && dist_train.srun.job_id == step->job_id && dist_train.srun.step_id == step->step_id;
    if (!dist_train.have_srun)
        memset (&dist_train.srun, 0, sizeof (dist_train.srun));
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
static uint32_t launcher_nproc (spank_t sp)
{
    char value[64], *count, *end;
    unsigned long n;
    uint32_t u;
    int gpus;

    if (dist_train.cfg.nproc > 0)
        return dist_train.cfg.nproc;
    if (env_count (sp, "PET_NPROC_PER_NODE", &u) && u >= 1 && u <= DIST_NPROC_MAX)
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
static int launcher_check (spank_t sp, struct dist_step *step)
{
    char msg[DIST_ERR_MAX];
    uint32_t local;

    if (get_u32 (sp, S_JOB_LOCAL_TASK_COUNT, "local task count", &local) < 0)
        return -1;
    if (local != 1) {
        snprintf (msg, sizeof (msg),
                  "--dist-train=launcher runs one task per node, which starts the ranks "
                  "(torchrun, accelerate launch, composer), and this step has %lu tasks on a "
                  "node: add --ntasks-per-node=1",
                  (unsigned long) local);
        dist_train_defer_error (msg);
        return -1;
    }
    step->nproc_per_node = launcher_nproc (sp);
    return 0;
}

int dist_train_remote_user_init (spank_t sp)
{
    struct dist_step *step = &dist_train.step;

    /* Without the flag nothing changes, not even for a plugstack error. */
    if (dist_train.cfg.profile == DIST_PROFILE_OFF) {
        dist_train.error[0] = '\0';
        return 0;
    }
    if (get_u32 (sp, S_JOB_ID, "job id", &step->job_id) < 0
        || get_u32 (sp, S_JOB_STEPID, "step id", &step->step_id) < 0)
        return 0;
    if (!dist_train_is_training_step (step->step_id)) {
        dist_train.error[0] = '\0';
        return 0;
    }
    if (dist_train.error[0] != '\0')
        return 0;
    if (heterogeneous_step (sp)) {
        dist_train_defer_error ("a heterogeneous step (srun --het-group=0,1, or A : B) is not "
                                "supported: its components get no one world. Use one component "
                                "per step (srun --het-group=N --dist-train), or set RANK, "
                                "WORLD_SIZE and MASTER_ADDR yourself");
        return 0;
    }
    read_srun_handover (sp, step);
    if (dist_train.cfg.profile == DIST_PROFILE_LAUNCHER && launcher_check (sp, step) < 0)
        return 0;
    if (collect_step (sp, step) == 0
        && (dist_train.cfg.profile != DIST_PROFILE_TF || build_tf_config (sp, step) == 0)) {
        if (dist_train_container_note (sp) < 0) {
            dist_train_defer_error ("out of memory");
            return 0;
        }
        dist_train.active = true;
        dist_train_bind_plan (sp);
    }
    return 0;
}

#define REPORT_ROWS 64 /* verbose lists this many ranks, then counts the rest */

/* verbose: the rank table, when srun's distribution can be recomputed. */
static void report_ranks (spank_t sp, const struct dist_step *st)
{
    struct step_layout layout;
    uint32_t *seen, rank, shown;

    if (dist_train_layout_load (sp, st, &layout) < 0)
        return;
    seen = calloc (st->node_count, sizeof (*seen));
    if (seen == NULL) {
        dist_train_layout_free (&layout);
        return;
    }
    slurm_spank_log ("%s:   RANK  LOCAL_RANK  NODE_RANK  NODE", PLUGIN_NAME);
    shown = st->world_size < REPORT_ROWS ? st->world_size : REPORT_ROWS;
    for (rank = 0; rank < st->world_size; rank++) {
        uint32_t node = layout.node_of_rank[rank];
        if (rank < shown)
            slurm_spank_log ("%s:   %-5lu %-11lu %-10lu %s", PLUGIN_NAME, (unsigned long) rank,
                             (unsigned long) seen[node], (unsigned long) node,
                             layout.names[node]);
        seen[node]++;
    }
    if (shown < st->world_size)
        slurm_spank_log ("%s:   ... and %lu more ranks", PLUGIN_NAME,
                         (unsigned long) (st->world_size - shown));
    free (seen);
    dist_train_layout_free (&layout);
}

/* verbose: what the step got, said once, by rank 0 (whose stderr is the
 * user's). */
static void report_step (spank_t sp)
{
    const struct dist_step *st = &dist_train.step;
    char nodes[1024], *all = dist_train_getenv_any (sp, "SLURM_STEP_NODELIST");

    /* (a long list is cut for the line, with an ellipsis) */
    snprintf (nodes, sizeof (nodes), "%s", all != NULL ? all : "?");
    if (all != NULL && strlen (all) >= sizeof (nodes))
        memcpy (nodes + sizeof (nodes) - 4, "...", 4);
    free (all);
    if (dist_train.cfg.profile == DIST_PROFILE_LAUNCHER) {
        slurm_spank_log ("%s: step %lu.%lu: launcher profile, one launcher on each of %lu nodes "
                         "(%s) starting %lu processes each, MASTER_ADDR=%s MASTER_PORT=%u, "
                         "interface on node rank 0: %s",
                         PLUGIN_NAME, (unsigned long) st->job_id, (unsigned long) st->step_id,
                         (unsigned long) st->node_count, nodes,
                         (unsigned long) st->nproc_per_node, st->master_addr,
                         (unsigned) st->master_port,
                         st->ifname[0] != '\0' ? st->ifname : "(not found)");
        return;
    }
    slurm_spank_log ("%s: step %lu.%lu: %s profile, %lu ranks on %lu nodes (%s), "
                     "MASTER_ADDR=%s MASTER_PORT=%u, interface on rank 0's node: %s",
                     PLUGIN_NAME, (unsigned long) st->job_id, (unsigned long) st->step_id,
                     dist_profile_name (dist_train.cfg.profile),
                     (unsigned long) st->world_size, (unsigned long) st->node_count,
                     nodes, st->master_addr, (unsigned) st->master_port,
                     st->ifname[0] != '\0' ? st->ifname : "(not found)");
    report_ranks (sp, st);
}

/* preflight in a container: the doctor runs there, from the image's files;
 * said once per node. */
static int doctor_in_container (int local_rank)
{
    const char *doctor = dist_train.cfg.doctor;

    /* (a bare name is looked up on the task's PATH when it execs) */
    if (strchr (doctor, '/') == NULL || access (doctor, X_OK) == 0)
        return 0;
    if (local_rank == 0)
        slurm_error ("%s: preflight: the container has no %s: install slurm-dist-train in the "
                     "image, or mount it with --container-mounts=%s:%s (it needs the image's C "
                     "library to be as new as the node's); or use --dist-train=preflight=off",
                     PLUGIN_NAME, doctor, doctor, doctor);
    dist_train_wait_forwarded (STDERR_FILENO);
    return -1;
}

int dist_train_remote_task_init (spank_t sp)
{
    struct dist_var vars[DIST_ENV_MAX];
    enum dist_container container;
    uint32_t rank;
    int local_rank;
    size_t i, n;

    if (dist_train.error[0] != '\0') {
        slurm_error ("%s: %s", PLUGIN_NAME, dist_train.error);
        /* the task fails now and fail fast stops the step: the line must reach srun */
        dist_train_wait_forwarded (STDERR_FILENO);
        return -1;
    }
    if (!dist_train.active)
        return 0;
    if (spank_get_item (sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS) {
        slurm_error ("%s: cannot read the task's rank from Slurm", PLUGIN_NAME);
        return -1;
    }
    container = dist_train_container_state ();
    if (container == DIST_CONTAINER_LATER) {
        if (local_rank == 0)
            slurm_error ("%s: plugstack.conf loads dist-train before pyxis, so the container's "
                         "environment would replace MASTER_ADDR, MASTER_PORT and the other "
                         "variables after dist-train set them. The admin must list dist-train "
                         "after pyxis (its snippet as plugstack.conf.d/zz-dist-train.conf); "
                         "until then, run the container without --dist-train",
                         PLUGIN_NAME);
        dist_train_wait_forwarded (STDERR_FILENO);
        return -1;
    }
    if (dist_train.cfg.verbose && rank == 0)
        report_step (sp);
    /* srun's notes to the nodes are not part of the contract */
    spank_unsetenv (sp, DIST_HANDOVER_VAR);
    spank_unsetenv (sp, DIST_LAYOUT_VAR);
    /* the key this step's srun drew, never one a task inherited from another step */
    if (dist_train.have_srun && dist_train.srun.key[0] != '\0') {
        if (spank_setenv (sp, DIST_STEP_KEY_VAR, dist_train.srun.key, 1) != ESPANK_SUCCESS)
            slurm_verbose ("%s: cannot set %s", PLUGIN_NAME, DIST_STEP_KEY_VAR);
    } else
        spank_unsetenv (sp, DIST_STEP_KEY_VAR);
    /* (this is the task's own process: its copy of the step may change) */
    dist_train_bind_task (sp, local_rank, &dist_train.step.cpus_per_task);
    n = dist_env_build (dist_train.cfg.profile, &dist_train.step, rank,
                        (uint32_t) local_rank, vars);
    if (dist_train.tf_config != NULL) {
        char *tf = malloc (strlen (dist_train.tf_config) + 16);
        if (tf == NULL)
            return -1;
        sprintf (tf, "%s%lu}}", dist_train.tf_config, (unsigned long) rank);
        (void) dist_train_set_default (sp, "TF_CONFIG", tf);
        free (tf);
    }
    for (i = 0; i < n; i++) {
        if (vars[i].overwrite == DIST_DEFAULT)
            (void) dist_train_set_default (sp, vars[i].name, vars[i].value);
        else if (spank_setenv (sp, vars[i].name, vars[i].value, 1) != ESPANK_SUCCESS) {
            slurm_error ("%s: cannot set %s", PLUGIN_NAME, vars[i].name);
            return -1;
        }
    }
    /* preflight: the task runs dist-train-doctor, which checks the step and then execs the
     * task's own command line unchanged */
    if (dist_config_preflight (&dist_train.cfg)) {
        const char *argv[] = { dist_train.cfg.doctor, "--then" };
        if (container == DIST_IN_CONTAINER && doctor_in_container (local_rank) < 0)
            return -1;
        if (dist_compat_prepend_task_argv (sp, 2, argv) < 0) {
            slurm_error ("%s: preflight: this Slurm (%d.%02d) cannot run dist-train-doctor before "
                         "the program (23.11 or later can): use --dist-train=preflight=off",
                         PLUGIN_NAME, SLURM_VERSION_MAJOR (SLURM_VERSION_NUMBER),
                     SLURM_VERSION_MINOR (SLURM_VERSION_NUMBER));
            return -1;
        }
    }
    return 0;
}
