/* fuzz_tfconfig.c - TF_CONFIG's JSON from the step's host names
 * (libdist/tfconfig.c).  Input: a first line "PORT LO HI", then one host
 * name a line, rank by rank (names come from the user's SLURM_HOSTFILE or
 * the step's node list). */
#include "libdist/tfconfig.h"
#include "tests/fuzz/fuzz.h"

#define RANKS_MAX 4096

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size), *p = text, *line, *end;
    const char **host = calloc (RANKS_MAX, sizeof (*host));
    unsigned long base = 0, lo = 0, hi = 0;
    size_t n = 0;
    char *json;

    if ((line = fuzz_line (&p)) != NULL) {
        base = strtoul (line, &end, 10);
        lo = strtoul (end, &end, 10);
        hi = strtoul (end, &end, 10);
    }
    while (n < RANKS_MAX && (line = fuzz_line (&p)) != NULL)
        host[n++] = line;
    (void) dist_tf_config_fits (host, n);
    json = dist_tf_config_prefix (host, n, (uint16_t) base, (uint16_t) lo, (uint16_t) hi);
    if (json != NULL) {
        /* what remote.c makes of it: the rank and "}}" in 16 more bytes */
        size_t len = strlen (json);
        char *tf = malloc (len + 16);
        FUZZ_CHECK (len <= DIST_TF_CONFIG_MAX);
        FUZZ_CHECK (strncmp (json, "{\"cluster\": {\"worker\": [\"", 25) == 0);
        FUZZ_CHECK (strpbrk (json, "\\\n\r\t") == NULL); /* nothing a JSON string would escape */
        FUZZ_CHECK (dist_tf_config_fits (host, n));
        sprintf (tf, "%s%lu}}", json, (unsigned long) UINT32_MAX);
        free (tf);
        free (json);
    }
    free (host);
    free (text);
    return 0;
}
