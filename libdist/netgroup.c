/* netgroup.c - the step's nodes in the network's groups, and the rank order that follows
 * them (see netgroup.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handover.h"
#include "hostlist.h"
#include "netgroup.h"

#define UNPLACED UINT32_MAX

struct named {
    const char *name;
    uint32_t index;
};

static int by_name (const void *a, const void *b)
{
    return strcmp (((const struct named *) a)->name, ((const struct named *) b)->name);
}

/* One pass over the topology's records. */
struct placing {
    struct named *sorted; /* the step's nodes by name */
    uint32_t nnodes;
    uint32_t *group_of_node;
    uint32_t ngroups;
    uint32_t group; /* the record's group, once one of its nodes is the step's */
    bool hit;
};

static int place_node (const char *name, void *arg)
{
    struct placing *pl = arg;
    struct named key = {.name = name}, *found;

    found = bsearch (&key, pl->sorted, pl->nnodes, sizeof (key), by_name);
    if (found == NULL || pl->group_of_node[found->index] != UNPLACED)
        return 0;
    if (!pl->hit) {
        pl->group = pl->ngroups++;
        pl->hit = true;
    }
    pl->group_of_node[found->index] = pl->group;
    return 0;
}

/* The node list of a record that is a group (a leaf switch or a base block) in line
 * (split in place), or NULL for any other record. */
static char *leaf_nodes (char *line)
{
    char *save = NULL, *word, *nodes = NULL;
    bool leaf = false, first = true;

    for (word = strtok_r (line, " \t", &save); word != NULL; word = strtok_r (NULL, " \t", &save)) {
        if (first && strncmp (word, "BlockName=", 10) == 0)
            leaf = true;
        else if (first && strncmp (word, "SwitchName=", 11) != 0)
            return NULL;
        else if (strcmp (word, "Level=0") == 0)
            leaf = true;
        else if (strncmp (word, "Nodes=", 6) == 0)
            nodes = word + 6;
        first = false;
    }
    return leaf ? nodes : NULL;
}

/* Each record of text, one a line; 1 when some record is a group, 0 when none, -1 (err)
 * for a group's node list Slurm would not write. */
static int place_records (const char *text, struct placing *pl, char *err, size_t errsz)
{
    const char *p = text, *end;
    char *line, *nodes;
    int any = 0, rc = 0;

    while (rc == 0 && *p != '\0') {
        end = p + strcspn (p, "\n");
        if ((line = strndup (p, (size_t) (end - p))) == NULL) {
            snprintf (err, errsz, "out of memory");
            return -1;
        }
        if ((nodes = leaf_nodes (line)) != NULL) {
            any = 1;
            pl->hit = false;
            if (dist_hostlist_each (nodes, DIST_HOSTLIST_LOOSE, place_node, pl) < 0) {
                snprintf (err, errsz, "Slurm's topology has a node list that does not parse: %.64s",
                          nodes);
                rc = -1;
            }
        }
        free (line);
        p = *end == '\n' ? end + 1 : end;
    }
    return rc < 0 ? -1 : any;
}

int dist_netgroup_assign (const char *text, char *const *names, uint32_t nnodes,
                          uint32_t *group_of_node, char *err, size_t errsz)
{
    struct placing pl = {.nnodes = nnodes, .group_of_node = group_of_node};
    uint32_t i;
    int any;

    if ((pl.sorted = calloc (nnodes > 0 ? nnodes : 1, sizeof (*pl.sorted))) == NULL) {
        snprintf (err, errsz, "out of memory");
        return -1;
    }
    for (i = 0; i < nnodes; i++) {
        pl.sorted[i] = (struct named){.name = names[i], .index = i};
        group_of_node[i] = UNPLACED;
    }
    qsort (pl.sorted, nnodes, sizeof (*pl.sorted), by_name);
    any = place_records (text, &pl, err, errsz);
    free (pl.sorted);
    if (any <= 0) {
        memset (group_of_node, 0, nnodes * sizeof (*group_of_node));
        return any;
    }
    /* (nodes the topology leaves out share the last group) */
    pl.hit = false;
    for (i = 0; i < nnodes; i++)
        if (group_of_node[i] == UNPLACED) {
            group_of_node[i] = pl.ngroups;
            pl.hit = true;
        }
    return (int) pl.ngroups + (pl.hit ? 1 : 0);
}

char *dist_netgroup_text (uint32_t job_id, uint32_t step_id, uint32_t ngroups,
                          const uint32_t *group_of_node, uint32_t nnodes)
{
    char *text = malloc (DIST_LAYOUT_TEXT_MAX);
    size_t len;

    if (text == NULL)
        return NULL;
    len = (size_t) snprintf (
        text, DIST_LAYOUT_TEXT_MAX,
        "step=%" PRIu32 ".%" PRIu32 " groups=%" PRIu32 " nodes=%" PRIu32 " of=", job_id, step_id,
        ngroups, nnodes);
    if (dist_runs_append (text, DIST_LAYOUT_TEXT_MAX, &len, group_of_node, nnodes, ngroups) < 0) {
        free (text);
        return NULL;
    }
    return text;
}

