/* layout.h - which node runs each rank, from Slurm's tasks-per-node string
 * and distribution (block, cyclic, plane), as srun lays a step out. */
#ifndef DIST_LAYOUT_H
#define DIST_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

enum dist_distribution {
    DIST_DIST_BLOCK,
    DIST_DIST_CYCLIC,
    DIST_DIST_PLANE,
    DIST_DIST_ARBITRARY,
    DIST_DIST_UNKNOWN,
};

/* SLURM_DISTRIBUTION's node part ("cyclic:block" -> cyclic); NULL or ""
 * is srun's default, block. */
enum dist_distribution dist_distribution_parse (const char *text);

/* Expand SLURM_STEP_TASKS_PER_NODE ("2(x3),1") into counts[]; returns the
 * number of nodes, or -1 on a malformed string or more than max nodes. */
int dist_tasks_per_node_parse (const char *text, uint32_t *counts, size_t max);

/* Fill node_of_rank[ntasks] for block, cyclic and plane (plane_size ranks
 * at a time); cyclic and plane skip nodes that are full, as Slurm does.
 * Returns -1 when the counts do not add up to ntasks or the distribution
 * cannot be computed (arbitrary, unknown). */
int dist_layout_assign (enum dist_distribution dist, uint32_t plane_size, const uint32_t *counts,
                        size_t nnodes, uint32_t *node_of_rank, size_t ntasks);

/* A step's layout, as srun reads it from slurmctld and as slurmstepd reads or
 * recomputes it: its nodes' names and the node of every Slurm rank. */
struct dist_step_layout {
    uint32_t nnodes;
    uint32_t nranks;
    char **names; /* node names, by node index (malloc'ed, each) */
    uint32_t *node_of_rank; /* node index, by Slurm rank */
};

/* Free what a layout holds and zero it (one zeroed or freed before is fine). */
void dist_step_layout_free (struct dist_step_layout *l);

#endif /* DIST_LAYOUT_H */
