/* layout.c - rank-to-node maps for srun's distributions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

enum dist_distribution dist_distribution_parse (const char *text)
{
    size_t len;

    if (text == NULL || text[0] == '\0')
        return DIST_DIST_BLOCK;
    len = strcspn (text, ":,=");
    if (len == 5 && strncmp (text, "block", 5) == 0)
        return DIST_DIST_BLOCK;
    if (len == 6 && strncmp (text, "cyclic", 6) == 0)
        return DIST_DIST_CYCLIC;
    if (len == 5 && strncmp (text, "plane", 5) == 0)
        return DIST_DIST_PLANE;
    if (len == 9 && strncmp (text, "arbitrary", 9) == 0)
        return DIST_DIST_ARBITRARY;
    return DIST_DIST_UNKNOWN;
}

static int parse_u32 (const char **p, uint32_t *out)
{
    char *end;
    unsigned long v;

    if (**p < '0' || **p > '9')
        return -1;
    errno = 0;
    v = strtoul (*p, &end, 10);
    if (errno != 0 || v > UINT32_MAX)
        return -1;
    *out = (uint32_t) v;
    *p = end;
    return 0;
}

int dist_tasks_per_node_parse (const char *text, uint32_t *counts, size_t max)
{
    const char *p = text;
    size_t n = 0;

    if (text == NULL || *text == '\0')
        return -1;
    for (;;) {
        uint32_t tasks, repeat = 1;
        if (parse_u32 (&p, &tasks) < 0)
            return -1;
        if (strncmp (p, "(x", 2) == 0) {
            p += 2;
            if (parse_u32 (&p, &repeat) < 0 || *p != ')' || repeat == 0)
                return -1;
            p++;
        }
        if (repeat > max - n)
            return -1;
        while (repeat-- > 0)
            counts[n++] = tasks;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return -1;
    }
    return n > (size_t) INT32_MAX ? -1 : (int) n;
}

int dist_layout_assign (enum dist_distribution dist, uint32_t plane_size, const uint32_t *counts,
                        size_t nnodes, uint32_t *node_of_rank, size_t ntasks)
{
    uint32_t *left;
    uint64_t sum = 0;
    size_t i, rank = 0, node = 0, chunk;

    for (i = 0; i < nnodes; i++)
        sum += counts[i];
    if (sum != ntasks || nnodes == 0)
        return -1;
    if (dist == DIST_DIST_BLOCK) {
        for (i = 0; i < nnodes; i++)
            for (uint32_t k = 0; k < counts[i]; k++)
                node_of_rank[rank++] = (uint32_t) i;
        return 0;
    }
    if (dist == DIST_DIST_CYCLIC)
        chunk = 1;
    else if (dist == DIST_DIST_PLANE && plane_size > 0)
        chunk = plane_size;
    else
        return -1;
    left = malloc (nnodes * sizeof (*left));
    if (left == NULL)
        return -1;
    memcpy (left, counts, nnodes * sizeof (*left));
    /* Round-robin, chunk ranks at a time, skipping nodes that are full;
     * every turn places at least one rank, so this ends. */
    while (rank < ntasks) {
        size_t take = chunk < left[node] ? chunk : left[node];
        for (i = 0; i < take; i++)
            node_of_rank[rank++] = (uint32_t) node;
        left[node] -= (uint32_t) take;
        node = (node + 1) % nnodes;
    }
    free (left);
    return 0;
}

void dist_step_layout_free (struct dist_step_layout *l)
{
    for (uint32_t i = 0; l->names != NULL && i < l->nnodes; i++)
        free (l->names[i]);
    free (l->names);
    free (l->node_of_rank);
    memset (l, 0, sizeof (*l));
}
