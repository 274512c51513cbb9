/* local.c - srun: what is worked out once per step, before launch, and
 * handed to every node (libdist/handover.h).
 *
 * slurmstepd must not call slurmctld (it deadlocks there since 23.11, and
 * every node asking is O(nodes) RPCs per step), so srun does it, once:
 * which node runs rank 0 (the step's real layout, whatever the
 * distribution) and Slurm's NodeAddr for it, for nodes whose names do not
 * resolve; the node of every rank; where Slurm has a
 * network topology, the leaf switch or block of every node.  Fail fast is srun's own
 * kill-on-bad-exit, armed here.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "compat.h"
#include "dist_train.h"
#include "libdist/address.h"
#include "libdist/handover.h"
#include "libdist/layout.h"
#include "libdist/netgroup.h"

/* The names of the layout's nodes, in its order. */
static int layout_names (struct dist_step_layout *l, const char *node_list)
{
    dt_hostlist_t hl = slurm_hostlist_create (node_list);
    uint32_t i;

    if (hl == NULL)
        return -1;
    for (i = 0; i < l->nnodes && (l->names[i] = slurm_hostlist_shift (hl)) != NULL; i++)
        ;
    slurm_hostlist_destroy (hl);
    return i == l->nnodes ? 0 : -1;
}

/* From the step layout slurmctld holds (one RPC): -1 when it has none for the step. */
static int srun_layout_load (const struct dist_handover *h, struct dist_step_layout *l)
{
    slurm_step_id_t id;
    slurm_step_layout_t *layout;
    uint32_t node, i, tid;
    int rc = -1;

    memset (l, 0, sizeof (*l));
    memset (&id, 0, sizeof (id));
    id.job_id = h->job_id;
    id.step_id = h->step_id;
    id.step_het_comp = NO_VAL;
    if ((layout = slurm_job_step_layout_get (&id)) == NULL)
        return -1;
    l->nnodes = layout->node_cnt;
    l->nranks = layout->task_cnt;
    l->names = calloc (l->nnodes > 0 ? l->nnodes : 1, sizeof (*l->names));
    l->node_of_rank = calloc (l->nranks > 0 ? l->nranks : 1, sizeof (*l->node_of_rank));
    if (l->names == NULL || l->node_of_rank == NULL || layout_names (l, layout->node_list) < 0)
        goto out;
    for (node = 0; node < layout->node_cnt; node++)
        for (i = 0; i < layout->tasks[node]; i++)
            if ((tid = layout->tids[node][i]) < l->nranks)
                l->node_of_rank[tid] = node;
    rc = 0;
out:
    slurm_job_step_layout_free (layout);
    if (rc < 0)
        dist_step_layout_free (l);
    return rc;
}

/* Where the step's nodes sit in the network (Slurm's leaf switches or blocks), handed to
 * the nodes as DIST_NETGROUP_VAR; the Slurm rank that is RANK 0 into *rank0 (0 but under
 * rank_order=topology).  One more RPC, only where Slurm has such a topology. */
