/* fuzz_topo_seal.c - the seal of the node's topology cache
 * (libdist/topo.c: dist_topo_cache_unseal), which decides whether a file in
 * /run/slurm-dist-train is handed to hwloc at all.  Input: the file's bytes
 * (not NUL-terminated: the plugin reads a file of that length).  Also: the
 * input sealed with a key must unseal to its length and that key, when it
 * ends with a newline as hwloc's XML export does. */
#include "libdist/topo.h"
#include "tests/fuzz/fuzz.h"

#define KEY "format=2 hwloc=0x20900 boot=0f2c7f3e-58a6-4b8a-9b1e-2d1c0c8f3a11 io=1"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    /* exactly size bytes: no terminator to lean on */
    char *file = malloc (size > 0 ? size : 1);
    char key[DIST_TOPO_CACHE_KEY_MAX], seal[DIST_TOPO_CACHE_KEY_MAX + 128];
    long xmllen;

    memcpy (file, data, size);
    xmllen = dist_topo_cache_unseal (file, size, key, sizeof (key));
    FUZZ_CHECK (xmllen >= -1 && xmllen < (long) size);
    if (xmllen >= 0)
        FUZZ_CHECK (strnlen (key, sizeof (key)) < sizeof (key));
    free (file);

    /* the input as the XML of a cache we write (hwloc's export ends with a
     * newline: the seal is a line of its own) */
    if (size > 0 && data[size - 1] == '\n'
        && dist_topo_cache_seal ((const char *) data, size, KEY, seal, sizeof (seal)) == 0) {
        size_t seallen = strlen (seal);
        char *sealed = malloc (size + seallen);
        memcpy (sealed, data, size);
        memcpy (sealed + size, seal, seallen);
        xmllen = dist_topo_cache_unseal (sealed, size + seallen, key, sizeof (key));
        FUZZ_CHECK (xmllen == (long) size);
        FUZZ_CHECK (strcmp (key, KEY) == 0);
        /* one byte changed in the XML breaks the seal */
        sealed[size / 2] ^= 0x20;
        FUZZ_CHECK (dist_topo_cache_unseal (sealed, size + seallen, key, sizeof (key)) == -1);
        free (sealed);
    }
    return 0;
}
