/* layout.c - where each rank should run, from the step's environment,
 * so that rank 0 can name the node of a rank that never checked in. */
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "libdist/handover.h"
#include "libdist/hostlist.h"
#include "libdist/layout.h"

/* Where doctor_hostlist_expand's names go. */
struct names {
    char (*name)[DOCTOR_NAME_MAX];
    size_t max, n;
};

static int add_name (const char *name, void *arg)
{
    struct names *names = arg;

    /* a name the report has no room for is refused, not cut to another node's */
    if (names->n >= names->max || strlen (name) >= DOCTOR_NAME_MAX)
        return -1;
    memcpy (names->name[names->n++], name, strlen (name) + 1);
    return 0;
}

int doctor_hostlist_expand (const char *text, char (*names)[DOCTOR_NAME_MAX], size_t max)
{
    struct names out = {names, max < DOCTOR_RANKS_MAX ? max : DOCTOR_RANKS_MAX, 0};

    if (dist_hostlist_each (text, 0, add_name, &out) != 0)
        return -1;
    return (int) out.n;
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

/* The nodes' names of nodelist, as many as the plugin's layout counts (at most one a
 * rank), into out (printable: the environment is the user's). */
static int layout_names (const char *nodelist, uint32_t count, struct doctor_layout *out)
{
    int nnodes;

    if (nodelist == NULL || (out->node = calloc (count, sizeof (*out->node))) == NULL
        || (nnodes = doctor_hostlist_expand (nodelist, out->node, count)) <= 0)
        return -1;
    for (int i = 0; i < nnodes; i++)
        doctor_printable (out->node[i], DOCTOR_NAME_MAX, out->node[i]);
    out->nnodes = (size_t) nnodes;
    return 0;
}

int doctor_layout_from_plugin (const char *nodelist, const char *text, unsigned long job_id,
                               unsigned long step_id, struct doctor_layout *out)
{
    const char *p = text;
    uint32_t job, step, nodes, ranks;

    memset (out, 0, sizeof (*out));
    if (text == NULL || dist_layout_text_header (&p, &job, &step, &nodes, &ranks) < 0
        || job != job_id || step != step_id || ranks == 0 || ranks > DOCTOR_RANKS_MAX || nodes == 0
        || nodes > ranks || layout_names (nodelist, nodes, out) < 0 || nodes != out->nnodes
        || (out->node_of_rank = calloc (ranks, sizeof (*out->node_of_rank))) == NULL
        || dist_layout_text_parse (text, job, step, nodes, ranks, out->node_of_rank) < 0) {
        doctor_layout_free (out);
        return -1;
    }
    out->nranks = ranks;
    return 0;
}
