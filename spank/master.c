/* master.c - slurmstepd: rank 0's address (MASTER_ADDR), its port and the
 * interface that reaches it, the same on every node of the step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "compat.h"
#include "dist_train.h"
#include "libdist/port.h"

/* The names of the step's first node and of node `index` (malloc'ed); -1 if either is
 * missing.  This node's name is slurmd's (SLURMD_NODENAME, which slurmstepd sets from
 * slurmd's configuration), found in the list at `index`: a walk to the index would cost
 * every node of a large step a name per node before it. */
static int step_nodes (spank_t sp, uint32_t index, char **first, char **self)
{
    const char *mine = getenv ("SLURMD_NODENAME");
    dt_hostlist_t hl;
    char *name;
    uint32_t i;

    *first = *self = NULL;
    if ((hl = dist_train_step_hostlist (sp)) == NULL)
        return -1;
    if ((*first = slurm_hostlist_shift (hl)) != NULL && index == 0)
        *self = strdup (*first);
    else if (*first != NULL && mine != NULL && slurm_hostlist_find (hl, mine) == (int) index - 1)
        *self = strdup (mine);
    /* (else the walk: from the second node on, the first is shifted already) */
    for (i = 1; *first != NULL && *self == NULL && i <= index
                && (name = slurm_hostlist_shift (hl)) != NULL;
         i++) {
        if (i == index)
            *self = name;
        else
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

/* Find the node that runs rank 0, Slurm's rank slurm_rank0 (malloc'ed into *rank0), and
 * whether it is this one (self).  srun read it from the step's layout (local.c); without
 * that, block, cyclic and plane start on the step's first node, and the
 * arbitrary distribution cannot be told: SLURM_HOSTFILE names a path that
 * slurmstepd does not open. */
static int find_rank0_node (spank_t sp, const struct dist_handover *srun, uint32_t slurm_rank0,
                            const char *first, const char *self, char **rank0, bool *here,
                            char *err, size_t errsz)
{
    uint32_t lid;
    bool runs_rank0;

    if (srun != NULL && srun->rank0_node[0] != '\0')
        *rank0 = strdup (srun->rank0_node);
    else if (dist_train_is_arbitrary (sp)) {
        snprintf (err, errsz, "%s", DIST_TRAIN_NO_SRUN_LAYOUT);
        return -1;
    } else
        *rank0 = strdup (first);
    if (*rank0 == NULL) {
        snprintf (err, errsz, "out of memory");
        return -1;
    }
    /* This node knows whether it runs rank 0: check what was derived. */
    runs_rank0 = spank_get_item (sp, S_JOB_GLOBAL_TO_LOCAL_ID, slurm_rank0, &lid) == ESPANK_SUCCESS;
    *here = strcmp (self, *rank0) == 0;
    if (runs_rank0 != *here) {
        snprintf (err, errsz,
                  "rank 0 runs on %.64s, not on %.64s as the step's layout says; "
                  "set MASTER_ADDR yourself for this layout",
                  runs_rank0 ? self : "another node", *rank0);
        free (*rank0);
        *rank0 = NULL;
        return -1;
    }
    return 0;
}

/* MASTER_ADDR: the user's, which is kept (it only guides the interface), or
 * rank 0's node resolved; *rank0 is that node (malloc'ed, NULL for the
 * user's) and *here whether it is this one. */
static int choose_address (spank_t sp, const struct dist_config *cfg,
                           const struct dist_handover *srun, uint32_t slurm_rank0, bool own_net,
                           const char *first, const char *self, struct dist_step *step,
                           char **rank0, bool *here, char *err, size_t errsz)
{
    char user_addr[256];

    *rank0 = NULL;
    *here = false;
    if (spank_getenv (sp, "MASTER_ADDR", user_addr, sizeof (user_addr)) == ESPANK_SUCCESS
        && user_addr[0] != '\0') {
        /* jax builds JAX_COORDINATOR_ADDRESS from it: never from a cut name */
        if (cfg->profile == DIST_PROFILE_JAX && strlen (user_addr) >= sizeof (step->master_addr)) {
            snprintf (err, errsz,
                      "the jax profile needs a MASTER_ADDR of at most 45 "
                      "characters; set it to rank 0's address, not a long name");
            return -1;
        }
        /* (too long to be an address: the user's value is kept as it is) */
        snprintf (step->master_addr, sizeof (step->master_addr), "%.45s", user_addr);
        return 0;
    }
    if (own_net) {
        /* the container's own namespace, where this node's address is not */
        snprintf (step->master_addr, sizeof (step->master_addr), "127.0.0.1");
        return 0;
    }
    if (find_rank0_node (sp, srun, slurm_rank0, first, self, rank0, here, err, errsz) < 0)
        return -1;
    return dist_train_resolve_master (sp, *rank0, srun != NULL ? srun->rank0_addr : "", *here,
                                      step->master_addr, sizeof (step->master_addr), err, errsz);
}

/* MASTER_PORT: the user's, else the step's port of the range, checked where
 * rank 0 will listen, so that a collision fails now instead of hanging
 * later.  A port the user chose is theirs to check, and what the profile
 * derives from it (JAX_COORDINATOR_ADDRESS, PET_MASTER_PORT) follows it. */
static int choose_port (spank_t sp, const struct dist_config *cfg, const char *rank0, bool here,
                        struct dist_step *step, char *err, size_t errsz)
{
    char user_port[16], why[DIST_ERR_MAX];
    uint32_t n;

    step->master_port =
        dist_port_for_step (cfg->port_lo, cfg->port_hi, step->job_id, step->step_id);
    step->ras_port =
        dist_ras_port_for_step (cfg->port_lo, cfg->port_hi, step->job_id, step->step_id);
    step->port_lo = cfg->port_lo;
    step->port_hi = cfg->port_hi;
    if (spank_getenv (sp, "MASTER_PORT", user_port, sizeof (user_port)) == ESPANK_SUCCESS) {
        if (dist_train_env_count (sp, "MASTER_PORT", &n) && n >= 1 && n <= 65535)
            step->master_port = (uint16_t) n;
        return 0;
    }
    if (here
        && dist_train_check_port_free (step->master_addr, step->master_port, why, sizeof (why))
               < 0) {
        snprintf (err, errsz, "node %.64s: %s", rank0, why);
        return -1;
    }
    return 0;
}

int dist_train_master_choose (spank_t sp, const struct dist_config *cfg,
                              const struct dist_handover *srun, uint32_t slurm_rank0, bool own_net,
                              struct dist_step *step, char *node_name, size_t node_name_size,
                              char *err, size_t errsz)
{
    char *rank0 = NULL, *first = NULL, *self = NULL;
    bool here;
    int rc = -1;

    /* one pass over the step's nodes: its first, and this one (for messages) */
    if (step_nodes (sp, step->node_rank, &first, &self) < 0) {
        snprintf (err, errsz, "cannot read the step's nodes from SLURM_STEP_NODELIST");
        return -1;
    }
    snprintf (node_name, node_name_size, "%s", self);
    /* (the step's environment is the user's: the name goes into log lines) */
    dist_printable (node_name);
    if (choose_address (sp, cfg, srun, slurm_rank0, own_net, first, self, step, &rank0, &here, err,
                        errsz)
        < 0)
        goto out;
    /* (the site's interface is not in the container's namespace: lo is all there is) */
    if (own_net)
        snprintf (step->ifname, sizeof (step->ifname), "lo");
    else if (cfg->ifname[0] != '\0')
        snprintf (step->ifname, sizeof (step->ifname), "%s", cfg->ifname);
    else
        dist_train_find_ifname (step->master_addr, step->ifname, sizeof (step->ifname));
    rc = choose_port (sp, cfg, rank0, here, step, err, errsz);
out:
    free (rank0);
    free (first);
    free (self);
    return rc;
}
