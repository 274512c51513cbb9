/* check.c - rank 0's checks over every rank's facts: ranks 0..N-1 each once
 * and where the layout puts them, one WORLD_SIZE, one MASTER_ADDR and
 * MASTER_PORT; each node's own checks are in node.c. */
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "text.h"

/* "node2 task 2" for a record: where it ran and who it really was. */
static void who (const struct doctor_rank *r, char *out, size_t size)
{
    if (r->procid >= 0)
        snprintf (out, size, "%s (task %ld)", r->node[0] ? r->node : "?", r->procid);
    else
        snprintf (out, size, "%s", r->node[0] ? r->node : "?");
}

#define SAME_VALUES_MAX 8

/* One value for every rank: the others are named with their nodes. */
static void check_same (struct doctor_result *res, const struct doctor_rank *recs, size_t n,
                        const char *name, const char *(*get) (const struct doctor_rank *, char *) )
{
    char ref[DOCTOR_LIST_MAX], val[DOCTOR_LIST_MAX], seen[SAME_VALUES_MAX * 104 + 1] = "";
    char where[DOCTOR_LINE_MAX], one[DOCTOR_NAME_MAX * 2];
    size_t i, j, values = 0;

    snprintf (ref, sizeof (ref), "%s", get (&recs[0], val));
    for (i = 1; i < n; i++) {
        char mine[DOCTOR_LIST_MAX];
        snprintf (mine, sizeof (mine), "%s", get (&recs[i], val));
        if (strcmp (mine, ref) == 0)
            continue;
        /* each other value once, with every rank that has it */
        {
            char key[DOCTOR_LINE_MAX];
            snprintf (key, sizeof (key), "|%.100s|", mine);
            if (strstr (seen, key) != NULL)
                continue;
            /* (a few values say enough, and keep this linear in the ranks) */
            if (++values > SAME_VALUES_MAX) {
                doctor_problem (res, "%s: more values than these on other ranks", name);
                return;
            }
            if (strlen (seen) + strlen (key) < sizeof (seen))
                strcat (seen, key);
        }
        where[0] = '\0';
        for (j = i; j < n; j++) {
            char other[DOCTOR_LIST_MAX];
            snprintf (other, sizeof (other), "%s", get (&recs[j], val));
            if (strcmp (other, mine) != 0)
                continue;
            snprintf (one, sizeof (one), "rank %ld on %s", recs[j].rank,
                      recs[j].node[0] ? recs[j].node : "?");
            doctor_list_join (where, sizeof (where), ", ", one);
        }
        doctor_problem (res, "%s=%.64s (rank 0 has %.64s) on %s", name, mine[0] ? mine : "(unset)",
                        ref[0] ? ref : "(unset)", where);
    }
}

static const char *get_world (const struct doctor_rank *r, char *buf)
{
    if (r->world_size < 0)
        return "";
    snprintf (buf, 24, "%ld", r->world_size);
    return buf;
}
static const char *get_addr (const struct doctor_rank *r, char *buf)
{
    (void) buf;
    return r->master_addr;
}
static const char *get_port (const struct doctor_rank *r, char *buf)
{
    (void) buf;
    return r->master_port;
}

/* The ranks Slurm's layout puts on each node: node nd's are
 * rank[first[nd] .. first[nd + 1]), in order; built in one pass, so that
 * nothing below walks every rank once per node. */
struct placed {
    size_t *first;
    long *rank;
};

static int placed_build (const struct doctor_layout *layout, struct placed *pl)
{
    size_t nd, r, *next;

    pl->first = calloc (layout->nnodes + 1, sizeof (*pl->first));
    pl->rank = malloc ((layout->nranks + 1) * sizeof (*pl->rank));
    next = calloc (layout->nnodes + 1, sizeof (*next));
    if (pl->first == NULL || pl->rank == NULL || next == NULL) {
        free (next);
        return -1;
    }
    for (r = 0; r < layout->nranks; r++)
        pl->first[layout->node_of_rank[r] + 1]++;
    for (nd = 0; nd < layout->nnodes; nd++)
        next[nd] = pl->first[nd + 1] += pl->first[nd];
    for (nd = layout->nnodes; nd-- > 0;)
        next[nd] = pl->first[nd];
    for (r = 0; r < layout->nranks; r++)
        pl->rank[next[layout->node_of_rank[r]]++] = (long) r;
    free (next);
    return 0;
}

