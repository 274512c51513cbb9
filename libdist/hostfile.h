/* hostfile.h - the entries of a Slurm hostfile (SLURM_HOSTFILE), which name
 * the node of each rank, in rank order, under the arbitrary distribution. */
#ifndef DIST_HOSTFILE_H
#define DIST_HOSTFILE_H

#include <stddef.h>

#define DIST_HOSTFILE_ENTRY_MAX 1024

/* Call each(entry, repeat, arg) for every entry of a hostfile's text, in
 * order: lines hold one entry or several separated by commas or blanks, '#'
 * starts a comment, and "name*N" repeats a name N times (1..65535).  An
 * entry may still be a hostlist expression ("node[3-4]"): the caller expands
 * it.  Returns 0, or -1 when an entry does not fit or its repeat count does
 * not parse, or when each() returns non-zero. */
int dist_hostfile_walk (const char *text,
                        int (*each) (const char *entry, unsigned repeat, void *arg), void *arg);

/* Copy the first entry into out.  Returns -1 when there is none or it does
 * not fit. */
int dist_hostfile_first (const char *text, char *out, size_t outsz);

#endif /* DIST_HOSTFILE_H */
