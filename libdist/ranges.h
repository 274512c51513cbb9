/* ranges.h - Slurm's integer range lists ("0-3,8"), parsed strictly.
 *
 * Slurm writes core and GPU lists this way; they reach slurmstepd through
 * the job's environment, so every byte is checked: digits, "lo-hi" with
 * lo <= hi, values up to a bound, commas between, nothing else.
 */
#ifndef DIST_RANGES_H
#define DIST_RANGES_H

/* Call each(lo, hi, arg) for every range of list, in order (a single value
 * is lo == hi), stopping at the first non-zero return.  0 when the whole
 * list parsed and every call returned 0; -1 otherwise. */
int dist_ranges_parse (const char *list, long max, int (*each) (long lo, long hi, void *arg),
                       void *arg);

#endif /* DIST_RANGES_H */