static void placed_free (struct placed *pl)
{
    free (pl->first);
    free (pl->rank);
}

/* Node nd's ranks in the layout that never checked in, as ranges into
 * out; how many. */
static size_t missing_on (const struct placed *pl, size_t nd, const size_t *count, long *scratch,
                          char *out, size_t size)
{
    size_t nv = 0;

    for (size_t i = pl->first[nd]; i < pl->first[nd + 1]; i++)
        if (count[pl->rank[i]] == 0)
            scratch[nv++] = pl->rank[i];
    doctor_ranges_text (scratch, nv, out, size);
    return nv;
}

/* How many records claim each rank 0..world-1, into count; a RANK outside
 * that is a problem of its own. */
static void count_ranks (struct doctor_result *res, const struct doctor_rank *recs, size_t n,
                         size_t world, size_t *count)
{
    char one[DOCTOR_NAME_MAX * 2];

    for (size_t i = 0; i < n; i++) {
        if (recs[i].rank >= 0 && (size_t) recs[i].rank < world)
            count[recs[i].rank]++;
        else {
            who (&recs[i], one, sizeof (one));
            doctor_problem (res, "%s says RANK=%s, outside 0..%zu", one,
                            recs[i].rank < 0 ? "(unset or not a number)" : "(too large)",
                            world - 1);
        }
    }
}

/* A rank that checked in more than once, with the tasks that claim it. */
static void check_twice (struct doctor_result *res, const struct doctor_rank *recs, size_t n,
                         size_t world, const size_t *count)
{
    char where[DOCTOR_LINE_MAX], one[DOCTOR_NAME_MAX * 2];

    for (size_t i = 0; i < world; i++) {
        if (count[i] <= 1)
            continue;
        /* (past the lines the report keeps, only counted: naming the
         * tasks walks every record) */
        if (res->nproblems >= DOCTOR_PROBLEMS_MAX) {
            doctor_problem (res, "rank %zu checked in %zu times", i, count[i]);
            continue;
        }
        where[0] = '\0';
        for (size_t j = 0; j < n; j++)
            if (recs[j].rank == (long) i) {
                who (&recs[j], one, sizeof (one));
                doctor_list_join (where, sizeof (where), ", ", one);
            }
        doctor_problem (res, "rank %zu checked in %zu times: from %s; a script that sets RANK?", i,
                        count[i], where);
    }
}

/* A rank that came once, from another node than Slurm's layout says. */
static void check_placed (struct doctor_result *res, const struct doctor_rank *recs, size_t n,
                          const struct doctor_layout *layout, size_t world, const size_t *count)
{
    char one[DOCTOR_NAME_MAX * 2];

    for (size_t i = 0; layout->nranks == world && i < n; i++)
        if (recs[i].rank >= 0 && (size_t) recs[i].rank < world && count[recs[i].rank] == 1
            && strcmp (recs[i].node, layout->node[layout->node_of_rank[recs[i].rank]]) != 0) {
            who (&recs[i], one, sizeof (one));
            doctor_problem (res, "rank %ld checked in from %s, but Slurm's layout puts it on %s",
                            recs[i].rank, one, layout->node[layout->node_of_rank[recs[i].rank]]);
        }
}

/* Ranks that never checked in, grouped by the node that should run them
 * when the layout is known; when as many tasks came as there are ranks,
 * one of them claims another's rank. */
static void check_missing (struct doctor_result *res, size_t n, const struct doctor_layout *layout,
                           const struct placed *pl, size_t world, const size_t *count)
{
    const char *hint = n >= world ? "every task checked in: one claims another's RANK"
                                  : "a rank that cannot reach rank 0 says why on its stderr";
    char where[DOCTOR_LINE_MAX];
    size_t nv;
    long *v;

    if ((v = malloc ((world + 1) * sizeof (*v))) == NULL)
        return;
    if (layout->nranks == world) {
        for (size_t node = 0; node < layout->nnodes; node++)
            if ((nv = missing_on (pl, node, count, v, where, sizeof (where))) > 0)
                doctor_problem (res, "%s: rank%s %s never checked in (%s)", layout->node[node],
                                nv > 1 ? "s" : "", where, hint);
    } else {
        nv = 0;
        for (size_t i = 0; i < world; i++)
            if (count[i] == 0)
                v[nv++] = (long) i;
        if (nv > 0) {
            doctor_ranges_text (v, nv, where, sizeof (where));
            doctor_problem (res,
                            "rank%s %s never checked in (their nodes are unknown: "
                            "SLURM_STEP_NODELIST/SLURM_STEP_TASKS_PER_NODE do not give the layout)",
                            nv > 1 ? "s" : "", where);
        }
    }
    free (v);
}

