/* fuzz_hostfile.c - the text of a user's SLURM_HOSTFILE (libdist/hostfile.c).
 * Input: the file's text. */
#include "libdist/hostfile.h"
#include "tests/fuzz/fuzz.h"

static int each (const char *entry, unsigned repeat, void *arg)
{
    size_t len = strlen (entry);
    unsigned long *ranks = arg;

    FUZZ_CHECK (len > 0 && len < DIST_HOSTFILE_ENTRY_MAX);
    FUZZ_CHECK (strpbrk (entry, "*#") == NULL);
    FUZZ_CHECK (repeat >= 1 && repeat <= 65535);
    *ranks += repeat;
    return 0;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size);
    unsigned long ranks = 0;
    static const size_t outsz[] = {DIST_HOSTFILE_ENTRY_MAX, 64, 1};
    int walked = dist_hostfile_walk (text, each, &ranks);

    FUZZ_CHECK (walked == 0 || walked == -1);
    for (size_t i = 0; i < sizeof (outsz) / sizeof (outsz[0]); i++) {
        char *out = malloc (outsz[i]); /* exactly outsz: a longer write is caught */
        if (dist_hostfile_first (text, out, outsz[i]) == 0) {
            FUZZ_CHECK (strnlen (out, outsz[i]) < outsz[i] && out[0] != '\0');
            FUZZ_CHECK (ranks > 0);
        }
        free (out);
    }
    free (text);
    return 0;
}
