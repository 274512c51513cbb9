/* hostlist.h - Slurm's compressed node lists ("node[01-03,07],gpu5"), expanded strictly.
 *
 * Slurm writes a step's nodes (SLURM_STEP_NODELIST) as expressions separated by commas:
 * a name, or a prefix, one bracket of ranges and a suffix ("gpu[1-3,7]-ib").  A range is
 * a number or "lo-hi" with lo <= hi, of at most nine digits; a number written with
 * leading zeros keeps its width ("n[08-10]" is n08 n09 n10, as Slurm pads lo's width).
 * The list reaches us through the job's environment, so nothing else passes: no empty
 * expression, no bracket left open or closed twice, no empty range ("n[1,]"), no second
 * bracket in one expression (Slurm reads "a[1-2]b[3-4]" as a product but never writes
 * one), and no blank or tab in a name (Slurm's reader splits on them).  A name is at most
 * DIST_HOSTLIST_NAME_MAX - 1 bytes.
 *
 * Slurm's own reader refuses a suffix after the bracket; it never writes one either, and
 * the callers here have always taken "gpu[1-2]-ib" as gpu1-ib gpu2-ib, so it is kept.
 *
 * Both calls walk the list one expression at a time, each checked whole before its first
 * name: a caller that stops early (the nth name) is not refused for what follows.
 */
#ifndef DIST_HOSTLIST_H
#define DIST_HOSTLIST_H

#include <stddef.h>

/* The longest name with its NUL: a DNS name has at most 253 characters. */
#define DIST_HOSTLIST_NAME_MAX 256
/* How many names dist_hostlist_each gives at most: a hostile "n[0-999999999]" is refused
 * before its first name.  A step of a million ranks on as many nodes still fits (the
 * doctor's DOCTOR_RANKS_MAX). */
#define DIST_HOSTLIST_MAX 1048576

/* Read the list as slurm_hostlist_create does: blanks and tabs separate expressions too,
 * and empty expressions are skipped (so "" is a list of no names). */
#define DIST_HOSTLIST_LOOSE 0x1

/* Call each (name, arg) for every name of list in order (name is NUL-terminated, valid
 * during the call only), until each returns non-zero: that value is returned.  0 when the
 * whole list was walked; -1 when it is not a list Slurm writes (flags: 0 or
 * DIST_HOSTLIST_LOOSE), or names more than DIST_HOSTLIST_MAX. */
int dist_hostlist_each (const char *list, int flags, int (*each) (const char *name, void *arg),
                        void *arg);

/* Name n (from 0) of list into out (outlen bytes), computed without producing the names
 * before it, so a range of any size costs no more than its text.  0, or -1 when the list
 * is not one Slurm writes up to that name, is shorter than n + 1 names, or the name does
 * not fit. */
int dist_hostlist_nth (const char *list, long n, char *out, size_t outlen);

#endif /* DIST_HOSTLIST_H */
