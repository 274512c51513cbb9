/* layout.c - the step's whole layout (the node of every rank), read from the
 * step environment: what the rank order, the tf profile and the verbose table
 * need.  srun read it from slurmctld (libdist/handover.h); without srun's,
 * block, cyclic and plane are recomputed from the tasks per node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "dist_train.h"
#include "libdist/handover.h"
#include "libdist/layout.h"

/* The node of every rank as srun read it from slurmctld and handed it over
 * (local.c): the only source under the arbitrary distribution, where
 * SLURM_HOSTFILE is a path the user names, which slurmstepd never opens. */
static int srun_layout (spank_t sp, const struct dist_step *st, struct dist_step_layout *l)
{
    char *text = dist_train_getenv_any (sp, DIST_LAYOUT_VAR);
    int rc;

    if (text == NULL)
        return -1;
    rc = dist_layout_text_parse (text, st->job_id, st->step_id, l->nnodes, l->nranks,
                                 l->node_of_rank);
    free (text);
    return rc;
}

int dist_train_layout_names (spank_t sp, struct dist_step_layout *l)
{
    dt_hostlist_t hl = dist_train_step_hostlist (sp);
    uint32_t i;
    int rc = -1;

    if (hl == NULL
        || (l->names = calloc (l->nnodes > 0 ? l->nnodes : 1, sizeof (*l->names))) == NULL)
        goto out;
    for (i = 0; i < l->nnodes; i++)
        if ((l->names[i] = slurm_hostlist_shift (hl)) == NULL)
            goto out;
    rc = 0;
out:
    if (rc < 0 && l->names != NULL) {
        for (i = 0; i < l->nnodes; i++)
            free (l->names[i]);
        free (l->names);
        l->names = NULL;
    }
    if (hl != NULL)
        slurm_hostlist_destroy (hl);
    return rc;
}

int dist_train_layout_load (spank_t sp, const struct dist_step *st, struct dist_step_layout *l)
{
    char dist_text[64], plane_text[16], *text = NULL;
    uint32_t *counts = NULL, plane = 0;
    enum dist_distribution dist;
    int rc = -1;

    l->nnodes = st->node_count;
    l->nranks = st->world_size;
    l->node_of_rank = calloc (l->nranks, sizeof (*l->node_of_rank));
    counts = calloc (l->nnodes, sizeof (*counts));
    if (spank_getenv (sp, "SLURM_DISTRIBUTION", dist_text, sizeof (dist_text)) != ESPANK_SUCCESS)
        dist_text[0] = '\0';
    dist = dist_distribution_parse (dist_text);
    if (spank_getenv (sp, "SLURM_DIST_PLANESIZE", plane_text, sizeof (plane_text))
        == ESPANK_SUCCESS)
        plane = (uint32_t) strtoul (plane_text, NULL, 10);
    if (l->node_of_rank == NULL || counts == NULL)
        goto out;
    /* srun's, for every distribution; without it block, cyclic and plane are recomputed,
     * as Slurm deals them out in node order (26.05 follows the topology instead) */
    if ((rc = srun_layout (sp, st, l)) == 0 || dist == DIST_DIST_ARBITRARY)
        goto out;
    if ((text = dist_train_getenv_any (sp, "SLURM_STEP_TASKS_PER_NODE")) == NULL
        || dist_tasks_per_node_parse (text, counts, l->nnodes) != (int) l->nnodes
        || dist_layout_assign (dist, plane, counts, l->nnodes, l->node_of_rank, l->nranks) < 0)
        goto out;
    rc = 0;
out:
    free (counts);
    free (text);
    if (rc < 0)
        dist_step_layout_free (l);
    return rc;
}
