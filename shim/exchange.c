/* exchange.c - the PMIx transport under the collectives: put/commit, fence with data
 * collection, and gets, all non-blocking with the collective's deadline, because Slurm's
 * PMIx ignores PMIX_TIMEOUT and waits 300 s for a peer that will never come. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

/* PMIx calls in flight. A get's result lands in its slot. When the caller gives up at the
 * deadline it abandons the whole thing, and the last callback to come frees it.
 *
 * PMIx_Get_nb keeps the key and info pointers it is given, not copies, until its callback:
 * PMIx 5 sends a get it cannot answer from its cache to the server later, from its progress
 * thread, and answers every get of a rank in flight from that one reply by looking up each
 * get's key then. So each get's key lives in its slot, and the directives in the pending,
 * as long as the callbacks can come (one key buffer reused for several gets in flight made
 * them all read the last key: "chunk 1 has 24 bytes"). */
struct pending;
struct slot {
    struct pending *owner;
    char key[PMIX_MAX_KEYLEN + 1];
    pmix_status_t status;
    uint8_t *bytes;
    size_t len;
    uint64_t u64;
};
struct pending {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int outstanding;
    bool abandoned;
    bool want_u64; /* the gets look for a PMIX_UINT64, not a chunk */
    pmix_status_t status; /* of the fence */
    pmix_info_t *info; /* the gets' directives, or NULL */
    size_t ninfo;
    size_t n;
    struct slot slots[];
};

static struct pending *pending_new (size_t n)
{
    struct pending *p = calloc (1, sizeof (*p) + n * sizeof (p->slots[0]));
    pthread_condattr_t attr;

    if (p == NULL)
        return NULL;
    pthread_mutex_init (&p->lock, NULL);
    pthread_condattr_init (&attr);
    pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
    pthread_cond_init (&p->done_cond, &attr);
    pthread_condattr_destroy (&attr);
    p->n = n;
    for (size_t i = 0; i < n; i++)
        p->slots[i].owner = p;
    return p;
}

static void pending_free (struct pending *p)
{
    for (size_t i = 0; i < p->n; i++)
        free (p->slots[i].bytes);
    if (p->info != NULL)
        PMIX_INFO_FREE (p->info, p->ninfo);
    pthread_cond_destroy (&p->done_cond);
    pthread_mutex_destroy (&p->lock);
    free (p);
}

/* One callback done; frees p when its caller has left. Called with p->lock held. */
static void pending_done_locked (struct pending *p)
{
    bool gone;

    p->outstanding--;
    gone = p->abandoned && p->outstanding == 0;
    pthread_cond_signal (&p->done_cond);
    pthread_mutex_unlock (&p->lock);
    if (gone)
        pending_free (p);
}

/* Wait for every callback until the deadline. DTSHIM_ERR_TIMEOUT leaves p behind, broken. */
static int pending_wait (struct pending *p, uint64_t seq, const char *what)
{
    int rc = 0;

    pthread_mutex_lock (&p->lock);
    while (p->outstanding > 0 && rc != ETIMEDOUT) {
        if (shim_world.timeout_s > 0)
            rc = pthread_cond_timedwait (&p->done_cond, &p->lock, &shim_world.deadline);
        else
            pthread_cond_wait (&p->done_cond, &p->lock);
    }
    if (p->outstanding == 0) {
        pthread_mutex_unlock (&p->lock);
        return DTSHIM_OK;
    }
    p->abandoned = true;
    pthread_mutex_unlock (&p->lock);
    return shim_timed_out (seq, what);
}

static void fence_done (pmix_status_t status, void *cbdata)
{
    struct pending *p = cbdata;

    pthread_mutex_lock (&p->lock);
    p->status = status;
    pending_done_locked (p);
}

/* Every fence of the shim is one kind: with data collection.  Slurm's default fence type
 * ("mixed") runs a fence without PMIX_COLLECT_DATA on its tree, and a step of fewer nodes
 * than TreeWidth gets no tree: each node completes such a fence alone, while a rank of
 * another node has not called it.  A fence with data collection runs as a ring there and
 * waits for every rank; it is the barrier too, and costs what a fence without data would
 * (see the README's figures).  Where the step runs the tree for every fence, dtshim_init
 * refuses (DTSHIM_ERR_FENCE). */
