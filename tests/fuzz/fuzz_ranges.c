/* fuzz_ranges.c - Slurm's range lists ("0-3,8", libdist/ranges.c) as the
 * GPU list (max 4095) and the core list (max 65535) parse them.  Input: the
 * list. */
#include "libdist/ranges.h"
#include "tests/fuzz/fuzz.h"

struct seen {
    long max;
    int calls;
    int stop_at; /* the callback's non-zero return ends the walk */
};

static int each (long lo, long hi, void *arg)
{
    struct seen *s = arg;

    FUZZ_CHECK (lo >= 0 && lo <= hi && hi <= s->max);
    return ++s->calls == s->stop_at;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *list = fuzz_string (data, size);
    static const long maxes[] = {4095, 65535};

    for (size_t i = 0; i < sizeof (maxes) / sizeof (maxes[0]); i++) {
        struct seen all = {maxes[i], 0, -1}, first = {maxes[i], 0, 1};
        int rc = dist_ranges_parse (list, maxes[i], each, &all);

        FUZZ_CHECK (rc == 0 || rc == -1);
        /* a list that parsed has a range, and stopping at the first one fails */
        if (rc == 0) {
            FUZZ_CHECK (all.calls > 0);
            FUZZ_CHECK (dist_ranges_parse (list, maxes[i], each, &first) == -1);
            FUZZ_CHECK (first.calls == 1);
        }
    }
    free (list);
    return 0;
}
