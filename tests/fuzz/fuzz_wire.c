/* fuzz_wire.c - the shim's wire decoder (shim/wire.c): the frame header a
 * peer rank put into PMIx, and the settings read from the environment
 * (DTSHIM_TIMEOUT-like seconds, signal names).  Input: byte 0 the
 * collective expected, bytes 1-8 its sequence number (little-endian), the
 * rest the first chunk as PMIx returned it; the same bytes are also read as
 * text. */
#include <math.h>
#include <signal.h>

#include "shim/dtshim.h"
#include "libdist/slurmconf.h"
#include "shim/wire.h"
#include "tests/fuzz/fuzz.h"

static void parse_settings (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size);
    double seconds = -1;
    int signo = -1;

    if (shim_parse_timeout (text, &seconds) == 0)
        FUZZ_CHECK (seconds >= 0 && isfinite (seconds));
    if (shim_parse_signal (text, &signo) == 0)
        FUZZ_CHECK (signo >= 0 && signo < NSIG && signo != SIGKILL && signo != SIGSTOP
                    && signo != SIGTERM);
    free (text);
}

/* An integer fact of PMIx's, of the type byte 0 names. */
static void value_int (const uint8_t *data, size_t size)
{
    static const pmix_data_type_t types[] = {
        PMIX_UINT8, PMIX_UINT16, PMIX_UINT32, PMIX_UINT64, PMIX_INT8,      PMIX_INT16,
        PMIX_INT,   PMIX_INT32,  PMIX_INT64,  PMIX_SIZE,   PMIX_PROC_RANK, PMIX_STRING,
    };
    pmix_value_t v;
    int out = -1;

    if (size < 1)
        return;
    memset (&v, 0, sizeof (v));
    v.type = types[data[0] % (sizeof (types) / sizeof (types[0]))];
    if (v.type == PMIX_STRING)
        v.data.string = NULL; /* never read: not an integer */
    else
        memcpy (&v.data, data + 1, size - 1 < 8 ? size - 1 : 8);
    if (shim_value_int (&v, &out) == 0)
        FUZZ_CHECK (out >= 0);
}

/* mpi.conf text, not NUL-terminated: a value found fits and has no blank or comment. */
static void conf_value (const uint8_t *data, size_t size)
{
    char *text = malloc (size > 0 ? size : 1), value[16];

    memcpy (text, data, size);
    if (dist_slurm_conf_value (text, size, "PMIxCollFence", value, sizeof (value)))
        FUZZ_CHECK (strlen (value) < sizeof (value) && strpbrk (value, " \t#\n") == NULL);
    free (text);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    uint64_t seq = 0, payload = 0;
    uint8_t *chunk;
    size_t len;
    int rc;

    parse_settings (data, size);
    value_int (data, size);
    conf_value (data, size);
    if (size < 9)
        return 0;
    for (int i = 0; i < 8; i++)
        seq |= (uint64_t) data[1 + i] << (8 * i);
    len = size - 9;
    chunk = malloc (len > 0 ? len : 1); /* exactly what PMIx handed over */
    memcpy (chunk, data + 9, len);
    rc = shim_frame_parse (len > 0 ? chunk : NULL, len, (enum shim_op) data[0], seq, &payload);
    FUZZ_CHECK (rc == DTSHIM_OK || rc == DTSHIM_ERR_MISMATCH || rc == DTSHIM_ERR_PMIX);
    if (rc == DTSHIM_OK) {
        /* what the PMIx read does next: the payload's chunks, each of a known length */
        size_t frame = SHIM_FRAME_HEADER + (size_t) payload;
        size_t chunks = shim_chunk_count (frame, SHIM_CHUNK);
        FUZZ_CHECK (len == shim_chunk_len (frame, SHIM_CHUNK, 0) && len >= SHIM_FRAME_HEADER);
        FUZZ_CHECK (chunks >= 1);
        for (size_t c = 1; c < chunks && c < 4; c++)
            FUZZ_CHECK (shim_chunk_len (frame, SHIM_CHUNK, c) > 0
                        && shim_chunk_len (frame, SHIM_CHUNK, c) <= SHIM_CHUNK);
        FUZZ_CHECK (shim_chunk_len (frame, SHIM_CHUNK, chunks) == 0);
        /* and a frame we write for it parses the same */
        uint8_t header[SHIM_FRAME_HEADER];
        shim_frame_header (header, (enum shim_op) data[0], seq, payload);
        FUZZ_CHECK (memcmp (header, chunk, 4) == 0 && header[4] == chunk[4]);
    }
    free (chunk);
    return 0;
}
