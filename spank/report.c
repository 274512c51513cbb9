/* report.c - verbose: what the step got, in a few lines and a table of its
 * ranks, said once by rank 0 (whose stderr is the user's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "dist_train.h"

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
                             (unsigned long) seen[node], (unsigned long) node, layout.names[node]);
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
void dist_report_step (spank_t sp, const struct dist_config *cfg, const struct dist_step *st)
{
    char nodes[1024], *all = dist_train_getenv_any (sp, "SLURM_STEP_NODELIST");

    /* (a long list is cut for the line, with an ellipsis) */
    snprintf (nodes, sizeof (nodes), "%s", all != NULL ? all : "?");
    if (all != NULL && strlen (all) >= sizeof (nodes))
        memcpy (nodes + sizeof (nodes) - 4, "...", 4);
    free (all);
    if (cfg->profile == DIST_PROFILE_LAUNCHER) {
        slurm_spank_log ("%s: step %lu.%lu: launcher profile, one launcher on each of %lu nodes "
                         "(%s) starting %lu processes each, MASTER_ADDR=%s MASTER_PORT=%u, "
                         "interface on node rank 0: %s",
                         PLUGIN_NAME, (unsigned long) st->job_id, (unsigned long) st->step_id,
                         (unsigned long) st->node_count, nodes, (unsigned long) st->nproc_per_node,
                         st->master_addr, (unsigned) st->master_port,
                         st->ifname[0] != '\0' ? st->ifname : "(not found)");
        return;
    }
    slurm_spank_log ("%s: step %lu.%lu: %s profile, %lu ranks on %lu nodes (%s), "
                     "MASTER_ADDR=%s MASTER_PORT=%u, interface on rank 0's node: %s",
                     PLUGIN_NAME, (unsigned long) st->job_id, (unsigned long) st->step_id,
                     dist_profile_name (cfg->profile), (unsigned long) st->world_size,
                     (unsigned long) st->node_count, nodes, st->master_addr,
                     (unsigned) st->master_port,
                     st->ifname[0] != '\0' ? st->ifname : "(not found)");
    report_ranks (sp, st);
}
