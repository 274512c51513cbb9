/* rankorder.c - the SPANK plugin's rank order (DIST_TRAIN_RANK_ORDER=topology, where RANK is
 * no longer SLURM_PROCID, the rank PMIx and PMI-2 give): taken at init from one exchange of
 * every task's RANK and GROUP_RANK, and the one place where the collectives turn the
 * program's ranks into the transport's, in the roots they read and in the order of what they
 * read. Without the setting the transport's order stands and nothing is exchanged. */
#include <stdlib.h>
#include <string.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

/* This task's claim: RANK of size ranks, GROUP_RANK of node_count nodes, and its node as the
 * transport numbers it. */
static void own_claim (struct shim_claim *claim)
{
    claim->rank = shim_claim_parse (getenv ("RANK"), shim_world.size);
    claim->node_rank = shim_claim_parse (getenv ("GROUP_RANK"), shim_world.node_count);
    claim->node = shim_world.node_rank;
}

/* Every task's claim into claims (by transport rank): collective seq over the transport. */
static int exchange_claims (uint64_t seq, const struct shim_claim *own, struct shim_claim *claims)
{
    const struct shim_transport *t = shim_world.transport;
    uint8_t bytes[SHIM_CLAIM_BYTES];
    struct shim_piece *pieces;
    int rv;

    if (t == NULL) {
        claims[0] = *own;
        return DTSHIM_OK;
    }
    if ((pieces = calloc ((size_t) shim_world.size, sizeof (*pieces))) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    shim_claim_encode (own, bytes);
    /* The step's first exchange, outside any collective: its own deadline. */
    shim_begin_deadline ();
    rv = t->exchange (SHIM_OP_RANK_ORDER, bytes, sizeof (bytes), true, seq);
    if (rv == DTSHIM_OK)
        rv = t->read (SHIM_OP_RANK_ORDER, seq, 0, shim_world.size, pieces);
    for (int r = 0; rv == DTSHIM_OK && r < shim_world.size; r++)
        if (shim_claim_decode (pieces[r].bytes, pieces[r].size, &claims[r]) != 0)
            rv = shim_fail (DTSHIM_ERR_PMIX, "rank order: task %d sent %zu bytes, not its RANK", r,
                            pieces[r].size);
    shim_pieces_free (pieces, shim_world.size);
    free (pieces);
    return rv;
}

/* The facts in the plugin's order, from the checked maps. */
static int apply (const struct shim_claim *claims)
{
    const struct shim_rank_map *map = &shim_world.order;
    int chief = map->transport_of[0];

    shim_world.rank = map->rank_of[shim_world.transport_rank];
    shim_world.node_rank = map->node_rank_of[shim_world.node_rank];
    if (shim_world.transport == NULL)
        return DTSHIM_OK;
    return shim_world.transport->name_chief (chief, claims[chief].node);
}

static int take_order (uint64_t seq)
{
    struct shim_claim own, *claims;
    char why[256];
    int rv;

    own_claim (&own);
    if ((claims = calloc ((size_t) shim_world.size, sizeof (*claims))) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    if ((rv = exchange_claims (seq, &own, claims)) != DTSHIM_OK)
        goto out;
    if (shim_rank_map_new (&shim_world.order, shim_world.size, shim_world.node_count) != 0) {
        rv = DTSHIM_ERR_NO_MEMORY;
        goto out;
    }
    /* Every task holds the same claims: every task fails, with the same text, or none. */
    if (shim_rank_map_build (&shim_world.order, claims, why, sizeof (why)) != 0)
        rv = shim_fail (DTSHIM_ERR_RANK_ORDER, "%s", why);
    else
        rv = apply (claims);
out:
    if (rv != DTSHIM_OK)
        shim_rank_order_clear ();
    free (claims);
    return rv;
}

int shim_rank_order_init (void)
{
    const char *order = getenv ("DIST_TRAIN_RANK_ORDER");

    shim_world.rank = shim_world.transport_rank;
    if (order == NULL || *order == '\0')
        return DTSHIM_OK;
    if (strcmp (order, "topology") != 0)
        return shim_fail (DTSHIM_ERR_INVALID,
                          "DIST_TRAIN_RANK_ORDER=%.32s: want topology (or unset)", order);
    return take_order (shim_world.seq++);
}

void shim_rank_order_clear (void)
{
    shim_rank_map_free (&shim_world.order);
}

int shim_transport_rank (int rank)
{
    if (shim_world.order.size == 0 || rank < 0 || rank >= shim_world.order.size)
        return rank;
    return shim_world.order.transport_of[rank];
}

int shim_rank_of (int transport_rank)
{
    if (shim_world.order.size == 0 || transport_rank < 0 || transport_rank >= shim_world.order.size)
        return transport_rank;
    return shim_world.order.rank_of[transport_rank];
}

int shim_read_root (enum shim_op op, uint64_t seq, int root, struct shim_piece *out)
{
    return shim_world.transport->read (op, seq, shim_transport_rank (root), 1, out);
}

int shim_read_all (enum shim_op op, uint64_t seq, struct shim_piece *out)
{
    const struct shim_transport *t = shim_world.transport;
    struct shim_piece *got;
    int rv, n = shim_world.size;

    if (shim_world.order.size == 0)
        return t->read (op, seq, 0, n, out);
    if ((got = calloc ((size_t) n, sizeof (*got))) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    if ((rv = t->read (op, seq, 0, n, got)) == DTSHIM_OK)
        shim_rank_map_permute (shim_world.order.transport_of, n, got, out, sizeof (*got));
    free (got);
    return rv;
}
