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

int dist_netgroup_text_runs (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                             struct dist_runs *groups, uint32_t *ngroups)
{
    const char *p = text;
    uint32_t job, step, n, nodes;

    memset (groups, 0, sizeof (*groups));
    if (text == NULL || strnlen (text, DIST_LAYOUT_TEXT_MAX) >= DIST_LAYOUT_TEXT_MAX
        || !dist_take_word (&p, "step=") || dist_take_u32 (&p, ".", &job) < 0
        || !dist_take_word (&p, ".") || dist_take_u32 (&p, " ", &step) < 0
        || !dist_take_word (&p, " groups=") || dist_take_u32 (&p, " ", &n) < 0
        || !dist_take_word (&p, " nodes=") || dist_take_u32 (&p, " ", &nodes) < 0
        || !dist_take_word (&p, " of=") || job != job_id || step != step_id || nodes != nnodes
        || n == 0 || n > nnodes || dist_runs_read (p, n, nnodes, groups) < 0)
        return -1;
    *ngroups = n;
    return 0;
}

int dist_netgroup_text_parse (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                              uint32_t *group_of_node, uint32_t *ngroups)
{
    struct dist_runs runs;

    if (dist_netgroup_text_runs (text, job_id, step_id, nnodes, &runs, ngroups) < 0)
        return -1;
    dist_runs_expand (&runs, group_of_node);
    dist_runs_free (&runs);
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

/* ---- one node's share of the order, from the runs ---------------------------------- */

/* Which values count: those equal to g, or those below it. */
enum which { EQUAL, BELOW };

/* The offsets into a run (its `each` copies of each term together) whose term's value is
 * g (EQUAL) or below g (BELOW): one span [*lo, *hi), possibly empty. */
static void run_span (const struct dist_run *run, uint32_t g, enum which which, uint64_t *lo,
                      uint64_t *hi)
{
    bool up = run->last >= run->first;
    uint64_t terms = (uint64_t) (up ? run->last - run->first : run->first - run->last) + 1, t0, t1;

    if (which == EQUAL) {
        if (up ? g < run->first || g > run->last : g > run->first || g < run->last) {
            *lo = *hi = 0;
            return;
        }
        t0 = up ? g - run->first : run->first - g;
        t1 = t0 + 1;
    } else if (up) {
        t0 = 0; /* first, first+1, ... below g: a head */
        t1 = g <= run->first ? 0 : g - run->first < terms ? g - run->first : terms;
    } else {
        t1 = terms; /* first, first-1, ... below g from term first-g+1 on: a tail */
        t0 = run->first < g                            ? 0
             : (uint64_t) (run->first - g) + 1 < terms ? run->first - g + 1
                                                       : terms;
    }
    *lo = t0 * run->each;
    *hi = t1 * run->each;
}

/* How many of values [a, b) of r are g (or below g). */
static uint64_t count_values (const struct dist_runs *r, uint64_t a, uint64_t b, uint32_t g,
                              enum which which)
{
    uint64_t n = 0, lo, hi, s, e;

    if (a >= b)
        return 0;
    for (uint32_t k = dist_runs_find (r, (uint32_t) a); k < r->n && r->run[k].start < b; k++) {
        run_span (&r->run[k], g, which, &lo, &hi);
        s = r->run[k].start + lo;
        e = r->run[k].start + hi;
        s = s > a ? s : a;
        e = e < b ? e : b;
        n += e > s ? e - s : 0;
    }
    return n;
}

/* Nodes [a, b) whose group is g (or below g); groups NULL: every node is in group 0. */
static uint64_t count_nodes (const struct dist_runs *groups, uint64_t a, uint64_t b, uint32_t g,
                             enum which which)
{
    if (groups != NULL)
        return count_values (groups, a, b, g, which);
    if (a >= b || (which == EQUAL ? g != 0 : g == 0))
        return 0;
    return b - a;
}

/* Slurm ranks [0, end) whose node's group is g (or below g): each run of the layout holds
 * its terms' nodes `each` times; whole terms count their nodes, a cut one its own. */
static uint64_t count_ranks (const struct dist_runs *layout, const struct dist_runs *groups,
                             uint64_t end, uint32_t g, enum which which)
{
    uint64_t n = 0;

    for (uint32_t k = 0; k < layout->n && layout->run[k].start < end; k++) {
        const struct dist_run *run = &layout->run[k];
        uint64_t len = dist_run_length (run),
                 take = end - run->start < len ? end - run->start : len;
        uint64_t whole = take / run->each, cut = take % run->each, lo, hi;
        bool up = run->last >= run->first;
        if (whole > 0) {
            lo = up ? run->first : run->first - (whole - 1);
            hi = up ? run->first + whole : run->first + 1;
            n += count_nodes (groups, lo, hi, g, which) * run->each;
        }
        if (cut > 0) {
            uint32_t node = dist_run_value (run, (uint32_t) (whole * run->each));
            n += count_nodes (groups, node, (uint64_t) node + 1, g, which) * cut;
        }
    }
    return n;
}

/* Whether every node first appears in node order (0, 1, 2, ...), each of nnodes: then a
 * node's place among the nodes by first rank is its own index. */
static bool nodes_in_order (const struct dist_runs *layout, uint32_t nnodes)
{
    uint64_t next = 0; /* nodes seen: 0 .. next-1 */

    for (uint32_t k = 0; k < layout->n; k++) {
        const struct dist_run *run = &layout->run[k];
        if (run->last >= run->first) {
            if (run->first > next)
                return false;
            if ((uint64_t) run->last + 1 > next)
                next = (uint64_t) run->last + 1;
        } else if (run->first > next) {
            return false; /* going down, only its first term may be new: the next node */
        } else if (run->first == next) {
            next++;
        }
    }
    return next == nnodes;
}

/* Nodes of a run's first m terms (first, first+1, ... or first, first-1, ...) in group g. */
static uint64_t head_nodes_in (const struct dist_runs *groups, const struct dist_run *run,
                               uint64_t m, uint32_t g)
{
    if (run->last >= run->first)
        return count_nodes (groups, run->first, run->first + m, g, EQUAL);
    return count_nodes (groups, run->first + 1 - m, (uint64_t) run->first + 1, g, EQUAL);
}

/* The first Slurm rank whose node is in group g: *rank, or false when none. */
static bool first_rank_in (const struct dist_runs *layout, const struct dist_runs *groups,
                           uint32_t g, uint32_t *rank)
{
    for (uint32_t k = 0; k < layout->n; k++) {
        const struct dist_run *run = &layout->run[k];
        uint64_t lo = 0, hi = dist_run_length (run) / run->each, mid;
        if (head_nodes_in (groups, run, hi, g) == 0)
            continue;
        /* the fewest terms that reach one in g: none of the first lo, some of the first hi */
        while (hi - lo > 1) {
            mid = lo + (hi - lo) / 2;
            if (head_nodes_in (groups, run, mid, g) > 0)
                hi = mid;
            else
                lo = mid;
        }
        *rank = run->start + (uint32_t) (hi - 1) * run->each;
        return true;
    }
    return false;
}

void dist_local_order_free (struct dist_local_order *o)
{
    free (o->rank);
    free (o->group_rank);
    memset (o, 0, sizeof (*o));
}

/* Whether the runs are a layout and groups that belong together, node `me` one of the
 * nodes, and the nodes come in their own order. */
static bool runs_usable (const struct dist_runs *layout, const struct dist_runs *groups,
                         uint32_t ngroups, uint32_t me)
{
    uint32_t nnodes = layout->bound;

    if (ngroups == 0 || me >= nnodes)
        return false;
    if (groups != NULL ? groups->count != nnodes || groups->bound != ngroups : ngroups != 1)
        return false;
    return nodes_in_order (layout, nnodes);
}

/* Under by_group, RANK 0 is the first Slurm rank of the lowest group that has one. */
static int rank0_by_group (const struct dist_runs *layout, const struct dist_runs *groups,
                           uint32_t ngroups, uint32_t *slurm_rank0)
{
    uint32_t lowest = 0;

    while (lowest < ngroups && count_nodes (groups, 0, layout->bound, lowest, EQUAL) == 0)
        lowest++;
    return lowest < ngroups && first_rank_in (layout, groups, lowest, slurm_rank0) ? 0 : -1;
}

int dist_local_order_make (struct dist_local_order *o, int by_group, const struct dist_runs *layout,
                           const struct dist_runs *groups, uint32_t ngroups, uint32_t me,
                           const uint32_t *mine, uint32_t nlocal)
{
    uint32_t nnodes = layout->bound, nranks = layout->count;
    uint64_t below;

    memset (o, 0, sizeof (*o));
    if (!runs_usable (layout, groups, ngroups, me))
        return -1;
    o->ngroups = ngroups;
    o->nlocal = nlocal;
    o->group = groups != NULL ? dist_runs_value (groups, me) : 0;
    o->rank = calloc (nlocal > 0 ? nlocal : 1, sizeof (*o->rank));
    o->group_rank = calloc (nlocal > 0 ? nlocal : 1, sizeof (*o->group_rank));
    if (o->rank == NULL || o->group_rank == NULL
        || (by_group && rank0_by_group (layout, groups, ngroups, &o->slurm_rank0) < 0))
        goto fail;
    o->group_size = (uint32_t) count_ranks (layout, groups, nranks, o->group, EQUAL);
    below = by_group ? count_ranks (layout, groups, nranks, o->group, BELOW) : 0;
    for (uint32_t i = 0; i < nlocal; i++) {
        if (mine[i] >= nranks)
            goto fail;
        o->group_rank[i] = (uint32_t) count_ranks (layout, groups, mine[i], o->group, EQUAL);
        o->rank[i] = by_group ? (uint32_t) below + o->group_rank[i] : mine[i];
    }
    /* the nodes follow their first RANK: by group, each group's in their own order */
    o->node_rank = by_group ? (uint32_t) (count_nodes (groups, 0, nnodes, o->group, BELOW)
                                          + count_nodes (groups, 0, me, o->group, EQUAL))
                            : me;
    return 0;
fail:
    dist_local_order_free (o);
    return -1;
}

/* ---- the layout by RANK under rank_order=topology, from the runs ----------------------- */

/* The nodes of each group as intervals [lo, hi], in node order: group g's are
 * at[first[g]] .. at[first[g + 1] - 1]. */
struct group_spans {
    uint32_t *first; /* ngroups + 1 */
    uint32_t (*at)[2];
};

static int group_spans_make (struct group_spans *gs, const struct dist_runs *groups,
                             uint32_t ngroups)
{
    uint32_t n = 0, *fill;

    gs->first = calloc ((size_t) ngroups + 1, sizeof (*gs->first));
    for (uint32_t k = 0; k < groups->n; k++)
        n += dist_run_length (&groups->run[k]) / groups->run[k].each;
    gs->at = calloc (n > 0 ? n : 1, sizeof (*gs->at));
    fill = calloc ((size_t) ngroups + 1, sizeof (*fill));
    if (gs->first == NULL || gs->at == NULL || fill == NULL) {
        free (fill);
        return -1;
    }
    /* count each group's terms, then place them, in node order */
    for (uint32_t k = 0; k < groups->n; k++)
        for (uint32_t t = 0, len = dist_run_length (&groups->run[k]); t * groups->run[k].each < len;
             t++)
            gs->first[dist_run_value (&groups->run[k], t * groups->run[k].each) + 1]++;
    for (uint32_t g = 0; g < ngroups; g++)
        fill[g] = gs->first[g + 1] += gs->first[g];
    for (uint32_t g = ngroups; g-- > 0;)
        fill[g] = gs->first[g];
    for (uint32_t k = 0; k < groups->n; k++) {
        const struct dist_run *run = &groups->run[k];
        for (uint32_t t = 0, len = dist_run_length (run); t * run->each < len; t++) {
            uint32_t g = dist_run_value (run, t * run->each), at = fill[g]++;
            gs->at[at][0] = run->start + t * run->each;
            gs->at[at][1] = run->start + (t + 1) * run->each - 1;
        }
    }
    free (fill);
    return 0;
}

static void group_spans_free (struct group_spans *gs)
{
    free (gs->first);
    free (gs->at);
}

/* Append "A..B*K" (or "A", "A*K", "A..B") to text. */
static int append_run (char *text, size_t size, size_t *len, uint32_t a, uint32_t b, uint32_t k)
{
    int n;

    n = snprintf (text + *len, size - *len, "%s%" PRIu32,
                  *len > 0 && text[*len - 1] != '=' ? "," : "", a);
    if (n >= 0 && (size_t) n < size - *len && a != b) {
        *len += (size_t) n;
        n = snprintf (text + *len, size - *len, "..%" PRIu32, b);
    }
    if (n >= 0 && (size_t) n < size - *len && k > 1) {
        *len += (size_t) n;
        n = snprintf (text + *len, size - *len, "*%" PRIu32, k);
    }
    if (n < 0 || (size_t) n >= size - *len)
        return -1;
    *len += (size_t) n;
    return 0;
}

/* The nodes of one layout run that are in group g, in the run's order, as runs. */
static int append_group_part (char *text, size_t size, size_t *len, const struct dist_run *run,
                              const struct group_spans *gs, uint32_t g)
{
    bool up = run->last >= run->first;
    uint32_t lo = up ? run->first : run->last, hi = up ? run->last : run->first;
    uint32_t from = gs->first[g], to = gs->first[g + 1];

    for (uint32_t i = 0; i < to - from; i++) {
        /* (going down, the group's spans are taken from the last) */
        const uint32_t *span = gs->at[up ? from + i : to - 1 - i];
        uint32_t a = span[0] > lo ? span[0] : lo, b = span[1] < hi ? span[1] : hi;
        if (a > b)
            continue;
        if (up ? append_run (text, size, len, a, b, run->each)
               : append_run (text, size, len, b, a, run->each))
            return -1;
    }
    return 0;
}

char *dist_local_order_layout_text (uint32_t job_id, uint32_t step_id,
                                    const struct dist_runs *layout, const struct dist_runs *groups,
                                    uint32_t ngroups)
{
    struct group_spans gs = {0};
    char *text = malloc (DIST_LAYOUT_TEXT_MAX);
    size_t len;
    int rc = -1;

    if (text == NULL || groups->count != layout->bound || groups->bound != ngroups
        || group_spans_make (&gs, groups, ngroups) < 0)
        goto out;
    len = (size_t) snprintf (
        text, DIST_LAYOUT_TEXT_MAX,
        "step=%" PRIu32 ".%" PRIu32 " nodes=%" PRIu32 " ranks=%" PRIu32 " layout=", job_id, step_id,
        layout->bound, layout->count);
    for (uint32_t g = 0; g < ngroups; g++)
        for (uint32_t k = 0; k < layout->n; k++)
            if (append_group_part (text, DIST_LAYOUT_TEXT_MAX, &len, &layout->run[k], &gs, g) < 0)
                goto out;
    rc = 0;
out:
    group_spans_free (&gs);
    if (rc < 0) {
        free (text);
        return NULL;
    }
    return text;
}

uint32_t dist_netgroup_ring_crossings (const uint32_t *group_in_order, uint32_t n)
{
    uint32_t i, crossings = 0;

    for (i = 0; n > 1 && i < n; i++)
        if (group_in_order[i] != group_in_order[(i + 1) % n])
            crossings++;
    return crossings;
}