static void hand_over_groups (const struct dist_config *cfg, const struct dist_handover *h,
                              const struct dist_step_layout *l, uint32_t *rank0)
{
    struct dist_netorder order;
    uint32_t *group = NULL;
    char *topology = NULL, *text = NULL, err[DIST_ERR_MAX];
    int ngroups = 0;

    *rank0 = 0;
    unsetenv (DIST_NETGROUP_VAR); /* (one inherited from an outer step) */
    if (dist_train_compat_has_network_topology ()
        && (topology = dist_train_compat_topology_text ()) != NULL
        && (group = calloc (l->nnodes > 0 ? l->nnodes : 1, sizeof (*group))) != NULL
        && (ngroups =
                dist_netgroup_assign (topology, l->names, l->nnodes, group, err, sizeof (err)))
               < 0)
        slurm_verbose ("%s: %s", PLUGIN_NAME, err);
    if (ngroups > 0
        && (text = dist_netgroup_text (h->job_id, h->step_id, (uint32_t) ngroups, group, l->nnodes))
               == NULL) {
        slurm_info ("%s: the network's %d groups of this step's %lu nodes take more than the "
                    "%d KiB srun can hand to the nodes: the DIST_TRAIN_TOPOLOGY_* variables "
                    "and rank_order=topology are off for this step",
                    PLUGIN_NAME, ngroups, (unsigned long) l->nnodes, DIST_LAYOUT_TEXT_MAX >> 10);
    }
    if (text != NULL && setenv (DIST_NETGROUP_VAR, text, 1) == 0 && cfg->rank_order_topology
        && dist_netorder_make (&order, 1, (uint32_t) ngroups, group, l->nnodes, l->node_of_rank,
                               l->nranks)
               == 0) {
        *rank0 = order.slurm_rank0;
        dist_netorder_free (&order);
    } else if (cfg->rank_order_topology && ngroups <= 0)
        slurm_info ("%s: rank_order=topology: Slurm gives no network topology for this "
                    "step's nodes (TopologyPlugin topology/tree or topology/block and its "
                    "topology.conf); the ranks keep Slurm's order",
                    PLUGIN_NAME);
    free (text);
    free (group);
    free (topology);
}

/* What the nodes need of the layout: rank 0's node (under rank_order=topology, the node
 * of the Slurm rank that becomes RANK 0) into h, the groups, and the node of every rank
 * as the text of DIST_LAYOUT_VAR (malloc'ed into *layout_text; NULL when too long).  -1 when slurmctld has no layout for the step. */
static int read_step_layout (const struct dist_config *cfg, struct dist_handover *h,
                             char **layout_text)
{
    struct dist_step_layout l;
    uint32_t rank0 = 0;

    *layout_text = NULL;
    if (srun_layout_load (h, &l) < 0)
        return -1;
    hand_over_groups (cfg, h, &l, &rank0);
    /* (every distribution's: Slurm 26.05 deals block out in topology order, which the
     * nodes cannot recompute from the tasks per node) */
    *layout_text = dist_layout_text (h->job_id, h->step_id, l.nnodes, l.node_of_rank, l.nranks);
    /* (block, cyclic and plane take a few runs a node's rank: only a layout of its own
     * order, -m arbitrary's, can be this long) */
    if (*layout_text == NULL) {
        slurm_info ("%s: step %lu.%lu's layout (%lu ranks on %lu nodes, in an order of its own) "
                    "takes more than the %d KiB srun can hand to the nodes, so they go without "
                    "it: GROUP_RANK follows SLURM_NODEID instead of the ranks, and "
                    "rank_order=topology, the DIST_TRAIN_TOPOLOGY_* variables, the tf profile "
                    "and the doctor's layout check are off for this step. A hostfile that lists "
                    "each node's ranks together hands over in a few bytes",
                    PLUGIN_NAME, (unsigned long) h->job_id, (unsigned long) h->step_id,
                    (unsigned long) l.nranks, (unsigned long) l.nnodes, DIST_LAYOUT_TEXT_MAX >> 10);
        /* (nodes without the layout keep Slurm's order: RANK 0 is Slurm's rank 0 then) */
        rank0 = 0;
    }
    if (rank0 < l.nranks)
        snprintf (h->rank0_node, sizeof (h->rank0_node), "%s", l.names[l.node_of_rank[rank0]]);
    dist_step_layout_free (&l);
    return 0;
}

/* Rank 0's node's address into addr: Slurm's NodeAddr for it (one RPC), else its name,
 * resolved to a number here; "" when neither tells one. */
