/* rankmap.h - the step's rank order when the SPANK plugin chose its own
 * (DIST_TRAIN_RANK_ORDER=topology): what each task claims (RANK, GROUP_RANK), the check that
 * the claims order the step's tasks, and the maps between the plugin's ranks and the
 * transport's (PMIx's and PMI-2's rank, which is SLURM_PROCID). Pure: rankorder.c exchanges
 * the claims and keeps the maps. */
#ifndef DTSHIM_RANKMAP_H
#define DTSHIM_RANKMAP_H

#include <stddef.h>
#include <stdint.h>

/* A claim that is not a number: the variable is unset, or its text is not a number in range. */
#define SHIM_CLAIM_UNSET (-1)
#define SHIM_CLAIM_BAD (-2)

/* What one task says of itself in the exchange at init. */
struct shim_claim {
    int32_t rank; /* RANK, or SHIM_CLAIM_UNSET / SHIM_CLAIM_BAD */
    int32_t node_rank; /* GROUP_RANK, or SHIM_CLAIM_UNSET / SHIM_CLAIM_BAD */
    int32_t node; /* the transport's id of the task's node (PMIX_NODEID, PMI-2's mapping) */
};

/* A claim as it travels: three little-endian 32-bit integers. */
#define SHIM_CLAIM_BYTES 12
void shim_claim_encode (const struct shim_claim *claim, uint8_t *out);
/* -1 when len is not SHIM_CLAIM_BYTES. */
int shim_claim_decode (const uint8_t *bytes, size_t len, struct shim_claim *claim);

/* The value of a variable that names one of limit ranks: decimal digits only (no sign, no
 * space), below limit. SHIM_CLAIM_UNSET for NULL, SHIM_CLAIM_BAD for anything else. */
int shim_claim_parse (const char *text, int limit);

/* The step's order from every task's claim. Indexes: transport ranks 0..size-1, the
 * plugin's ranks 0..size-1, the transport's node ids 0..node_count-1. */
struct shim_rank_map {
    int size, node_count;
    int *rank_of; /* transport rank -> the plugin's rank */
    int *transport_of; /* the plugin's rank -> transport rank */
    int *node_rank_of; /* transport node id -> the node's rank in the plugin's order */
    int *node_of_rank; /* the plugin's node rank -> transport node id (a check's own) */
};

/* Allocate the maps of a step / free them (map may be zeroed or half made). -1 when out of
 * memory or the sizes are not positive. */
int shim_rank_map_new (struct shim_rank_map *map, int size, int node_count);
void shim_rank_map_free (struct shim_rank_map *map);

/* Fill map from claims (indexed by transport rank): each RANK exactly once, and the node
 * ranks from GROUP_RANK when every task has one (the same on a node's tasks, another on
 * each node), else in the order in which the plugin's ranks meet the nodes (the node of
 * rank 0 is node 0). On failure, -1 and what is wrong in why (len bytes), naming tasks by
 * SLURM_PROCID: the same text on every task, which all hold the same claims. */
int shim_rank_map_build (struct shim_rank_map *map, const struct shim_claim *claims, char *why,
                         size_t len);

/* out[r] = in[transport_of[r]] for the n elements of elem bytes each: from the transport's
 * order into the plugin's. */
void shim_rank_map_permute (const int *transport_of, int n, const void *in, void *out, size_t elem);

#endif