static int fence (uint64_t seq)
{
    pmix_proc_t job;
    pmix_info_t info;
    bool yes = true;
    struct pending *p;
    pmix_status_t rc;
    int rv;

    if ((p = pending_new (0)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    p->outstanding = 1;
    PMIX_LOAD_PROCID (&job, shim_world.self.nspace, PMIX_RANK_WILDCARD);
    /* Slurm collects data whenever PMIX_COLLECT_DATA is present, whatever its value. */
    PMIX_INFO_LOAD (&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence_nb (&job, 1, &info, 1, fence_done, p);
    PMIX_INFO_DESTRUCT (&info);
    if (rc != PMIX_SUCCESS) {
        /* PMIX_OPERATION_SUCCEEDED: done at once, and no callback will come. */
        pending_free (p);
        if (rc == PMIX_OPERATION_SUCCEEDED)
            return DTSHIM_OK;
        return shim_fail (DTSHIM_ERR_PMIX, "collective #%llu: PMIx_Fence_nb failed: %s",
                          (unsigned long long) seq, PMIx_Error_string (rc));
    }
    if ((rv = pending_wait (p, seq, "fence")) != DTSHIM_OK)
        return rv;
    rc = p->status;
    pending_free (p);
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
    struct slot *s = cbdata;
    struct pending *p = s->owner;

    pthread_mutex_lock (&p->lock);
    s->status = status;
    if (status == PMIX_SUCCESS
        && (kv == NULL || kv->type != (p->want_u64 ? PMIX_UINT64 : PMIX_BYTE_OBJECT)))
        s->status = PMIX_ERR_TYPE_MISMATCH;
    if (s->status == PMIX_SUCCESS && p->want_u64)
        s->u64 = kv->data.uint64;
    /* kv belongs to PMIx and goes away when this returns. */
    if (s->status == PMIX_SUCCESS && !p->want_u64 && !p->abandoned) {
        s->len = kv->data.bo.size;
        s->bytes = malloc (s->len > 0 ? s->len : 1);
        if (s->bytes == NULL)
            s->status = PMIX_ERR_NOMEM;
        else if (s->len > 0)
            memcpy (s->bytes, kv->data.bo.bytes, s->len);
    }
    pending_done_locked (p);
}

/* Get the key in each of p's first n slots from ranks[i] (the key and p->info stay with p
 * until the callbacks have come), one after the other, before the deadline; with
 * stop_at_found (of PMIX_UINT64 values), only until one of at most seq is found. One at a
 * time: PMIx 4 answers a get of a value its shared-memory store holds at once, but a get
 * that goes to the server (every get of another rank's value with PMIx 5) waits about
 * 40 ms for its answer when others are in flight, 0.15 to 0.25 ms alone (measured with
 * PMIx 4.2 and 5.0 on the test cluster: an allgather of 6 ranks took 50 ms with its gets all
 * at once, 10 ms one by one). */
static int get_each (struct pending *p, const int *ranks, size_t n, uint64_t seq,
                     bool stop_at_found)
{
    pmix_proc_t peer;
    pmix_status_t rc;
    int rv;

    PMIX_LOAD_NSPACE (peer.nspace, shim_world.self.nspace);
    for (size_t i = 0; i < n; i++) {
        peer.rank = (pmix_rank_t) ranks[i];
        pthread_mutex_lock (&p->lock);
        p->outstanding++;
        pthread_mutex_unlock (&p->lock);
        rc = PMIx_Get_nb (&peer, p->slots[i].key, p->info, p->ninfo, get_done, &p->slots[i]);
        if (rc != PMIX_SUCCESS) {
            pthread_mutex_lock (&p->lock);
            p->slots[i].status = rc;
            p->outstanding--;
            pthread_mutex_unlock (&p->lock);
        }
        if ((rv = pending_wait (p, seq, "get")) != DTSHIM_OK)
            return rv;
        if (stop_at_found && p->slots[i].status == PMIX_SUCCESS && p->slots[i].u64 <= seq)
            break;
    }
    return DTSHIM_OK;
}

/* Get chunks[i] of ranks[i], i < n, into p's slots. */
static int get_all (struct pending *p, const int *ranks, size_t n, const size_t *chunks,
                    uint64_t seq)
{
    int rv;

    for (size_t i = 0; i < n; i++)
        shim_key (p->slots[i].key, sizeof (p->slots[i].key), seq, chunks[i]);
    if ((rv = get_each (p, ranks, n, seq, false)) != DTSHIM_OK)
        return rv;
    for (size_t i = 0; i < n; i++) {
        if (p->slots[i].status != PMIX_SUCCESS)
            return shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(%s of rank %d) failed: %s",
                              p->slots[i].key, ranks[i], PMIx_Error_string (p->slots[i].status));
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
    struct pending *p;
    int *ranks, n = 0, rv;
    bool yes = true;

    *any = 0;
    if (shim_world.size <= 1)
        return DTSHIM_OK;
    ranks = calloc ((size_t) shim_world.size, sizeof (*ranks));
    if (ranks == NULL || (p = pending_new ((size_t) shim_world.size - 1)) == NULL) {
        free (ranks);
        return DTSHIM_ERR_NO_MEMORY;
    }
    PMIX_INFO_CREATE (p->info, 1);
    if (p->info == NULL) {
        pending_free (p);
        free (ranks);
        return DTSHIM_ERR_NO_MEMORY;
    }
    p->ninfo = 1;
    PMIX_INFO_LOAD (&p->info[0], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    p->want_u64 = true;
    for (int r = 0; r < shim_world.size; r++) {
        if (r == shim_world.rank)
            continue;
        ranks[n] = r;
        snprintf (p->slots[n].key, sizeof (p->slots[n].key), "%s", key);
        p->slots[n].status = PMIX_ERR_NOT_FOUND; /* until asked */
        n++;
    }
    if ((rv = get_each (p, ranks, (size_t) n, seq, true)) != DTSHIM_OK) {
        free (ranks);
        return rv; /* a timeout leaves p to the callbacks */
    }
    for (int i = 0; i < n && rv == DTSHIM_OK; i++) {
        pmix_status_t st = p->slots[i].status;
        if (st == PMIX_SUCCESS && p->slots[i].u64 <= seq)
            *any = 1;
        else if (st != PMIX_SUCCESS && st != PMIX_ERR_NOT_FOUND)
            rv = shim_fail (DTSHIM_ERR_PMIX, "PMIx_Get(%s of rank %d) failed: %s", key, ranks[i],
                            PMIx_Error_string (st));
    }
    pending_free (p);
    free (ranks);
    return rv;
}

void shim_pieces_free (struct shim_piece *pieces, int count)
{
    for (int i = 0; i < count; i++) {
        free (pieces[i].bytes);
        pieces[i].bytes = NULL;
    }
}

/* The first chunk of every rank's frame, then the other chunks of them all, in two rounds
 * of gets. */
static int read_pieces (enum shim_op op, uint64_t seq, int first, int count, struct shim_piece *out)
{
    struct pending *p = NULL, *rest = NULL;
    bool p_abandoned = false, rest_abandoned = false;
    int *ranks = NULL, rv = DTSHIM_OK;
    size_t *chunks = NULL, nrest = 0, k = 0;
    uint64_t size;

    memset (out, 0, (size_t) count * sizeof (*out));
    ranks = calloc ((size_t) count, sizeof (*ranks));
    chunks = calloc ((size_t) count, sizeof (*chunks));
    if (ranks == NULL || chunks == NULL || (p = pending_new ((size_t) count)) == NULL) {
        rv = DTSHIM_ERR_NO_MEMORY;
        goto out;
    }
    for (int i = 0; i < count; i++)
        ranks[i] = first + i;
    if ((rv = get_all (p, ranks, (size_t) count, chunks, seq)) != DTSHIM_OK) {
        p_abandoned = rv == DTSHIM_ERR_TIMEOUT; /* the callbacks free it */
        goto out;
    }
    for (int i = 0; i < count; i++) {
        struct slot *s = &p->slots[i];
        rv = shim_frame_parse (s->bytes, s->len, op, seq, &size);
        if (rv != DTSHIM_OK) {
            shim_fail (rv, "collective #%llu, rank %d: %s", (unsigned long long) seq, first + i,
                       dtshim_strerror (rv));
            goto out;
        }
        out[i].size = (size_t) size;
        nrest += shim_chunk_count (SHIM_FRAME_HEADER + size, SHIM_CHUNK) - 1;
    }
    if (nrest == 0)
        goto assemble;
    free (ranks);
    free (chunks);
    ranks = calloc (nrest, sizeof (*ranks));
    chunks = calloc (nrest, sizeof (*chunks));
    if (ranks == NULL || chunks == NULL || (rest = pending_new (nrest)) == NULL) {
        rv = DTSHIM_ERR_NO_MEMORY;
        goto out;
    }
    for (int i = 0; i < count; i++) {
        size_t n = shim_chunk_count (SHIM_FRAME_HEADER + out[i].size, SHIM_CHUNK);
        for (size_t c = 1; c < n; c++) {
            ranks[k] = first + i;
            chunks[k++] = c;
        }
    }
    if ((rv = get_all (rest, ranks, nrest, chunks, seq)) != DTSHIM_OK) {
        rest_abandoned = rv == DTSHIM_ERR_TIMEOUT;
        goto out;
    }
    for (k = 0; k < nrest; k++) {
        int i = ranks[k] - first;
        size_t frame_len = SHIM_FRAME_HEADER + out[i].size;
        if (rest->slots[k].len != shim_chunk_len (frame_len, SHIM_CHUNK, chunks[k])) {
            rv = shim_fail (DTSHIM_ERR_PMIX, "collective #%llu, rank %d: chunk %zu has %zu bytes",
                            (unsigned long long) seq, ranks[k], chunks[k], rest->slots[k].len);
            goto out;
        }
    }
assemble:
    /* Every chunk came with the length its frame declares: only now the payloads' memory. */
    for (int i = 0; i < count; i++) {
        if ((out[i].bytes = malloc (out[i].size > 0 ? out[i].size : 1)) == NULL) {
            rv = DTSHIM_ERR_NO_MEMORY;
            goto out;
        }
        memcpy (out[i].bytes, p->slots[i].bytes + SHIM_FRAME_HEADER,
                p->slots[i].len - SHIM_FRAME_HEADER);
    }
    for (k = 0; k < nrest; k++) {
        int i = ranks[k] - first;
        memcpy (out[i].bytes + chunks[k] * SHIM_CHUNK - SHIM_FRAME_HEADER, rest->slots[k].bytes,
                rest->slots[k].len);
    }
out:
    if (rv != DTSHIM_OK)
        shim_pieces_free (out, count);
    if (p != NULL && !p_abandoned)
        pending_free (p);
    if (rest != NULL && !rest_abandoned)
        pending_free (rest);
    free (ranks);
    free (chunks);
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
    .publish = publish, .probe = probe, .abort = abort_step,
};
/* clang-format on */
