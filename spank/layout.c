/* layout.c - the step's whole layout (the node of every rank), read from the
 * step environment: what the tf profile and the verbose table need.  Only
 * block, cyclic and plane can be recomputed; arbitrary cannot. */
#include <stdlib.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "dist_train.h"
#include "libdist/layout.h"

int dist_train_layout_load (spank_t sp, const struct dist_step *st,
                            struct step_layout *l)
{
    char text[8192], dist_text[64], plane_text[16];
    uint32_t *counts = NULL, plane = 0, i;
    hostlist_t hl = NULL;
    int rc = -1;

    l->nnodes = st->node_count;
    l->ntasks = st->world_size;
    l->names = calloc (l->nnodes, sizeof (*l->names));
    l->node_of_rank = calloc (l->ntasks, sizeof (*l->node_of_rank));
    counts = calloc (l->nnodes, sizeof (*counts));
    if (spank_getenv (sp, "SLURM_DISTRIBUTION", dist_text, sizeof (dist_text)) != ESPANK_SUCCESS)
        dist_text[0] = '\0';
    if (spank_getenv (sp, "SLURM_DIST_PLANESIZE", plane_text, sizeof (plane_text))
        == ESPANK_SUCCESS)
        plane = (uint32_t) strtoul (plane_text, NULL, 10);
    if (l->names == NULL || l->node_of_rank == NULL || counts == NULL
        || spank_getenv (sp, "SLURM_STEP_TASKS_PER_NODE", text, sizeof (text)) != ESPANK_SUCCESS
        || dist_tasks_per_node_parse (text, counts, l->nnodes) != (int) l->nnodes
        || dist_layout_assign (dist_distribution_parse (dist_text), plane, counts,
                               l->nnodes, l->node_of_rank, l->ntasks) < 0
        || spank_getenv (sp, "SLURM_STEP_NODELIST", text, sizeof (text)) != ESPANK_SUCCESS
        || (hl = slurm_hostlist_create (text)) == NULL)
        goto out;
    for (i = 0; i < l->nnodes; i++)
        if ((l->names[i] = slurm_hostlist_shift (hl)) == NULL)
            goto out;
    rc = 0;
out:
    free (counts);
    if (hl != NULL)
        slurm_hostlist_destroy (hl);
    if (rc < 0)
        dist_train_layout_free (l);
    return rc;
}

void dist_train_layout_free (struct step_layout *l)
{
    uint32_t i;

    if (l->names != NULL)
        for (i = 0; i < l->nnodes; i++)
            free (l->names[i]);
    free (l->names);
    free (l->node_of_rank);
    l->names = NULL;
    l->node_of_rank = NULL;
}
