/* exchange.c - the PMIx transport under the collectives: put/commit, fence with data
 * collection, and gets, all non-blocking with the collective's deadline, because Slurm's
 * PMIx ignores PMIX_TIMEOUT and waits 300 s for a peer that will never come. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/dtshim.h"
#include "shim/request.h"
#include "shim/shim.h"

static void fence_done (pmix_status_t status, void *cbdata)
{
    struct shim_request *r = cbdata;

    pthread_mutex_lock (&r->lock);
    r->status = status;
    shim_request_release_locked (r);
}

/* Every fence of the shim is one kind: with data collection.  Slurm's default fence type
 * ("mixed") runs a fence without PMIX_COLLECT_DATA on its tree, and a step of fewer nodes
 * than TreeWidth gets no tree: each node completes such a fence alone, while a rank of
 * another node has not called it.  A fence with data collection runs as a ring there and
 * waits for every rank; it is the barrier too, and costs what a fence without data would
 * (see doc/shim.md's figures).  Where the step runs the tree for every fence, dtshim_init
 * refuses (DTSHIM_ERR_FENCE). */
static int fence (uint64_t seq)
{
    pmix_proc_t job;
    pmix_info_t info;
    bool yes = true;
    struct shim_request *r;
    pmix_status_t rc;
    int rv;

    if ((r = shim_request_new (0)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    PMIX_LOAD_PROCID (&job, shim_world.self.nspace, PMIX_RANK_WILDCARD);
    /* Slurm collects data whenever PMIX_COLLECT_DATA is present, whatever its value. */
    PMIX_INFO_LOAD (&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    shim_request_retain (r); /* fence_done's */
    rc = PMIx_Fence_nb (&job, 1, &info, 1, fence_done, r);
    PMIX_INFO_DESTRUCT (&info);
    if (rc != PMIX_SUCCESS) {
        /* PMIX_OPERATION_SUCCEEDED: done at once, and no callback will come. */
        shim_request_release (r); /* fence_done's */
        shim_request_release (r); /* the caller's, the last */
        if (rc == PMIX_OPERATION_SUCCEEDED)
            return DTSHIM_OK;
        return shim_fail (DTSHIM_ERR_PMIX, "collective #%llu: PMIx_Fence_nb failed: %s",
                          (unsigned long long) seq, PMIx_Error_string (rc));
    }
    if ((rv = shim_request_wait (r, seq, "fence")) == DTSHIM_OK)
        rc = r->status;
    shim_request_release (r);
    if (rv != DTSHIM_OK)
        return rv;
    if (rc != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "collective #%llu: fence failed: %s",
                          (unsigned long long) seq, PMIx_Error_string (rc));
    return DTSHIM_OK;
}

/* Put size bytes at bytes under the key of chunk c of collective seq. */
static pmix_status_t put_chunk (uint64_t seq, size_t c, const uint8_t *bytes, size_t size)
{
    char key[PMIX_MAX_KEYLEN + 1];
    pmix_value_t value;

    shim_key (key, sizeof (key), seq, c);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = (char *) bytes;
    value.data.bo.size = size;
    return PMIx_Put (PMIX_GLOBAL, key, &value);
}

static int exchange (enum shim_op op, const void *payload, size_t size, bool contribute,
                     uint64_t seq)
{
    size_t frame_len = SHIM_FRAME_HEADER + size, chunks = shim_chunk_count (frame_len, SHIM_CHUNK);
    uint8_t *frame;
    pmix_status_t rc = PMIX_SUCCESS;

    if (!contribute)
        return fence (seq);
    if (size > SHIM_MAX_PAYLOAD)
        return shim_fail (DTSHIM_ERR_INVALID, "%zu bytes: more than the shim carries (%zu)", size,
                          SHIM_MAX_PAYLOAD);
    if ((frame = malloc (frame_len)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    shim_frame_header (frame, op, seq, size);
    if (size > 0)
        memcpy (frame + SHIM_FRAME_HEADER, payload, size);
    for (size_t c = 0; c < chunks && rc == PMIX_SUCCESS; c++)
        rc = put_chunk (seq, c, frame + c * SHIM_CHUNK, shim_chunk_len (frame_len, SHIM_CHUNK, c));
    free (frame);
    if (rc != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Put(%zu bytes) failed: %s", size,
                          PMIx_Error_string (rc));
    if ((rc = PMIx_Commit ()) != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Commit failed: %s", PMIx_Error_string (rc));
    return fence (seq);
}

static void get_done (pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    struct shim_slot *s = cbdata;
    struct shim_request *r = s->owner;

    pthread_mutex_lock (&r->lock);
    s->status = status;
    if (status == PMIX_SUCCESS
        && (kv == NULL || kv->type != (r->want_u64 ? PMIX_UINT64 : PMIX_BYTE_OBJECT)))
        s->status = PMIX_ERR_TYPE_MISMATCH;
    if (s->status == PMIX_SUCCESS && r->want_u64)
        s->u64 = kv->data.uint64;
    /* kv belongs to PMIx and goes away when this returns; a caller that gave up at its
     * deadline has released r and reads nothing of it. */
    if (s->status == PMIX_SUCCESS && !r->want_u64 && shim_request_shared_locked (r)) {
        s->len = kv->data.bo.size;
        s->bytes = malloc (s->len > 0 ? s->len : 1);
        if (s->bytes == NULL)
            s->status = PMIX_ERR_NOMEM;
        else if (s->len > 0)
            memcpy (s->bytes, kv->data.bo.bytes, s->len);
    }
    shim_request_release_locked (r);
}

/* Get the key in each of r's first n slots from ranks[i] (the key and r->info stay with r
 * until the callbacks have come), one after the other, before the deadline; with
 * stop_at_found (of PMIX_UINT64 values), only until one of at most seq is found. One at a
 * time: PMIx 4 answers a get of a value its shared-memory store holds at once, but a get
 * that goes to the server (every get of another rank's value with PMIx 5) waits far longer
 * for its answer while others are in flight than alone, so a collective's gets take longer
 * all at once than one by one (doc/decisions.md has the figures). */
static int get_each (struct shim_request *r, const int *ranks, size_t n, uint64_t seq,
                     bool stop_at_found)
{
    pmix_proc_t peer;
    pmix_status_t rc;
    int rv;

    PMIX_LOAD_NSPACE (peer.nspace, shim_world.self.nspace);
    for (size_t i = 0; i < n; i++) {
        peer.rank = (pmix_rank_t) ranks[i];
        shim_request_retain (r); /* get_done's */
        rc = PMIx_Get_nb (&peer, r->slots[i].key, r->info, r->ninfo, get_done, &r->slots[i]);
        if (rc != PMIX_SUCCESS) {
            /* No callback will come. */
            pthread_mutex_lock (&r->lock);
            r->slots[i].status = rc;
            shim_request_release_locked (r);
        }
        if ((rv = shim_request_wait (r, seq, "get")) != DTSHIM_OK)
            return rv;
        if (stop_at_found && r->slots[i].status == PMIX_SUCCESS && r->slots[i].u64 <= seq)
            break;
    }
    return DTSHIM_OK;
}

/* Get chunks[i] of ranks[i], i < n, into r's slots. */
static int get_all (struct shim_request *r, const int *ranks, size_t n, const size_t *chunks,
                    uint64_t seq)
{
    int rv;

    for (size_t i = 0; i < n; i++)
        shim_key (r->slots[i].key, sizeof (r->slots[i].key), seq, chunks[i]);
    if ((rv = get_each (r, ranks, n, seq, false)) != DTSHIM_OK)
        return rv;
    for (size_t i = 0; i < n; i++) {
        if (r->slots[i].status != PMIX_SUCCESS)
            return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(%s of rank %d) failed: %s",
                              r->slots[i].key, shim_rank_of (ranks[i]),
                              PMIx_Error_string (r->slots[i].status));
    }
    return DTSHIM_OK;
}

/* PMIX_IMMEDIATE: a key this client does not hold is asked of the node's server, which
 * answers from what it holds and never waits for a key that was not put.  Never
 * PMIX_OPTIONAL, which answers from this client alone: with PMIx 5 a client holds only what
 * it fetched before.  Nor PMIX_GET_REFRESH_CACHE: with it, PMIx 5 (Slurm 24.11) answered "not
 * found" for a key put before the fence, in every run of scripts/stress-preempt. */
static int probe (const char *key, uint64_t seq, int *any)
{
    struct shim_request *r;
    int *ranks, n = 0, rv;
    bool yes = true;

    *any = 0;
    if (shim_world.size <= 1)
        return DTSHIM_OK;
    ranks = calloc ((size_t) shim_world.size, sizeof (*ranks));
    if (ranks == NULL || (r = shim_request_new ((size_t) shim_world.size - 1)) == NULL) {
        free (ranks);
        return DTSHIM_ERR_NO_MEMORY;
    }
    PMIX_INFO_CREATE (r->info, 1);
    if (r->info == NULL) {
        shim_request_release (r);
        free (ranks);
        return DTSHIM_ERR_NO_MEMORY;
    }
    r->ninfo = 1;
    PMIX_INFO_LOAD (&r->info[0], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    r->want_u64 = true;
    for (int rank = 0; rank < shim_world.size; rank++) {
        if (rank == shim_world.transport_rank)
            continue;
        ranks[n] = rank;
        snprintf (r->slots[n].key, sizeof (r->slots[n].key), "%s", key);
        r->slots[n].status = PMIX_ERR_NOT_FOUND; /* until asked */
        n++;
    }
    rv = get_each (r, ranks, (size_t) n, seq, true);
    for (int i = 0; i < n && rv == DTSHIM_OK; i++) {
        pmix_status_t st = r->slots[i].status;
        if (st == PMIX_SUCCESS && r->slots[i].u64 <= seq)
            *any = 1;
        else if (st != PMIX_SUCCESS && st != PMIX_ERR_NOT_FOUND)
            rv = shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(%s of rank %d) failed: %s", key,
                            shim_rank_of (ranks[i]), PMIx_Error_string (st));
    }
    shim_request_release (r);
    free (ranks);
    return rv;
}

/* A frame is read in two rounds of gets: the first chunk of every rank's frame, which
 * declares the frame's length, then the other chunks of them all. A round gets chunks[i] of
 * ranks[i] into slot i of its request. */
struct round {
    struct shim_request *req;
    int *ranks;
    size_t *chunks;
    size_t n;
};

/* Room for n gets; DTSHIM_ERR_NO_MEMORY leaves what it could allocate to round_end. */
static int round_new (struct round *round, size_t n)
{
    round->n = n;
    if ((round->ranks = calloc (n, sizeof (*round->ranks))) == NULL
        || (round->chunks = calloc (n, sizeof (*round->chunks))) == NULL
        || (round->req = shim_request_new (n)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    return DTSHIM_OK;
}

/* The caller's part of the round ends: a get still in flight after a timeout keeps the
 * request until its callback. */
static void round_end (struct round *round)
{
    if (round->req != NULL)
        shim_request_release (round->req);
    free (round->ranks);
    free (round->chunks);
}

/* Receive the first chunk of the frames of ranks first .. first+count-1. */
static int receive_heads (struct round *heads, int first, int count, uint64_t seq)
{
    int rv;

    if ((rv = round_new (heads, (size_t) count)) != DTSHIM_OK)
        return rv;
    for (int i = 0; i < count; i++)
        heads->ranks[i] = first + i;
    return get_all (heads->req, heads->ranks, heads->n, heads->chunks, seq);
}

/* Match each first chunk against collective seq and op: the payload's size it declares into
 * out, and into *nrest the number of chunks that remain of all the frames. */
static int match_heads (const struct round *heads, enum shim_op op, uint64_t seq,
                        struct shim_piece *out, size_t *nrest)
{
    uint64_t size;
    int rv;

    *nrest = 0;
    for (size_t i = 0; i < heads->n; i++) {
        const struct shim_slot *s = &heads->req->slots[i];
        if ((rv = shim_frame_parse (s->bytes, s->len, op, seq, &size)) != DTSHIM_OK)
            return shim_fail (rv, "collective #%llu, rank %d: %s", (unsigned long long) seq,
                              shim_rank_of (heads->ranks[i]), dtshim_strerror (rv));
        out[i].size = (size_t) size;
        *nrest += shim_chunk_count (SHIM_FRAME_HEADER + size, SHIM_CHUNK) - 1;
    }
    return DTSHIM_OK;
}

/* Receive the nrest chunks after the first of the frames of ranks first .. first+count-1,
 * whose payloads' sizes are in out. */
static int receive_rest (struct round *rest, size_t nrest, int first, int count,
                         const struct shim_piece *out, uint64_t seq)
{
    size_t k = 0;
    int rv;

    if ((rv = round_new (rest, nrest)) != DTSHIM_OK)
        return rv;
    for (int i = 0; i < count; i++) {
        size_t n = shim_chunk_count (SHIM_FRAME_HEADER + out[i].size, SHIM_CHUNK);
        for (size_t c = 1; c < n; c++) {
            rest->ranks[k] = first + i;
            rest->chunks[k++] = c;
        }
    }
    return get_all (rest->req, rest->ranks, rest->n, rest->chunks, seq);
}

/* Match each other chunk against the length its frame declares. */
static int match_rest (const struct round *rest, int first, uint64_t seq,
                       const struct shim_piece *out)
{
    for (size_t k = 0; k < rest->n; k++) {
        size_t frame_len = SHIM_FRAME_HEADER + out[rest->ranks[k] - first].size;
        size_t len = rest->req->slots[k].len;
        if (len != shim_chunk_len (frame_len, SHIM_CHUNK, rest->chunks[k]))
            return shim_fail (DTSHIM_ERR_PMIX, "collective #%llu, rank %d: chunk %zu has %zu bytes",
                              (unsigned long long) seq, shim_rank_of (rest->ranks[k]),
                              rest->chunks[k], len);
    }
    return DTSHIM_OK;
}

/* Complete the payloads in out from both rounds. Every chunk came with the length its frame
 * declares: only now the payloads' memory. */
static int complete (const struct round *heads, const struct round *rest, int first,
                     struct shim_piece *out)
{
    for (size_t i = 0; i < heads->n; i++) {
        const struct shim_slot *s = &heads->req->slots[i];
        if ((out[i].bytes = malloc (out[i].size > 0 ? out[i].size : 1)) == NULL)
            return DTSHIM_ERR_NO_MEMORY;
        memcpy (out[i].bytes, s->bytes + SHIM_FRAME_HEADER, s->len - SHIM_FRAME_HEADER);
    }
    for (size_t k = 0; k < rest->n; k++) {
        const struct shim_slot *s = &rest->req->slots[k];
        memcpy (out[rest->ranks[k] - first].bytes + rest->chunks[k] * SHIM_CHUNK
                    - SHIM_FRAME_HEADER,
                s->bytes, s->len);
    }
    return DTSHIM_OK;
}

static int read_pieces (enum shim_op op, uint64_t seq, int first, int count, struct shim_piece *out)
{
    struct round heads = {0}, rest = {0};
    size_t nrest = 0;
    int rv;

    memset (out, 0, (size_t) count * sizeof (*out));
    rv = receive_heads (&heads, first, count, seq);
    if (rv == DTSHIM_OK)
        rv = match_heads (&heads, op, seq, out, &nrest);
    if (rv == DTSHIM_OK && nrest > 0) {
        if ((rv = receive_rest (&rest, nrest, first, count, out, seq)) == DTSHIM_OK)
            rv = match_rest (&rest, first, seq, out);
    }
    if (rv == DTSHIM_OK)
        rv = complete (&heads, &rest, first, out);
    if (rv != DTSHIM_OK)
        shim_pieces_free (out, count);
    round_end (&heads);
    round_end (&rest);
    return rv;
}

static int publish (const char *key, uint64_t seq)
{
    pmix_value_t value;
    pmix_status_t rc;

    PMIX_VALUE_LOAD (&value, &seq, PMIX_UINT64);
    rc = PMIx_Put (PMIX_GLOBAL, key, &value);
    PMIX_VALUE_DESTRUCT (&value);
    if (rc != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Put(%s) failed: %s", key, PMIx_Error_string (rc));
    if ((rc = PMIx_Commit ()) != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Commit failed: %s", PMIx_Error_string (rc));
    return DTSHIM_OK;
}

/* PMIx_Abort returns once its server has the request, before the step ends. */
static int abort_step (int status, const char *msg)
{
    pmix_status_t rc = PMIx_Abort (status, msg, NULL, 0);

    if (rc != PMIX_SUCCESS)
        return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Abort failed: %s", PMIx_Error_string (rc));
    return DTSHIM_OK;
}

/* clang-format off */
const struct shim_transport shim_pmix_transport = {
    .name = "pmix", .connect = shim_pmix_connect, .disconnect = shim_pmix_disconnect,
    .exchange = exchange, .fence = fence, .read = read_pieces,
    .publish = publish, .probe = probe, .abort = abort_step, .name_chief = shim_pmix_name_chief,
};
/* clang-format on */
