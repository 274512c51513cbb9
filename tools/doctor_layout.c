/* doctor_layout.c - where each rank should run, from the step's environment,
 * so that rank 0 can name the node of a rank that never checked in. */
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "libdist/layout.h"

/* Append "prefix<number>suffix" for every number of one bracket's ranges
 * ("1-3,07"); zero-padded numbers keep their width, as Slurm's do. */
static int expand_bracket (const char *prefix, size_t plen, const char *ranges, size_t rlen,
                           const char *suffix, size_t slen, char (*names)[DOCTOR_NAME_MAX],
                           size_t max, size_t *n)
{
    const char *p = ranges, *end = ranges + rlen;

    while (p < end) {
        unsigned long lo, hi, v;
        char *stop;
        int width;

        if (*p < '0' || *p > '9')
            return -1;
        lo = strtoul (p, &stop, 10);
        width = (int) (stop - p);
        hi = lo;
        if (stop < end && *stop == '-') {
            if (stop + 1 >= end || stop[1] < '0' || stop[1] > '9')
                return -1;
            hi = strtoul (stop + 1, &stop, 10);
        }
        if (stop > end || hi < lo || hi > 99999999 || hi - lo >= max - *n)
            return -1;
        for (v = lo; v <= hi; v++) {
            int len = snprintf (names[*n], DOCTOR_NAME_MAX, "%.*s%0*lu%.*s", (int) plen, prefix,
                                width > 1 && p[0] == '0' ? width : 1, v, (int) slen, suffix);
            if (len < 0 || len >= DOCTOR_NAME_MAX)
                return -1;
            (*n)++;
        }
        p = stop;
        if (p < end && (*p++ != ',' || p == end))
            return -1;
    }
    return 0;
}

/* One host expression of len bytes: a name, or "prefix[ranges]suffix". */
static int expand_one (const char *expr, size_t len, char (*names)[DOCTOR_NAME_MAX], size_t max,
                       size_t *n)
{
    const char *open = memchr (expr, '[', len), *close;

    if (open == NULL) {
        if (memchr (expr, ']', len) != NULL || len >= DOCTOR_NAME_MAX || *n >= max)
            return -1;
        memcpy (names[*n], expr, len);
        names[(*n)++][len] = '\0';
        return 0;
    }
    close = memchr (open, ']', len - (size_t) (open - expr));
    /* several brackets in one name are rare in practice: refused, not guessed */
    if (close == NULL || memchr (close + 1, '[', len - (size_t) (close + 1 - expr)) != NULL
        || memchr (close + 1, ']', len - (size_t) (close + 1 - expr)) != NULL)
        return -1;
    return expand_bracket (expr, (size_t) (open - expr), open + 1, (size_t) (close - open - 1),
                           close + 1, (size_t) (expr + len - close - 1), names, max, n);
}

int doctor_hostlist_expand (const char *text, char (*names)[DOCTOR_NAME_MAX], size_t max)
{
    const char *p = text, *start;
    size_t n = 0;
    int depth;

    if (text == NULL || *text == '\0')
        return -1;
    while (*p != '\0') {
        start = p;
        /* a comma inside brackets belongs to the ranges */
        for (depth = 0; *p != '\0' && (depth > 0 || *p != ','); p++)
            depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
        if (p == start || expand_one (start, (size_t) (p - start), names, max, &n) < 0)
            return -1;
        if (*p == ',' && *++p == '\0')
            return -1;
    }
    return n > (size_t) DOCTOR_NODES_MAX ? -1 : (int) n;
}

void doctor_layout_free (struct doctor_layout *l)
{
    free (l->node);
    free (l->node_of_rank);
    memset (l, 0, sizeof (*l));
}

int doctor_layout_build (const char *nodelist, const char *tasks_per_node, const char *distribution,
                         const char *plane_size, struct doctor_layout *out)
{
    uint32_t *counts = NULL;
    uint64_t total = 0;
    unsigned long plane = 0;
    int nnodes, ncounts;
    size_t i;

    memset (out, 0, sizeof (*out));
    if (nodelist == NULL || tasks_per_node == NULL)
        return -1;
    out->node = calloc (DOCTOR_NODES_MAX, sizeof (*out->node));
    counts = calloc (DOCTOR_NODES_MAX, sizeof (*counts));
    if (out->node == NULL || counts == NULL)
        goto fail;
    nnodes = doctor_hostlist_expand (nodelist, out->node, DOCTOR_NODES_MAX);
    ncounts = dist_tasks_per_node_parse (tasks_per_node, counts, DOCTOR_NODES_MAX);
    if (nnodes <= 0 || ncounts != nnodes)
        goto fail;
    /* (the names go into the report: the environment is the user's) */
    for (i = 0; i < (size_t) nnodes; i++)
        doctor_printable (out->node[i], DOCTOR_NAME_MAX, out->node[i]);
    for (i = 0; i < (size_t) nnodes; i++)
        total += counts[i];
    if (total == 0 || total > DOCTOR_RANKS_MAX)
        goto fail;
    out->nnodes = (size_t) nnodes;
    out->nranks = (size_t) total;
    out->node_of_rank = calloc (out->nranks, sizeof (*out->node_of_rank));
    if (plane_size != NULL)
        plane = strtoul (plane_size, NULL, 10);
    if (out->node_of_rank == NULL
        || dist_layout_assign (dist_distribution_parse (distribution),
                               plane > 0 && plane < 1000000 ? (uint32_t) plane : 0, counts,
                               out->nnodes, out->node_of_rank, out->nranks)
               < 0)
        goto fail;
    free (counts);
    return 0;
fail:
    free (counts);
    doctor_layout_free (out);
    return -1;
}
