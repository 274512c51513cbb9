/* hostfile.h - the first entry of a Slurm hostfile (SLURM_HOSTFILE), which
 * names the node of rank 0 under the arbitrary distribution. */
#ifndef DIST_HOSTFILE_H
#define DIST_HOSTFILE_H

#include <stddef.h>

/* Copy the first host entry of a hostfile's text into out: lines hold one
 * entry or several separated by commas or blanks; '#' starts a comment and
 * "name*N" repeats a name.  The entry may still be a hostlist expression
 * ("node[3-4]"): the caller expands it.  Returns -1 when there is no entry
 * or it does not fit. */
int dist_hostfile_first (const char *text, char *out, size_t outsz);

#endif /* DIST_HOSTFILE_H */
