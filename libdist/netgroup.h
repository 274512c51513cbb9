/* netgroup.h - where the step's nodes sit in the network, and a rank order that follows it.
 *
 * Slurm's topology/tree puts nodes under leaf switches, topology/block into base blocks.
 * A step's nodes fall into such groups; traffic inside one stays on its switch (or block),
 * traffic between two crosses the level above.  NCCL's rings between nodes follow rank
 * order, so ranks that keep each group together cross the fewest links.
 *
 * srun reads the topology once per step (the text `scontrol show topology` prints), gives
 * each of the step's nodes its group and hands the groups to the nodes as text; the nodes
 * compute the rest from it and the step's layout.
 */
#ifndef DIST_NETGROUP_H
#define DIST_NETGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handover.h"

#define DIST_NETGROUP_VAR "SLURM_DIST_TRAIN_TOPOLOGY"

/* Give each of the step's nodes (names[nnodes], in the step's order) its group: the index,
 * in the topology's order, of its leaf switch ("SwitchName=S Level=0 ... Nodes=LIST") or
 * base block ("BlockName=B ... Nodes=LIST") among those that hold a node of the step.
 * Nodes in none share one more group, the last.  Returns the number of groups (0 when the
 * text has no leaf switch or block: group_of_node is then all 0), or -1 with the reason
 * in err when a record's node list is not one Slurm writes. */
int dist_netgroup_assign (const char *text, char *const *names, uint32_t nnodes,
                          uint32_t *group_of_node, char *err, size_t errsz);

/* The groups as srun hands them over: "step=JOB.STEP groups=G nodes=N of=RUNS", RUNS the
 * group of each node (libdist/handover.h's runs).  Malloc'ed; NULL when a group is not below
 * ngroups or the text is longer than DIST_LAYOUT_TEXT_MAX. */
char *dist_netgroup_text (uint32_t job_id, uint32_t step_id, uint32_t ngroups,
                          const uint32_t *group_of_node, uint32_t nnodes);

/* Read such text for step job_id.step_id of nnodes nodes into group_of_node[nnodes] and
 * *ngroups (1 to nnodes); -1 for another step, another node count or anything malformed. */
int dist_netgroup_text_parse (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                              uint32_t *group_of_node, uint32_t *ngroups);

/* The same, kept as its runs (free with dist_runs_free). */
int dist_netgroup_text_runs (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                             struct dist_runs *groups, uint32_t *ngroups);

/* What the groups mean for a step's ranks. */
struct dist_netorder {
    uint32_t nnodes, nranks, ngroups;
    uint32_t *new_rank; /* RANK of each Slurm rank (SLURM_PROCID) */
    uint32_t *new_node; /* GROUP_RANK of each node, by its Slurm index (SLURM_NODEID): the
                           nodes in the order of the first RANK each holds */
    uint32_t *group_of_node; /* each node's group, by its Slurm index */
    uint32_t *group_rank; /* each Slurm rank's index among its group's ranks, in RANK order */
    uint32_t *group_size; /* ranks in each group */
    uint32_t slurm_rank0; /* the Slurm rank that is RANK 0 */
};

/* Work out the order for a layout (node_of_rank[nranks], nodes below nnodes) and the groups
 * of its nodes: Slurm's own (by_group 0: RANK = SLURM_PROCID), or ranks sorted by group,
 * each group's keeping Slurm's order (by_group 1: rank_order=topology).  Either way the
 * nodes follow their first rank, so the node of RANK 0 is GROUP_RANK 0 (under -m
 * arbitrary too, where SLURM_NODEID does not follow the ranks).  0, or -1
 * when out of memory or a node or group is out of range; free with dist_netorder_free. */
int dist_netorder_make (struct dist_netorder *o, int by_group, uint32_t ngroups,
                        const uint32_t *group_of_node, uint32_t nnodes,
                        const uint32_t *node_of_rank, uint32_t nranks);
void dist_netorder_free (struct dist_netorder *o);

/* How many hops of a ring through n ranks in order (group_in_order[i] the group of the
 * i-th) go from one group to another: the links between switches a ring crosses. */
/* What one node needs of dist_netorder_make's order, worked out from the runs of the
 * layout (the node of every Slurm rank) and of the groups (the group of every node; NULL:
 * one group) in time that grows with the runs, not with the ranks or nodes. */
struct dist_local_order {
    uint32_t node_rank; /* GROUP_RANK of this node */
    uint32_t slurm_rank0; /* the Slurm rank that is RANK 0 */
    uint32_t ngroups, group, group_size; /* the groups; this node's, and its ranks */
    uint32_t nlocal;
    uint32_t *rank; /* RANK of each of this node's Slurm ranks, as given */
    uint32_t *group_rank; /* their index among the group's ranks, in RANK order */
};

/* For node `me` and its Slurm ranks mine[nlocal]: 0, or -1 when out of memory, when a run
 * is out of range, or when the nodes do not first appear in their own order (-m arbitrary
 * may deal them out in any), where only the whole order tells (dist_netorder_make). */
int dist_local_order_make (struct dist_local_order *o, int by_group, const struct dist_runs *layout,
                           const struct dist_runs *groups, uint32_t ngroups, uint32_t me,
                           const uint32_t *mine, uint32_t nlocal);
void dist_local_order_free (struct dist_local_order *o);

/* Under rank_order=topology, the node of every RANK as dist_layout_text writes it (what
 * RANK 0's task gets), from the same runs: the layout's ranks of each group in turn.  Its
 * cost grows with the runs and the groups' spans, not the ranks.  Malloc'ed; NULL when it
 * does not fit in DIST_LAYOUT_TEXT_MAX. */
char *dist_local_order_layout_text (uint32_t job_id, uint32_t step_id,
                                    const struct dist_runs *layout, const struct dist_runs *groups,
                                    uint32_t ngroups);

uint32_t dist_netgroup_ring_crossings (const uint32_t *group_in_order, uint32_t n);

#endif /* DIST_NETGROUP_H */
