/* ranges.c - strict parsing of Slurm's "0-3,8" lists. */
#include <errno.h>
#include <stdlib.h>

#include "ranges.h"

static int parse_value (const char **p, long max, long *v)
{
    char *end;

    if (**p < '0' || **p > '9')
        return -1;
    errno = 0;
    *v = strtol (*p, &end, 10);
    if (errno != 0 || *v > max)
        return -1;
    *p = end;
    return 0;
}

int dist_ranges_parse (const char *list, long max, int (*each) (long lo, long hi, void *arg),
                       void *arg)
{
    const char *p = list;

    if (list == NULL || *list == '\0')
        return -1;
    for (;;) {
        long lo, hi;
        if (parse_value (&p, max, &lo) < 0)
            return -1;
        hi = lo;
        if (*p == '-') {
            p++;
            if (parse_value (&p, max, &hi) < 0 || hi < lo)
                return -1;
        }
        if (each (lo, hi, arg) != 0)
            return -1;
        if (*p == '\0')
            return 0;
        if (*p++ != ',')
            return -1;
    }
}