static void node_addr (const char *node, char *addr, size_t addrsz)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;
    node_info_msg_t *msg = NULL;
    char name[DIST_NODE_MAX];

    addr[0] = '\0';
    snprintf (name, sizeof (name), "%s", node);
    if (slurm_load_node_single (&msg, name, SHOW_ALL) == SLURM_SUCCESS && msg != NULL) {
        if (msg->record_count == 1 && msg->node_array[0].node_addr != NULL)
            snprintf (name, sizeof (name), "%s", msg->node_array[0].node_addr);
        slurm_free_node_info_msg (msg);
    }
    /* As a number: slurmstepd resolves no name but /etc/hosts' (network.c), and DNS is
     * the user's own process's to wait on, here.  Unresolved, Slurm's NodeAddr goes as it
     * is, for the nodes' /etc/hosts. */
    if (getaddrinfo (name, NULL, &hints, &list) == 0) {
        if (dist_address_pick (list, addr, addrsz) < 0)
            addr[0] = '\0';
        freeaddrinfo (list);
    }
    if (addr[0] == '\0' && strcmp (name, node) != 0)
        snprintf (addr, addrsz, "%s", name);
}

int dist_train_local_check (const struct dist_config *cfg)
{
    if (cfg->profile == DIST_PROFILE_OFF)
        return 0;
    if (dist_config_preflight (cfg) && !dist_train_compat_has_prepend_task_argv ()) {
        slurm_error ("%s: --dist-train=preflight (or the site's preflight=on) needs Slurm 23.11 "
                     "or later, which can run dist-train-doctor before the program; this is "
                     "Slurm %d.%02d: run the check yourself with `srun --dist-train ... "
                     "dist-train-doctor`, or use --dist-train=preflight=off",
                     PLUGIN_NAME, SLURM_VERSION_MAJOR (SLURM_VERSION_NUMBER),
                     SLURM_VERSION_MINOR (SLURM_VERSION_NUMBER));
        return -1;
    }
    if (dist_config_hang (cfg) > 0 && cfg->profile == DIST_PROFILE_TF) {
        slurm_error ("%s: hang= needs the port after MASTER_PORT for its watchers, and the tf "
                     "profile gives that port to TensorFlow's second task: use the torch "
                     "profile, or --dist-train=tf,hang=off",
                     PLUGIN_NAME);
        return -1;
    }
    if (dist_config_hang (cfg) > 0 && cfg->port_lo == cfg->port_hi) {
        slurm_error ("%s: hang= needs two ports per step, and the site's port_range (%u-%u) has "
                     "one: ask your admin for a wider port_range, or use --dist-train=hang=off",
                     PLUGIN_NAME, (unsigned) cfg->port_lo, (unsigned) cfg->port_hi);
        return -1;
    }
    return 0;
}

/* The launcher profile wants one task per node, as the step's layout (which
 * srun holds by now) says: refused here, before any task starts. */