/* Ranks 0..N-1 exactly once; a rank that never came is named with the node
 * the layout puts it on. */
static void check_ranks (struct doctor_result *res, const struct doctor_rank *recs, size_t n,
                         const struct doctor_layout *layout, const struct placed *pl, size_t world,
                         size_t *count)
{
    count_ranks (res, recs, n, world, count);
    check_twice (res, recs, n, world, count);
    check_placed (res, recs, n, layout, world, count);
    check_missing (res, n, layout, pl, world, count);
}

/* A record's node, for sorting the records into one group per node. */
struct by_node {
    const char *node;
    size_t i;
};

static int by_node_cmp (const void *a, const void *b)
{
    const struct by_node *x = a, *y = b;
    int c = strcmp (x->node, y->node);

    return c != 0 ? c : x->i < y->i ? -1 : x->i > y->i;
}

/* The first of sorted[0..n) on node name, or n. */
static size_t group_of (const struct by_node *sorted, size_t n, const char *name)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp (sorted[mid].node, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp (sorted[lo].node, name) == 0 ? lo : n;
}

/* The records grouped by node: out->node[nd]'s are sorted[group[nd]]
 * onwards, as long as the name is the same. */
struct groups {
    struct by_node *sorted;
    size_t *group;
};

/* One summary per node, its name only: the layout's, in order, then any
 * other a rank named. */
static int groups_build (struct doctor_result *out, const struct doctor_rank *recs, size_t n,
                         const struct doctor_layout *layout, struct groups *gr)
{
    bool *taken = calloc (n + 1, sizeof (*taken));
    size_t i, g, k;

    gr->sorted = malloc ((n + 1) * sizeof (*gr->sorted));
    gr->group = malloc ((layout->nnodes + n + 1) * sizeof (*gr->group));
    out->node = calloc (layout->nnodes + n + 1, sizeof (*out->node));
    if (taken == NULL || gr->sorted == NULL || gr->group == NULL || out->node == NULL) {
        free (taken);
        return -1;
    }
    for (i = 0; i < n; i++)
        gr->sorted[i] = (struct by_node){recs[i].node, i};
    qsort (gr->sorted, n, sizeof (*gr->sorted), by_node_cmp);
    for (i = 0; i < layout->nnodes; i++) {
        snprintf (out->node[out->nnodes].name, DOCTOR_NAME_MAX, "%s", layout->node[i]);
        g = group_of (gr->sorted, n, layout->node[i]);
        if (g < n)
            taken[g] = true;
        gr->group[out->nnodes++] = g;
    }
    for (g = 0; g < n; g = k) {
        for (k = g + 1; k < n && strcmp (gr->sorted[k].node, gr->sorted[g].node) == 0; k++)
            ;
        if (!taken[g]) {
            snprintf (out->node[out->nnodes].name, DOCTOR_NAME_MAX, "%s", gr->sorted[g].node);
            gr->group[out->nnodes++] = g;
        }
    }
    free (taken);
    return 0;
}

/* Node nd's records into idx; how many. */
static size_t group_members (const struct groups *gr, size_t n, const char *name, size_t nd,
                             size_t *idx)
{
    size_t k = 0;

    for (size_t g = gr->group[nd]; g < n && strcmp (gr->sorted[g].node, name) == 0; g++)
        idx[k++] = gr->sorted[g].i;
    return k;
}

/* How many of a node's ranks are checked against each other: as many as
 * Slurm placed there, so that tasks that all claim one node cost no more
 * than the node's real ranks (without a layout, DOCTOR_NODE_RANKS_MAX). */
