/* collective.c - barrier, broadcast, allgather, gather and the unique-id exchange, on byte
 * buffers, over the PMIx transport of exchange.c. */
#include <stdlib.h>
#include <string.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

static int check_root (int root)
{
    if (root < 0 || root >= shim_world.size)
        return shim_fail (DTSHIM_ERR_INVALID, "root %d outside 0..%d", root, shim_world.size - 1);
    return DTSHIM_OK;
}

static int size_mismatch (uint64_t seq, int rank, size_t got, size_t want)
{
    return shim_fail (DTSHIM_ERR_SIZE,
                      "collective #%llu: rank %d sent %zu bytes, rank %d "
                      "expects %zu",
                      (unsigned long long) seq, rank, got, shim_world.rank, want);
}

/* A copy of this rank's own size bytes at send, as if read from the transport. */
static int own_piece (const void *send, size_t size, struct shim_piece *piece)
{
    if ((piece->bytes = malloc (size > 0 ? size : 1)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    if (size > 0)
        memcpy (piece->bytes, send, size);
    piece->size = size;
    return DTSHIM_OK;
}

int dtshim_barrier (void)
{
    uint64_t seq;
    int rv;

    if ((rv = shim_begin (&seq)) != DTSHIM_OK)
        return rv;
    rv = shim_world.transport != NULL ? shim_world.transport->fence (seq) : DTSHIM_OK;
    shim_end ();
    return rv;
}

/* Root's bytes into buf (fixed size) or into a new buffer (*out, variable size). */
static int broadcast (enum shim_op op, void *buf, size_t size, int root, struct shim_piece *out)
{
    struct shim_piece piece = {NULL, 0};
    uint64_t seq;
    int rv;

    if ((rv = shim_begin (&seq)) != DTSHIM_OK)
        return rv;
    if ((rv = check_root (root)) != DTSHIM_OK)
        goto out;
    if (shim_world.transport != NULL) {
        rv = shim_world.transport->exchange (op, buf, size, shim_world.rank == root, seq);
        if (rv == DTSHIM_OK && shim_world.rank != root)
            rv = shim_read_root (op, seq, root, &piece);
        if (rv != DTSHIM_OK)
            goto out;
    }
    if (shim_world.rank == root) {
        /* The root's own copy, for the variable-size form. */
        if (out != NULL && (rv = own_piece (buf, size, &piece)) != DTSHIM_OK)
            goto out;
        piece.size = size;
    } else if (out == NULL) {
        if (piece.size != size)
            rv = size_mismatch (seq, root, piece.size, size);
        else if (size > 0)
            memcpy (buf, piece.bytes, size);
    }
    if (out != NULL)
        *out = piece;
    else
        shim_pieces_free (&piece, 1);
out:
    shim_end ();
    return rv;
}

int dtshim_broadcast (void *buf, size_t size, int root)
{
    if (buf == NULL && size > 0)
        return DTSHIM_ERR_INVALID;
    return broadcast (SHIM_OP_BROADCAST, buf, size, root, NULL);
}

int dtshim_broadcastv (const void *send, size_t size, void **recv, size_t *recv_size, int root)
{
    struct shim_piece piece = {NULL, 0};
    int rv;

    if (recv == NULL || recv_size == NULL)
        return DTSHIM_ERR_INVALID;
    *recv = NULL;
    if (dtshim_rank () == root && send == NULL && size > 0)
        return DTSHIM_ERR_INVALID;
    rv = broadcast (SHIM_OP_BROADCASTV, (void *) send, dtshim_rank () == root ? size : 0, root,
                    &piece);
    if (rv == DTSHIM_OK) {
        *recv = piece.bytes;
        *recv_size = piece.size;
    }
    return rv;
}

/* Every rank's contribution to collective seq into got (shim_world.size entries). */
static int collect (enum shim_op op, uint64_t seq, const void *send, size_t size,
                    struct shim_piece *got)
{
    if (shim_world.transport == NULL)
        return own_piece (send, size, &got[0]);
    return shim_read_all (op, seq, got);
}

/* The n pieces of collective seq, each of size bytes, at fixed offsets of recv. */
static int place_fixed (uint64_t seq, const struct shim_piece *got, int n, size_t size, void *recv)
{
    for (int r = 0; r < n; r++) {
        if (got[r].size != size)
            return size_mismatch (seq, r, got[r].size, size);
        if (size > 0)
            memcpy ((uint8_t *) recv + (size_t) r * size, got[r].bytes, size);
    }
    return DTSHIM_OK;
}

/* Every rank's contribution, to every rank (root < 0) or to root: into recv at fixed
 * offsets (fixed size, recv != NULL), or into *pieces (variable size). */
static int gather (enum shim_op op, const void *send, size_t size, int root, void *recv,
                   struct shim_piece **pieces)
{
    struct shim_piece *got = NULL;
    uint64_t seq;
    int rv, n = shim_world.size;

    if ((rv = shim_begin (&seq)) != DTSHIM_OK)
        return rv;
    if (root >= 0 && (rv = check_root (root)) != DTSHIM_OK)
        goto out;
    if (shim_world.transport != NULL
        && (rv = shim_world.transport->exchange (op, send, size, true, seq)) != DTSHIM_OK)
        goto out;
    if (root >= 0 && root != shim_world.rank)
        goto out;
    if ((got = calloc ((size_t) n, sizeof (*got))) == NULL) {
        rv = DTSHIM_ERR_NO_MEMORY;
        goto out;
    }
    rv = collect (op, seq, send, size, got);
    if (rv == DTSHIM_OK && recv != NULL)
        rv = place_fixed (seq, got, n, size, recv);
out:
    if (rv == DTSHIM_OK && pieces != NULL) {
        *pieces = got;
    } else if (got != NULL) {
        shim_pieces_free (got, n);
        free (got);
    }
    shim_end ();
    return rv;
}

int dtshim_allgather (const void *send, size_t size, void *recv)
{
    if ((send == NULL || recv == NULL) && size > 0)
        return DTSHIM_ERR_INVALID;
    return gather (SHIM_OP_ALLGATHER, send, size, -1, recv, NULL);
}

int dtshim_gather (const void *send, size_t size, void *recv, int root)
{
    if (root < 0 || (send == NULL && size > 0)
        || (recv == NULL && size > 0 && dtshim_rank () == root))
        return DTSHIM_ERR_INVALID;
    return gather (SHIM_OP_GATHER, send, size, root, dtshim_rank () == root ? recv : NULL, NULL);
}

/* The pieces in rank order in one buffer, their sizes in sizes. */
static int concatenate (struct shim_piece *pieces, int n, void **recv, size_t *sizes)
{
    size_t total = 0, off = 0;
    uint8_t *out;

    for (int r = 0; r < n; r++)
        total += pieces[r].size;
    if ((out = malloc (total > 0 ? total : 1)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    for (int r = 0; r < n; r++) {
        if (pieces[r].size > 0)
            memcpy (out + off, pieces[r].bytes, pieces[r].size);
        off += pieces[r].size;
        sizes[r] = pieces[r].size;
    }
    *recv = out;
    return DTSHIM_OK;
}

static int gather_var (enum shim_op op, const void *send, size_t size, void **recv, size_t *sizes,
                       int root)
{
    struct shim_piece *pieces = NULL;
    bool receives = root < 0 || root == dtshim_rank ();
    int rv;

    if ((send == NULL && size > 0) || recv == NULL || (receives && sizes == NULL))
        return DTSHIM_ERR_INVALID;
    *recv = NULL;
    rv = gather (op, send, size, root, NULL, receives ? &pieces : NULL);
    if (rv != DTSHIM_OK || pieces == NULL)
        return rv;
    rv = concatenate (pieces, shim_world.size, recv, sizes);
    shim_pieces_free (pieces, shim_world.size);
    free (pieces);
    return rv;
}

int dtshim_allgatherv (const void *send, size_t size, void **recv, size_t *sizes)
{
    return gather_var (SHIM_OP_ALLGATHERV, send, size, recv, sizes, -1);
}

int dtshim_gatherv (const void *send, size_t size, void **recv, size_t *sizes, int root)
{
    if (root < 0)
        return DTSHIM_ERR_INVALID;
    return gather_var (SHIM_OP_GATHERV, send, size, recv, sizes, root);
}

void dtshim_free (void *p)
{
    free (p);
}

int dtshim_unique_id_root (int i, int count)
{
    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if (count < 1 || count > shim_world.size || i < 0 || i >= count)
        return DTSHIM_ERR_INVALID;
    return (int) ((long) i * shim_world.size / count);
}

/* The index of the id this rank creates as one of count roots, or -1. */
static int own_id_index (int count)
{
    int mine = -1;

    for (int i = 0; i < count; i++)
        if (dtshim_unique_id_root (i, count) == shim_world.rank)
            mine = i;
    return mine;
}

/* The count roots' ids into ids (len bytes each), from all, their contributions in rank
 * order (sizes by rank): each an ok byte, then the id. DTSHIM_ERR_NO_ID names the first
 * root that could not create its id; the ids of the others are copied all the same. */
static int take_ids (uint8_t *ids, size_t len, int count, const uint8_t *all, const size_t *sizes)
{
    size_t off = 0;
    int r = 0, failed = -1;

    for (int i = 0; i < count; i++) {
        int root = dtshim_unique_id_root (i, count);
        for (; r < root; r++)
            off += sizes[r];
        if (sizes[root] != len + 1)
            return shim_fail (DTSHIM_ERR_SIZE, "root rank %d of id %d gave %zu bytes, not %zu",
                              root, i, sizes[root], len + 1);
        if (all[off] == 0 && failed < 0)
            failed = root;
        else
            memcpy (ids + (size_t) i * len, all + off + 1, len);
    }
    if (failed >= 0)
        return shim_fail (DTSHIM_ERR_NO_ID, "rank %d could not create its id", failed);
    return DTSHIM_OK;
}

int dtshim_share_unique_ids (void *ids, size_t len, int count, int ok)
{
    uint8_t *mine = NULL, *all = NULL;
    size_t *sizes;
    int mine_index, rv;

    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    if (ids == NULL || len == 0 || count < 1 || count > shim_world.size)
        return DTSHIM_ERR_INVALID;
    /* a root contributes its ok and its id, the others nothing */
    if ((mine_index = own_id_index (count)) >= 0) {
        if ((mine = malloc (len + 1)) == NULL)
            return DTSHIM_ERR_NO_MEMORY;
        mine[0] = ok ? 1 : 0;
        memcpy (mine + 1, (uint8_t *) ids + (size_t) mine_index * len, len);
    }
    if ((sizes = calloc ((size_t) shim_world.size, sizeof (*sizes))) == NULL) {
        free (mine);
        return DTSHIM_ERR_NO_MEMORY;
    }
    rv = dtshim_allgatherv (mine, mine_index >= 0 ? len + 1 : 0, (void **) &all, sizes);
    free (mine);
    if (rv == DTSHIM_OK)
        rv = take_ids (ids, len, count, all, sizes);
    dtshim_free (all);
    free (sizes);
    return rv;
}

int dtshim_share_unique_id (void *id, size_t len, int ok)
{
    const uint8_t *bytes = id;
    size_t i;
    int rv;

    if (id == NULL || len == 0)
        return DTSHIM_ERR_INVALID;
    if (dtshim_rank () == 0 && !ok)
        memset (id, 0, len);
    if ((rv = broadcast (SHIM_OP_UNIQUE_ID, id, len, 0, NULL)) != DTSHIM_OK)
        return rv;
    for (i = 0; i < len && bytes[i] == 0; i++)
        ;
    if (i == len)
        return shim_fail (DTSHIM_ERR_NO_ID, "rank 0 published an all-zero id");
    return DTSHIM_OK;
}
