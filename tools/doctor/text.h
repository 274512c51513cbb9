/* text.h - what the checks share: bounded lists, problem lines, and
 * the checks of one node (node.c). */
#ifndef DOCTOR_TEXT_H
#define DOCTOR_TEXT_H

#include "doctor.h"

/* Add a problem line; past DOCTOR_PROBLEMS_MAX it is only counted. */
void doctor_problem (struct doctor_result *res, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

/* Add a warning line; past DOCTOR_WARNINGS_MAX it is only counted. */
void doctor_warning (struct doctor_result *res, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

/* Append sep and item to a bounded list, ending it with "..." once full;
 * doctor_list_add with ",". */
void doctor_list_join (char *list, size_t size, const char *sep, const char *item);
void doctor_list_add (char *list, size_t size, const char *item);

/* Add item to a comma list unless it is there already ("?" for ""). */
void doctor_set_add (char *list, size_t size, const char *item);

/* Values as sorted ranges, "0-3,8" (v is sorted in place). */
void doctor_ranges_text (long *v, size_t n, char *out, size_t size);

/* The ranks of recs[idx[0..n)] as ranges. */
void doctor_ranks_of (const struct doctor_rank *recs, const size_t *idx, size_t n, char *out,
                      size_t size);

/* One node's ranks, recs[idx[0..k)]: fill its summary, add its problems;
 * only the first bound of them are checked against each other. */
void doctor_check_node (struct doctor_result *res, struct doctor_node_summary *sum,
                        const struct doctor_rank *recs, const size_t *idx, size_t k, size_t bound);

/* One node's findings on its collective stack (stack.c's lines that its
 * ranks, recs[idx[0..k)], sent), each once, as problems and warnings. */
void doctor_check_stack (struct doctor_result *res, struct doctor_node_summary *sum,
                         const struct doctor_rank *recs, const size_t *idx, size_t k);

#endif /* DOCTOR_TEXT_H */
