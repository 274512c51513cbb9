/* rankmap.c - the check that the tasks' RANK and GROUP_RANK order the step, and the maps
 * between the plugin's ranks and the transport's (see rankmap.h). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/rankmap.h"
#include "shim/wire.h"

void shim_claim_encode (const struct shim_claim *claim, uint8_t *out)
{
    shim_put_le (out, (uint32_t) claim->rank, 4);
    shim_put_le (out + 4, (uint32_t) claim->node_rank, 4);
    shim_put_le (out + 8, (uint32_t) claim->node, 4);
}

static int32_t get_i32 (const uint8_t *in)
{
    return (int32_t) (uint32_t) shim_get_le (in, 4);
}

int shim_claim_decode (const uint8_t *bytes, size_t len, struct shim_claim *claim)
{
    if (bytes == NULL || len != SHIM_CLAIM_BYTES)
        return -1;
    claim->rank = get_i32 (bytes);
    claim->node_rank = get_i32 (bytes + 4);
    claim->node = get_i32 (bytes + 8);
    return 0;
}

/* Ten digits hold every int; more is never a rank. */
#define CLAIM_DIGITS 10

int shim_claim_parse (const char *text, int limit)
{
    long long v = 0;
    size_t n;

    if (text == NULL)
        return SHIM_CLAIM_UNSET;
    n = strnlen (text, CLAIM_DIGITS + 1);
    if (n == 0 || n > CLAIM_DIGITS)
        return SHIM_CLAIM_BAD;
    for (size_t i = 0; i < n; i++) {
        if (text[i] < '0' || text[i] > '9')
            return SHIM_CLAIM_BAD;
        v = v * 10 + (text[i] - '0');
    }
    return v < limit ? (int) v : SHIM_CLAIM_BAD;
}

int shim_rank_map_new (struct shim_rank_map *map, int size, int node_count)
{
    memset (map, 0, sizeof (*map));
    if (size < 1 || node_count < 1)
        return -1;
    map->size = size;
    map->node_count = node_count;
    map->rank_of = calloc ((size_t) size, sizeof (int));
    map->transport_of = calloc ((size_t) size, sizeof (int));
    map->node_rank_of = calloc ((size_t) node_count, sizeof (int));
    map->node_of_rank = calloc ((size_t) node_count, sizeof (int));
    if (map->rank_of == NULL || map->transport_of == NULL || map->node_rank_of == NULL
        || map->node_of_rank == NULL) {
        shim_rank_map_free (map);
        return -1;
    }
    return 0;
}

void shim_rank_map_free (struct shim_rank_map *map)
{
    free (map->rank_of);
    free (map->transport_of);
    free (map->node_rank_of);
    free (map->node_of_rank);
    memset (map, 0, sizeof (*map));
}

/* What is wrong, into why (len bytes); returns -1. */
static int refuse (char *why, size_t len, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

static int refuse (char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (why, len, fmt, ap);
    va_end (ap);
    return -1;
}

/* Task t's value of name (RANK, GROUP_RANK) is no number below limit. */
static int not_a_number (char *why, size_t len, int t, const char *name, int limit)
{
    return refuse (why, len, "task %d (SLURM_PROCID) has a %s that is not a number in 0..%d", t,
                   name, limit - 1);
}

/* Each task's RANK in range, and no RANK twice: then, size claims in 0..size-1, every rank
 * is someone's. */
static int map_ranks (struct shim_rank_map *map, const struct shim_claim *claims, char *why,
                      size_t len)
{
    for (int r = 0; r < map->size; r++)
        map->transport_of[r] = -1;
    for (int t = 0; t < map->size; t++) {
        int r = claims[t].rank;
        if (r == SHIM_CLAIM_UNSET)
            return refuse (why, len, "task %d (SLURM_PROCID) has no RANK", t);
        if (r < 0 || r >= map->size)
            return not_a_number (why, len, t, "RANK", map->size);
        if (map->transport_of[r] >= 0)
            return refuse (why, len, "RANK=%d is claimed by tasks %d and %d (SLURM_PROCID)", r,
                           map->transport_of[r], t);
        map->transport_of[r] = t;
        map->rank_of[t] = r;
    }
    return 0;
}

/* The transport's node ids are in range: they index the node maps. */
static int check_nodes (const struct shim_rank_map *map, const struct shim_claim *claims, char *why,
                        size_t len)
{
    for (int t = 0; t < map->size; t++)
        if (claims[t].node < 0 || claims[t].node >= map->node_count)
            return refuse (why, len, "task %d (SLURM_PROCID) is on node %d of %d", t,
                           (int) claims[t].node, map->node_count);
    return 0;
}

/* No GROUP_RANK anywhere: the nodes in the order the plugin's ranks meet them. */
static void derive_node_ranks (struct shim_rank_map *map, const struct shim_claim *claims)
{
    int next = 0;

    for (int n = 0; n < map->node_count; n++)
        map->node_rank_of[n] = -1;
    for (int r = 0; r < map->size; r++) {
        int node = claims[map->transport_of[r]].node;
        if (map->node_rank_of[node] < 0)
            map->node_rank_of[node] = next++;
    }
}

/* One task's GROUP_RANK: set, in range, the same as its node's other tasks', and no other
 * node's. */
static int take_node_rank (struct shim_rank_map *map, const struct shim_claim *claims, int t,
                           char *why, size_t len)
{
    int g = claims[t].node_rank, node = claims[t].node;

    if (g == SHIM_CLAIM_UNSET)
        return refuse (why, len, "GROUP_RANK is set on some tasks, not on task %d (SLURM_PROCID)",
                       t);
    if (g < 0 || g >= map->node_count)
        return not_a_number (why, len, t, "GROUP_RANK", map->node_count);
    if (map->node_rank_of[node] >= 0 && map->node_rank_of[node] != g)
        return refuse (why, len,
                       "tasks of one node say GROUP_RANK=%d and %d (task %d, SLURM_PROCID)",
                       map->node_rank_of[node], g, t);
    if (map->node_of_rank[g] >= 0 && map->node_of_rank[g] != node)
        return refuse (why, len,
                       "GROUP_RANK=%d is claimed by two nodes (task %d, SLURM_PROCID, is on the "
                       "second)",
                       g, t);
    map->node_rank_of[node] = g;
    map->node_of_rank[g] = node;
    return 0;
}

/* Every task's GROUP_RANK, or none at all. */
static int map_node_ranks (struct shim_rank_map *map, const struct shim_claim *claims, char *why,
                           size_t len)
{
    bool any = false;

    for (int t = 0; t < map->size; t++)
        any = any || claims[t].node_rank != SHIM_CLAIM_UNSET;
    if (!any) {
        derive_node_ranks (map, claims);
        return 0;
    }
    for (int n = 0; n < map->node_count; n++)
        map->node_rank_of[n] = map->node_of_rank[n] = -1;
    for (int t = 0; t < map->size; t++)
        if (take_node_rank (map, claims, t, why, len) != 0)
            return -1;
    return 0;
}

int shim_rank_map_build (struct shim_rank_map *map, const struct shim_claim *claims, char *why,
                         size_t len)
{
    if (map_ranks (map, claims, why, len) != 0 || check_nodes (map, claims, why, len) != 0)
        return -1;
    return map_node_ranks (map, claims, why, len);
}

void shim_rank_map_permute (const int *transport_of, int n, const void *in, void *out, size_t elem)
{
    for (int r = 0; r < n; r++)
        memcpy ((char *) out + (size_t) r * elem,
                (const char *) in + (size_t) transport_of[r] * elem, elem);
}