static size_t pairs_bound (struct doctor_node_summary *sum, const struct doctor_layout *layout,
                           const struct placed *pl, size_t world, size_t nd, size_t k)
{
    if (layout->nranks != world || layout->nranks == 0) {
        if (k > DOCTOR_NODE_RANKS_MAX)
            doctor_list_add (
                sum->note, sizeof (sum->note),
                "only the first " DOCTOR_STR (DOCTOR_NODE_RANKS_MAX) " ranks checked "
                                                                     "against each other");
        return k < DOCTOR_NODE_RANKS_MAX ? k : DOCTOR_NODE_RANKS_MAX;
    }
    /* (a node outside the layout: each of its ranks is named already) */
    size_t placed = nd < layout->nnodes ? pl->first[nd + 1] - pl->first[nd] : 0;
    return k < placed ? k : placed;
}

/* More tasks on a node than Slurm placed there: said first, since it
 * explains the lines about each of their ranks that follow. */
static void check_crowded (struct doctor_result *out, const struct groups *gr, size_t n,
                           const struct doctor_layout *layout, const struct placed *pl,
                           size_t world)
{
    for (size_t nd = 0; layout->nranks == world && nd < layout->nnodes; nd++) {
        size_t placed = pl->first[nd + 1] - pl->first[nd], k = 0;
        for (size_t g = gr->group[nd]; g < n && strcmp (gr->sorted[g].node, layout->node[nd]) == 0;
             g++)
            k++;
        if (k > placed && placed > 0)
            doctor_problem (out,
                            "%s: %zu tasks say they run here, but Slurm placed %zu there; only "
                            "the first %zu are checked against each other",
                            layout->node[nd], k, placed, placed);
    }
}

/* Each node's ranks checked against each other, and the ranks it misses. */
static int check_nodes (struct doctor_result *out, const struct doctor_rank *recs, size_t n,
                        const struct doctor_layout *layout, const struct placed *pl,
                        const struct groups *gr, size_t world, const size_t *count)
{
    size_t *idx = malloc ((n + 1) * sizeof (*idx)), k;
    long *scratch = malloc ((world + 1) * sizeof (*scratch));

    if (idx == NULL || scratch == NULL) {
        free (idx);
        free (scratch);
        return -1;
    }
    for (size_t nd = 0; nd < out->nnodes; nd++) {
        struct doctor_node_summary *sum = &out->node[nd];
        k = group_members (gr, n, sum->name, nd, idx);
        doctor_check_node (out, sum, recs, idx, k, pairs_bound (sum, layout, pl, world, nd, k));
        /* expected here and absent: for the node's line */
        if (nd < layout->nnodes && layout->nranks == world)
            missing_on (pl, nd, count, scratch, sum->missing, sizeof (sum->missing));
    }
    free (idx);
    free (scratch);
    return 0;
}

int doctor_check (const struct doctor_rank *recs, size_t n, const struct doctor_layout *layout,
                  struct doctor_result *out)
{
    struct placed pl = {NULL, NULL};
    struct groups gr = {NULL, NULL};
    size_t world, *count;
    int rc = -1;

    memset (out, 0, sizeof (*out));
    out->world_size = recs[0].world_size;
    out->checked_in = n;
    world = recs[0].world_size > 0 ? (size_t) recs[0].world_size : n;
    if (layout->nranks != 0 && layout->nranks != world)
        doctor_problem (out, "WORLD_SIZE=%zu, but Slurm's step has %zu tasks", world,
                        layout->nranks);
    count = calloc (world + 1, sizeof (*count));
    if (count == NULL || placed_build (layout, &pl) < 0
        || groups_build (out, recs, n, layout, &gr) < 0)
        goto done;
    check_crowded (out, &gr, n, layout, &pl, world);
    check_ranks (out, recs, n, layout, &pl, world, count);
    check_same (out, recs, n, "WORLD_SIZE", get_world);
    check_same (out, recs, n, "MASTER_ADDR", get_addr);
    check_same (out, recs, n, "MASTER_PORT", get_port);
    rc = check_nodes (out, recs, n, layout, &pl, &gr, world, count);
done:
    free (count);
    free (gr.sorted);
    free (gr.group);
    placed_free (&pl);
    return rc;
}

void doctor_result_free (struct doctor_result *res)
{
    free (res->node);
    res->node = NULL;
}

bool doctor_result_ok (const struct doctor_result *res)
{
    return res->nproblems == 0 && res->world_size > 0
           && res->checked_in == (size_t) res->world_size;
}
