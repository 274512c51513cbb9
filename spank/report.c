/* report.c - verbose: what the step got, in a few lines and a table of its
 * ranks, said once by rank 0 (whose stderr is the user's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "dist_train.h"
#include "libdist/netgroup.h"

#define REPORT_ROWS 64 /* verbose lists this many ranks, then counts the rest */

/* Slurm's rank of each RANK (malloc'ed), from the order, or the same without one. */
static uint32_t *slurm_rank_of (const struct dist_netorder *order, uint32_t nranks)
{
    uint32_t *by_rank = calloc (nranks > 0 ? nranks : 1, sizeof (*by_rank)), r;

    for (r = 0; by_rank != NULL && r < nranks; r++)
        if (order == NULL || order->nranks != nranks)
            by_rank[r] = r;
        else
            by_rank[order->new_rank[r]] = r;
    return by_rank;
}

/* One row of the table: Slurm's rank r as RANK rank. */
static void report_rank (const struct dist_step_layout *l, const struct dist_netorder *order,
                         bool groups, uint32_t rank, uint32_t r, uint32_t local_rank)
{
    uint32_t node = l->node_of_rank[r], node_rank = order != NULL ? order->new_node[node] : node;

    if (groups)
        slurm_spank_log ("%s:   %-5lu %-11lu %-10lu %-6lu %s", PLUGIN_NAME, (unsigned long) rank,
                         (unsigned long) local_rank, (unsigned long) node_rank,
                         (unsigned long) order->group_of_node[node], l->names[node]);
    else
        slurm_spank_log ("%s:   %-5lu %-11lu %-10lu %s", PLUGIN_NAME, (unsigned long) rank,
                         (unsigned long) local_rank, (unsigned long) node_rank, l->names[node]);
}

/* verbose: the rank table in RANK order, when srun's distribution can be recomputed; with
 * the network's groups, each rank's group. */
static void report_ranks (const struct dist_step_layout *layout, const struct dist_step *st,
                          const struct dist_netorder *order, bool groups)
{
    uint32_t *seen, *local, *by_rank, rank, shown;

    seen = calloc (st->node_count, sizeof (*seen));
    local = calloc (st->world_size > 0 ? st->world_size : 1, sizeof (*local));
    by_rank = slurm_rank_of (order, st->world_size);
    if (seen != NULL && local != NULL && by_rank != NULL) {
        /* (LOCAL_RANK counts in Slurm's order, which no rank order changes on a node) */
        for (rank = 0; rank < st->world_size; rank++)
            local[rank] = seen[layout->node_of_rank[rank]]++;
        slurm_spank_log ("%s:   RANK  LOCAL_RANK  NODE_RANK  %sNODE", PLUGIN_NAME,
                         groups ? "GROUP  " : "");
        shown = st->world_size < REPORT_ROWS ? st->world_size : REPORT_ROWS;
        for (rank = 0; rank < shown; rank++)
            report_rank (layout, order, groups, rank, by_rank[rank], local[by_rank[rank]]);
        if (shown < st->world_size)
            slurm_spank_log ("%s:   ... and %lu more ranks", PLUGIN_NAME,
                             (unsigned long) (st->world_size - shown));
    }
    free (seen);
    free (local);
    free (by_rank);
}

/* verbose: what the step got, said once, by rank 0 (whose stderr is the
 * user's). */
void dist_train_report_step (spank_t sp, const struct dist_config *cfg, const struct dist_step *st,
                             const struct dist_step_layout *layout,
                             const struct dist_netorder *order, bool groups)
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
    if (groups)
        slurm_spank_log ("%s: %lu network groups (Slurm's leaf switches or blocks); RANK in "
                         "%s order",
                         PLUGIN_NAME, (unsigned long) order->ngroups,
                         cfg->rank_order_topology ? "the topology's" : "Slurm's");
    if (layout != NULL)
        report_ranks (layout, st, order, groups);
}
