/* pmi2kvs.c - the collectives' frames in the KVS of Slurm's PMI-2 server: put in values of
 * base64 under each rank's keys, a fence, then read back; the preemption key. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim/dtshim.h"
#include "shim/pmi2.h"
#include "shim/pmi2wire.h"
#include "shim/shim.h"

/* The chunks of this rank's frame, as puts. */
struct frame_puts {
    const uint8_t *frame;
    size_t len;
    char key[SHIM_PMI2_KEYLEN + 1];
    char value[SHIM_PMI2_VALLEN + 1];
};

static int put_request (size_t c, const char **key, const char **value, void *arg)
{
    struct frame_puts *p = arg;

    shim_pmi2_key (p->key, sizeof (p->key), shim_world.transport_rank, c);
    shim_pmi2_encode (p->frame + c * SHIM_PMI2_CHUNK, shim_chunk_len (p->len, SHIM_PMI2_CHUNK, c),
                      p->value);
    *key = p->key;
    *value = p->value;
    return DTSHIM_OK;
}

static int put_answer (size_t c, void *arg)
{
    (void) c, (void) arg;
    return DTSHIM_OK;
}

static int exchange (enum shim_op op, const void *payload, size_t size, bool contribute,
                     uint64_t seq)
{
    struct frame_puts p = {.len = SHIM_FRAME_HEADER + size};
    uint8_t *frame;
    int rv;

    if (!contribute)
        return shim_pmi2_fence (seq);
    if (size > SHIM_PMI2_MAX_PAYLOAD)
        return shim_fail (DTSHIM_ERR_TOO_LARGE,
                          "%zu bytes: more than the shim carries over PMI-2 (%zu); launch "
                          "with srun --mpi=pmix for up to 1 GiB",
                          size, SHIM_PMI2_MAX_PAYLOAD);
    if ((frame = malloc (p.len)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    shim_frame_header (frame, op, seq, size);
    if (size > 0)
        memcpy (frame + SHIM_FRAME_HEADER, payload, size);
    p.frame = frame;
    rv = shim_pmi2_pipeline ("kvs-put", shim_chunk_count (p.len, SHIM_PMI2_CHUNK), put_request,
                             put_answer, &p, seq);
    free (frame);
    return rv != DTSHIM_OK ? rv : shim_pmi2_fence (seq);
}

/* The frames of ranks first .. first+count-1: their first chunks, then all the others. */
struct frame_gets {
    enum shim_op op;
    uint64_t seq;
    int first;
    struct shim_piece *out;
    size_t nrest;
    struct rest {
        int i;
        size_t chunk;
    } * rest;
    char key[SHIM_PMI2_KEYLEN + 1];
};

/* The last answer's value decoded into out (at most room bytes): the length, or a
 * DTSHIM_ERR_* (MISMATCH when rank has put nothing under the key). */
static long answer_bytes (const struct frame_gets *g, int rank, uint8_t *out, size_t room)
{
    char *value;
    long n;
    int rv;

    if ((rv = shim_pmi2_found_value ("kvs-get", &value)) != DTSHIM_OK)
        return rv;
    if (value == NULL)
        return shim_fail (DTSHIM_ERR_MISMATCH, "collective #%llu: rank %d put nothing",
                          (unsigned long long) g->seq, rank);
    n = shim_pmi2_decode (value, strlen (value), out, room);
    if (n < 0)
        return shim_fail (DTSHIM_ERR_PMIX, "collective #%llu, rank %d: no chunk of ours",
                          (unsigned long long) g->seq, rank);
    return n;
}

static int head_request (size_t i, const char **key, const char **value, void *arg)
{
    struct frame_gets *g = arg;

    (void) value;
    *key = g->key;
    return shim_pmi2_key (g->key, sizeof (g->key), g->first + (int) i, 0);
}

/* A first chunk: the frame's header says how long the chunk and the payload are. */
static int head_answer (size_t i, void *arg)
{
    struct frame_gets *g = arg;
    uint8_t head[SHIM_PMI2_CHUNK];
    int rank = shim_rank_of (g->first + (int) i), rv; /* as the program knows it */
    uint64_t size;
    long n = answer_bytes (g, rank, head, sizeof (head));

    if (n < 0)
        return (int) n;
    if (n < (long) SHIM_FRAME_HEADER)
        return shim_fail (DTSHIM_ERR_PMIX, "collective #%llu, rank %d: no frame of ours",
                          (unsigned long long) g->seq, rank);
    if ((rv = shim_frame_header_parse (head, g->op, g->seq, &size)) != DTSHIM_OK)
        return shim_fail (rv, "collective #%llu, rank %d: %s", (unsigned long long) g->seq, rank,
                          dtshim_strerror (rv));
    if (size > SHIM_PMI2_MAX_PAYLOAD
        || (size_t) n != shim_chunk_len (SHIM_FRAME_HEADER + (size_t) size, SHIM_PMI2_CHUNK, 0))
        return shim_fail (DTSHIM_ERR_PMIX,
                          "collective #%llu, rank %d: a frame of %llu bytes in a "
                          "chunk of %ld",
                          (unsigned long long) g->seq, rank, (unsigned long long) size, n);
    if ((g->out[i].bytes = malloc (size > 0 ? (size_t) size : 1)) == NULL)
        return DTSHIM_ERR_NO_MEMORY;
    g->out[i].size = (size_t) size;
    memcpy (g->out[i].bytes, head + SHIM_FRAME_HEADER, (size_t) n - SHIM_FRAME_HEADER);
    g->nrest += shim_chunk_count (SHIM_FRAME_HEADER + (size_t) size, SHIM_PMI2_CHUNK) - 1;
    return DTSHIM_OK;
}

static int rest_request (size_t k, const char **key, const char **value, void *arg)
{
    struct frame_gets *g = arg;

    (void) value;
    *key = g->key;
    return shim_pmi2_key (g->key, sizeof (g->key), g->first + g->rest[k].i, g->rest[k].chunk);
}

static int rest_answer (size_t k, void *arg)
{
    struct frame_gets *g = arg;
    struct shim_piece *piece = &g->out[g->rest[k].i];
    size_t c = g->rest[k].chunk,
           want = shim_chunk_len (SHIM_FRAME_HEADER + piece->size, SHIM_PMI2_CHUNK, c);
    int rank = shim_rank_of (g->first + g->rest[k].i); /* as the program knows it */
    long n = answer_bytes (g, rank, piece->bytes + c * SHIM_PMI2_CHUNK - SHIM_FRAME_HEADER, want);

    if (n < 0)
        return (int) n;
    if ((size_t) n != want)
        return shim_fail (DTSHIM_ERR_PMIX, "collective #%llu, rank %d: chunk %zu has %ld bytes",
                          (unsigned long long) g->seq, rank, c, n);
    return DTSHIM_OK;
}

static int read_pieces (enum shim_op op, uint64_t seq, int first, int count, struct shim_piece *out)
{
    struct frame_gets g = {.op = op, .seq = seq, .first = first, .out = out};
    size_t k = 0;
    int rv;

    memset (out, 0, (size_t) count * sizeof (*out));
    rv = shim_pmi2_pipeline ("kvs-get", (size_t) count, head_request, head_answer, &g, seq);
    if (rv == DTSHIM_OK && g.nrest > 0 && (g.rest = calloc (g.nrest, sizeof (*g.rest))) == NULL)
        rv = DTSHIM_ERR_NO_MEMORY;
    for (int i = 0; rv == DTSHIM_OK && i < count; i++) {
        size_t n = shim_chunk_count (SHIM_FRAME_HEADER + out[i].size, SHIM_PMI2_CHUNK);
        for (size_t c = 1; c < n; c++)
            g.rest[k++] = (struct rest){i, c};
    }
    if (rv == DTSHIM_OK && g.nrest > 0)
        rv = shim_pmi2_pipeline ("kvs-get", g.nrest, rest_request, rest_answer, &g, seq);
    free (g.rest);
    if (rv != DTSHIM_OK)
        shim_pieces_free (out, count);
    return rv;
}

static int publish (const char *key, uint64_t seq)
{
    char value[32];

    snprintf (value, sizeof (value), "%llu", (unsigned long long) seq);
    return shim_pmi2_put (key, value, seq);
}

/* One key for the whole step: a value put reaches every node only with the next fence, so
 * after collective seq's fence every node holds the same value, put before that fence by
 * one of the ranks asked (Slurm's KVS keeps the last put of a key). A value greater than
 * seq is never there while a rank still reads seq's, and is left out all the same. */
static int probe (const char *key, uint64_t seq, int *any)
{
    char *value, *end;
    unsigned long long v;
    int rv;

    *any = 0;
    if ((rv = shim_pmi2_get (key, seq, &value)) != DTSHIM_OK || value == NULL)
        return rv;
    errno = 0;
    v = strtoull (value, &end, 10);
    if (errno != 0 || *end != '\0' || end == value)
        return shim_fail (DTSHIM_ERR_PMIX, "PMI-2: %s holds %.32s, not a collective's number", key,
                          value);
    *any = v <= seq;
    return DTSHIM_OK;
}

/* clang-format off */
const struct shim_transport shim_pmi2_transport = {
    .name = "pmi2", .connect = shim_pmi2_connect, .disconnect = shim_pmi2_disconnect,
    .exchange = exchange, .fence = shim_pmi2_fence, .read = read_pieces,
    .publish = publish, .probe = probe, .abort = shim_pmi2_abort,
    .name_chief = shim_pmi2_name_chief,
};
/* clang-format on */