int dist_netgroup_text_parse (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                              uint32_t *group_of_node, uint32_t *ngroups)
{
    const char *p = text;
    uint32_t job, step, groups, nodes;

    if (text == NULL || strnlen (text, DIST_LAYOUT_TEXT_MAX) >= DIST_LAYOUT_TEXT_MAX
        || !dist_take_word (&p, "step=") || dist_take_u32 (&p, ".", &job) < 0
        || !dist_take_word (&p, ".") || dist_take_u32 (&p, " ", &step) < 0
        || !dist_take_word (&p, " groups=") || dist_take_u32 (&p, " ", &groups) < 0
        || !dist_take_word (&p, " nodes=") || dist_take_u32 (&p, " ", &nodes) < 0
        || !dist_take_word (&p, " of=") || job != job_id || step != step_id || nodes != nnodes
        || groups == 0 || groups > nnodes || dist_runs_take (&p, groups, nnodes, group_of_node) < 0
        || *p != '\0')
        return -1;
    *ngroups = groups;
    return 0;
}

void dist_netorder_free (struct dist_netorder *o)
{
    free (o->new_rank);
    free (o->new_node);
    free (o->group_of_node);
    free (o->group_rank);
    free (o->group_size);
    memset (o, 0, sizeof (*o));
}

/* Number n items (group_of[i] their groups, each below ngroups) by group, each group's in
 * their order: to[i] is item i's place.  count is scratch of ngroups. */
static void sort_by_group (const uint32_t *group_of, uint32_t n, uint32_t ngroups, uint32_t *count,
                           uint32_t *to)
{
    uint32_t i, g, sum = 0, c;

    memset (count, 0, ngroups * sizeof (*count));
    for (i = 0; i < n; i++)
        count[group_of[i]]++;
    for (g = 0; g < ngroups; g++) {
        c = count[g];
        count[g] = sum;
        sum += c;
    }
    for (i = 0; i < n; i++)
        to[i] = count[group_of[i]]++;
}

static bool netorder_alloc (struct dist_netorder *o, uint32_t **scratch)
{
    uint32_t r = o->nranks > 0 ? o->nranks : 1, n = o->nnodes > 0 ? o->nnodes : 1;

    o->new_rank = calloc (r, sizeof (uint32_t));
    o->new_node = calloc (n, sizeof (uint32_t));
    o->group_of_node = calloc (n, sizeof (uint32_t));
    o->group_rank = calloc (r, sizeof (uint32_t));
    o->group_size = calloc (o->ngroups, sizeof (uint32_t));
    *scratch = calloc (r > o->ngroups ? r : o->ngroups, sizeof (uint32_t));
    return o->new_rank != NULL && o->new_node != NULL && o->group_of_node != NULL
           && o->group_rank != NULL && o->group_size != NULL && *scratch != NULL;
}

/* Each rank's place in its group and the groups' sizes, counted in RANK order, and the
 * nodes numbered by the first RANK each holds; rank_group[r] is Slurm rank r's group,
 * node_of_rank the layout, by_new scratch of nranks. */
static void count_members (struct dist_netorder *o, const uint32_t *rank_group,
                           const uint32_t *node_of_rank, uint32_t *by_new)
{
    uint32_t r, node, next = 0;

    for (r = 0; r < o->nranks; r++)
        by_new[o->new_rank[r]] = r;
    for (node = 0; node < o->nnodes; node++)
        o->new_node[node] = UNPLACED;
    for (r = 0; r < o->nranks; r++) {
        o->group_rank[by_new[r]] = o->group_size[rank_group[by_new[r]]]++;
        node = node_of_rank[by_new[r]];
        if (o->new_node[node] == UNPLACED)
            o->new_node[node] = next++;
    }
    /* (a node without ranks, which no step has, goes last) */
    for (node = 0; node < o->nnodes; node++)
        if (o->new_node[node] == UNPLACED)
            o->new_node[node] = next++;
    o->slurm_rank0 = o->nranks > 0 ? by_new[0] : 0;
}

static bool in_range (const uint32_t *v, uint32_t n, uint32_t bound)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] >= bound)
            return false;
    return true;
}

int dist_netorder_make (struct dist_netorder *o, int by_group, uint32_t ngroups,
                        const uint32_t *group_of_node, uint32_t nnodes,
                        const uint32_t *node_of_rank, uint32_t nranks)
{
    uint32_t *scratch = NULL, *rank_group = NULL, i;
    int rc = -1;

    memset (o, 0, sizeof (*o));
    o->nnodes = nnodes, o->nranks = nranks, o->ngroups = ngroups;
    if (ngroups == 0 || !in_range (group_of_node, nnodes, ngroups)
        || !in_range (node_of_rank, nranks, nnodes) || !netorder_alloc (o, &scratch)
        || (rank_group = calloc (nranks > 0 ? nranks : 1, sizeof (*rank_group))) == NULL)
        goto out;
    memcpy (o->group_of_node, group_of_node, nnodes * sizeof (*group_of_node));
    for (i = 0; i < nranks; i++)
        rank_group[i] = group_of_node[node_of_rank[i]];
    if (by_group)
        sort_by_group (rank_group, nranks, ngroups, scratch, o->new_rank);
    else
        for (i = 0; i < nranks; i++)
            o->new_rank[i] = i;
    count_members (o, rank_group, node_of_rank, scratch);
    rc = 0;
out:
    free (scratch);
    free (rank_group);
    if (rc < 0)
        dist_netorder_free (o);
    return rc;
}

uint32_t dist_netgroup_ring_crossings (const uint32_t *group_in_order, uint32_t n)
{
    uint32_t i, crossings = 0;

    for (i = 0; n > 1 && i < n; i++)
        if (group_in_order[i] != group_in_order[(i + 1) % n])
            crossings++;
    return crossings;
}
