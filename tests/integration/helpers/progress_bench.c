/* progress_bench.c - what dtshim_progress() costs a training step, with the
 * watchdog on (DIST_TRAIN_WATCHDOG set by the caller); a world of one. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dtshim.h"

int main (int argc, char **argv)
{
    long n = argc > 1 ? atol (argv[1]) : 10000000, i;
    struct timespec a, b;

    if (dtshim_init () != DTSHIM_OK) {
        fprintf (stderr, "dtshim_init: %s\n", dtshim_last_error ());
        return 1;
    }
    clock_gettime (CLOCK_MONOTONIC, &a);
    for (i = 0; i < n; i++)
        dtshim_progress ();
    clock_gettime (CLOCK_MONOTONIC, &b);
    printf ("dtshim_progress() from C, watchdog %g s: %.1f ns per call (%ld calls)\n",
            dtshim_watchdog_limit (), ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n,
            n);
    return dtshim_finalize () == DTSHIM_OK ? 0 : 1;
}
