/* bind.h - which GPUs, CPUs, NUMA nodes and NIC each local rank gets.
 *
 * Pure planning on a loaded topology: no binding, no environment.  The
 * rules:
 * - The step's GPUs are taken in locality order (NUMA locality, then bus
 *   id).  tasks <= GPUs: each rank gets an even, contiguous share; tasks >
 *   GPUs: neighbouring ranks share a GPU.
 * - Each rank's CPUs come from the step's CPUs near its GPUs: their NUMA
 *   node (for GPUs on several NUMA nodes, the smallest place that holds them
 *   all) when it has a CPU for every rank placed there, else its package,
 *   else what the other ranks can spare.  Narrow places are served first.
 *   Ranks that share a place divide it without overlap.
 * - With more ranks than CPUs, each rank gets one PU and the PUs are dealt
 *   out evenly, in locality order: never two ranks on one PU while another
 *   of the step's PUs has none.
 * - Without GPUs, ranks are spread over the NUMA nodes in rank order, in
 *   proportion to the step's CPUs on each; with fewer ranks than NUMA
 *   nodes, the step's CPUs are divided in order among them.
 * - The NIC is the RDMA device nearest to the rank's GPU (fewest hops in the
 *   topology tree), ties going to the least used.
 */
#ifndef DIST_BIND_H
#define DIST_BIND_H

#include <stdbool.h>
#include <stddef.h>

#include <hwloc.h>

#include "topo.h"

#define DIST_LOCAL_TASKS_MAX 4096

struct dist_bind_rank {
    int gpu_first; /* own GPUs: plan.order[gpu_first .. +gpu_count) */
    int gpu_count;
    hwloc_bitmap_t cpuset; /* PUs, OS indices */
    hwloc_bitmap_t nodeset; /* NUMA nodes of those PUs, OS indices */
    int nic; /* index in the topology's NICs, -1 none */
};

struct dist_bind_plan {
    int ntasks;
    int ngpus; /* the step's GPUs on this node */
    int order[DIST_GPUS_MAX]; /* step GPU positions, in locality order */
    struct dist_bind_rank *rank; /* by local rank */
    bool cpus_shared; /* more ranks than CPUs somewhere */
};

/* Plan ntasks local ranks.  step_gpu[i] is the topology's index (PCI order)
 * of the i-th GPU Slurm gave the step (the i-th entry of its list).  allowed
 * is the step's CPUs; it must hold at least one PU of the topology.
 * 0 on success; -1 with a message in err. */
int dist_bind_plan (const struct dist_topo *t, hwloc_const_cpuset_t allowed, const int *step_gpu,
                    int nstep_gpus, int ntasks, struct dist_bind_plan *plan, char *err,
                    size_t errsz);

void dist_bind_plan_free (struct dist_bind_plan *plan);

/* The step GPU positions in the order CUDA_VISIBLE_DEVICES lists them for a
 * local rank: its own GPUs from position local_rank % ngpus on (so that
 * cudaSetDevice(LOCAL_RANK) lands on its first GPU), the others in locality
 * order around them.  With own_only, just its own GPUs.  Returns how many
 * positions were written to out[]. */
int dist_bind_visible (const struct dist_bind_plan *plan, int local_rank, bool own_only,
                       int out[DIST_GPUS_MAX]);

/* Parse Slurm's GPU index list ("0,1,2" or "0-3,6", order kept) into
 * out[]; returns the count, or -1 when it does not parse or has more than
 * max entries. */
int dist_parse_index_list (const char *list, int *out, int max);

/* The step's GPUs from Slurm's environment: global indices (PCI order) from
 * SLURM_STEP_GPUS (global, NULL if unset; else CUDA_VISIBLE_DEVICES holds
 * them), and the names CUDA will see, position by position, from
 * CUDA_VISIBLE_DEVICES (visible: indices, UUIDs, MIG ids).  Returns the
 * count (0: no GPUs), or -1 with a message in err when they cannot be
 * matched (e.g. UUIDs without SLURM_STEP_GPUS). */
int dist_step_gpus (const char *visible, const char *global, int *index, char (*tokens)[64],
                    char *err, size_t errsz);

/* Split a comma list (CUDA_VISIBLE_DEVICES) into at most max tokens of
 * fewer than tokmax characters each; returns the count, -1 if it does not
 * fit. */
int dist_split_list (const char *list, char (*tokens)[64], int max);

#endif /* DIST_BIND_H */
