/* fuzz_pmi2.c - the shim's PMI-2 text (shim/pmi2wire.c): what Slurm's server answers (a
 * header, the fields of a body), a KVS value decoded, PMI_process_mapping, and the host list
 * of SLURM_STEP_NODELIST that names rank 0's node (libdist/hostlist.c). Input: byte 0 picks
 * the rank or host asked for, the rest is the text, not NUL-terminated where the parser takes
 * a length. */
#include "libdist/hostlist.h"
#include "shim/dtshim.h"
#include "shim/pmi2wire.h"
#include "tests/fuzz/fuzz.h"

static void answer (const uint8_t *data, size_t size)
{
    const char *body = (const char *) data, *v;
    size_t n;

    if (size >= 6 && shim_pmi2_msg_len (body) > SHIM_PMI2_MAX_MSG)
        FUZZ_CHECK (0);
    if (shim_pmi2_field (body, size, "value", &v, &n)) {
        /* Inside the body, and never across a field's end. */
        FUZZ_CHECK (v >= body && v + n <= body + size);
        FUZZ_CHECK (memchr (v, ';', n) == NULL);
        FUZZ_CHECK (v + n < body + size && v[n] == ';');
    }
    shim_pmi2_ok (body, size, "kvs-get-response");
}

/* A decoded value is within its room and encodes back to the same text. */
static void value (const uint8_t *data, size_t size)
{
    uint8_t out[SHIM_PMI2_CHUNK];
    char again[SHIM_PMI2_VALLEN + 1];
    long n = shim_pmi2_decode ((const char *) data, size, out, sizeof (out));

    if (n < 0)
        return;
    FUZZ_CHECK ((size_t) n <= sizeof (out));
    FUZZ_CHECK (shim_pmi2_encoded_len ((size_t) n) == size);
    shim_pmi2_encode (out, (size_t) n, again);
    FUZZ_CHECK (memcmp (again, data, size) == 0);
}

/* Every rank is placed on a node within bounds. */
static void mapping (const uint8_t *data, size_t size, int ranks)
{
    int node_of[64];

    for (int i = 0; i < ranks; i++)
        node_of[i] = -1;
    if (shim_pmi2_mapping ((const char *) data, size, ranks, 15, node_of) != 0)
        return;
    for (int i = 0; i < ranks; i++)
        FUZZ_CHECK (node_of[i] >= 0 && node_of[i] <= 15);
}

/* Name number want of a walk, kept; the names walked counted. */
struct walked {
    long want, seen;
    char name[DIST_HOSTLIST_NAME_MAX];
};

static int keep_nth (const char *name, void *arg)
{
    struct walked *w = arg;

    FUZZ_CHECK (strlen (name) > 0 && strlen (name) < sizeof (w->name));
    if (w->seen++ != w->want)
        return 0;
    memcpy (w->name, name, strlen (name) + 1);
    return 1;
}

/* A host found is a non-empty name that fits, with no ',', brackets or blanks, and the
 * very name a walk of every name gives at that place; a list walked whole names the same
 * hosts when read as Slurm's own reader does. */
static void host (const uint8_t *data, size_t size, long n)
{
    char *list = fuzz_string (data, size), out[32];
    struct walked all = {n, 0, ""}, loose = {-1, 0, ""};
    int rc = dist_hostlist_nth (list, n, out, sizeof (out));
    int walked = dist_hostlist_each (list, 0, keep_nth, &all);

    FUZZ_CHECK (walked == 0 || walked == 1 || walked == -1);
    if (rc == 0) {
        FUZZ_CHECK (strlen (out) > 0 && strlen (out) < sizeof (out)
                    && strpbrk (out, ",[] \t") == NULL);
        /* (the walk may stop short: more than DIST_HOSTLIST_MAX names before it) */
        FUZZ_CHECK (walked != 0);
    }
    if (walked == 1)
        FUZZ_CHECK (rc == 0 ? strcmp (out, all.name) == 0 : strlen (all.name) >= sizeof (out));
    if (walked == 0) {
        FUZZ_CHECK (rc == -1 && all.seen <= n);
        FUZZ_CHECK (dist_hostlist_each (list, DIST_HOSTLIST_LOOSE, keep_nth, &loose) == 0);
        FUZZ_CHECK (loose.seen == all.seen);
    }
    free (list);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    answer (data + 1, size - 1);
    value (data + 1, size - 1);
    mapping (data + 1, size - 1, 1 + data[0] % 64);
    host (data + 1, size - 1, data[0]);
    return 0;
}