static int launcher_tasks_refused (spank_t sp, const struct dist_config *cfg)
{
    uint32_t nodes, tasks;

    if (cfg->profile != DIST_PROFILE_LAUNCHER
        || spank_get_item (sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_TOTAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS || tasks == nodes)
        return 0;
    slurm_error ("%s: --dist-train=launcher runs one task per node, which starts the ranks "
                 "(torchrun, accelerate launch, composer), and this step has %lu tasks on %lu "
                 "nodes: add --ntasks-per-node=1 (and nproc=N for the processes per node, "
                 "if not one per GPU)",
                 PLUGIN_NAME, (unsigned long) tasks, (unsigned long) nodes);
    return -1;
}

/* A container with a network namespace of its own has loopback alone: the
 * ranks of two nodes could never reach each other.  Refused here, before any
 * task starts. */
static int own_net_refused (spank_t sp)
{
    struct pyxis_defaults env = {.image = getenv ("PYXIS_CONTAINER_IMAGE"),
                                 .name = getenv ("PYXIS_CONTAINER_NAME"),
                                 .unshare = getenv ("PYXIS_CONTAINER_UNSHARE")};
    char why[DIST_ERR_MAX];
    uint32_t nodes;

    if (spank_get_item (sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS || nodes <= 1
        || !dist_train_pyxis_own_net (sp, &env))
        return 0;
    dist_train_own_net_refusal (nodes, why, sizeof (why));
    slurm_error ("%s: %s", PLUGIN_NAME, why);
    return -1;
}

/* Milliseconds since *t0, and *t0 moved to now: the verbose line's clock. */
static double lap_ms (struct timespec *t0)
{
    struct timespec now;
    double ms;

    clock_gettime (CLOCK_MONOTONIC, &now);
    ms = (double) (now.tv_sec - t0->tv_sec) * 1e3 + (double) (now.tv_nsec - t0->tv_nsec) / 1e6;
    *t0 = now;
    return ms;
}

/* Rank 0's address from Slurm's NodeAddr, unless the user set MASTER_ADDR (then not
 * asked: it is kept).  Its time into *ms. */
static void rank0_addr (struct dist_handover *h, double *ms)
{
    struct timespec t0;

    clock_gettime (CLOCK_MONOTONIC, &t0);
    if (h->rank0_node[0] != '\0'
        && (getenv ("MASTER_ADDR") == NULL || getenv ("MASTER_ADDR")[0] == '\0'))
        node_addr (h->rank0_node, h->rank0_addr, sizeof (h->rank0_addr));
    *ms = lap_ms (&t0);
}

int dist_train_local_user_init (spank_t sp, const struct dist_config *cfg)
{
    struct dist_handover h;
    char text[DIST_HANDOVER_MAX];
    char *layout = NULL;
    struct timespec t0;
    double layout_ms, addr_ms;

    if (cfg->profile == DIST_PROFILE_OFF)
        return 0;
    memset (&h, 0, sizeof (h));
    if (spank_get_item (sp, S_JOB_ID, &h.job_id) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_STEPID, &h.step_id) != ESPANK_SUCCESS
        || !dist_train_is_training_step (h.step_id))
        return 0;
    if (launcher_tasks_refused (sp, cfg) < 0 || own_net_refused (sp) < 0)
        return -1;
    /* (without a key the tasks still start; dist-train-doctor says why it cannot run) */
    if (dist_random_hex (h.key, DIST_STEP_KEY_HEX / 2) < 0)
        slurm_verbose ("%s: cannot draw the step's key: %m", PLUGIN_NAME);
    h.fail_fast = dist_config_fail_fast (cfg);
    if (h.fail_fast)
        dist_train_compat_srun_kill_on_bad_exit ();
    /* Rank 0's node and every rank's: the nodes get them from here, never from
     * SLURM_HOSTFILE (a path the user names, which slurmstepd must not open). */
    clock_gettime (CLOCK_MONOTONIC, &t0);
    if (read_step_layout (cfg, &h, &layout) < 0)
        slurm_verbose ("%s: cannot read step %lu.%lu's layout from slurmctld: %s", PLUGIN_NAME,
                       (unsigned long) h.job_id, (unsigned long) h.step_id, slurm_strerror (errno));
    layout_ms = lap_ms (&t0);
    rank0_addr (&h, &addr_ms);
    if (cfg->verbose)
        slurm_spank_log ("%s: srun: the step's layout in %.2f ms (slurmctld), rank 0's NodeAddr "
                         "in %.2f ms",
                         PLUGIN_NAME, layout_ms, addr_ms);
    if (layout != NULL && setenv (DIST_LAYOUT_VAR, layout, 1) < 0)
        slurm_verbose ("%s: cannot set %s", PLUGIN_NAME, DIST_LAYOUT_VAR);
    else if (layout == NULL)
        unsetenv (DIST_LAYOUT_VAR); /* (one inherited from an outer step) */
    free (layout);
    /* (a name Slurm would not hold is left for the nodes to find) */
    if (dist_handover_format (&h, text, sizeof (text)) < 0) {
        h.rank0_node[0] = h.rank0_addr[0] = '\0';
        if (dist_handover_format (&h, text, sizeof (text)) < 0)
            return 0;
    }
    /* srun adds its environment to the step's after this callback. */
    if (setenv (DIST_HANDOVER_VAR, text, 1) < 0)
        slurm_verbose ("%s: cannot set %s", PLUGIN_NAME, DIST_HANDOVER_VAR);
    return 0;
}
