/* doctor_check.c - rank 0's checks over every rank's facts: ranks 0..N-1 each once
 * and where the layout puts them, one WORLD_SIZE, one MASTER_ADDR and
 * MASTER_PORT; each node's own checks are in doctor_node.c. */
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "doctor_text.h"

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

/* Ranks 0..N-1 exactly once; a rank that never came is named with the node
 * the layout puts it on. */
static void check_ranks (struct doctor_result *res, const struct doctor_rank *recs, size_t n,
                         const struct doctor_layout *layout, size_t world)
{
    size_t *count = calloc (world + 1, sizeof (*count)), i, j, node;
    const char *hint;
    char where[DOCTOR_LINE_MAX], one[DOCTOR_NAME_MAX * 2];

    if (count == NULL) {
        doctor_problem (res, "out of memory checking %zu ranks", world);
        return;
    }
    for (i = 0; i < n; i++) {
        if (recs[i].rank >= 0 && (size_t) recs[i].rank < world)
            count[recs[i].rank]++;
        else {
            who (&recs[i], one, sizeof (one));
            doctor_problem (res, "%s says RANK=%s, outside 0..%zu", one,
                            recs[i].rank < 0 ? "(unset or not a number)" : "(too large)",
                            world - 1);
        }
    }
    for (i = 0; i < world; i++) {
        if (count[i] <= 1)
            continue;
        where[0] = '\0';
        for (j = 0; j < n; j++)
            if (recs[j].rank == (long) i) {
                who (&recs[j], one, sizeof (one));
                doctor_list_join (where, sizeof (where), ", ", one);
            }
        doctor_problem (res, "rank %zu checked in %zu times: from %s; a script that sets RANK?", i,
                        count[i], where);
    }
    /* a rank that came once, from another node than Slurm's layout says */
    for (i = 0; layout->nranks == world && i < n; i++)
        if (recs[i].rank >= 0 && (size_t) recs[i].rank < world && count[recs[i].rank] == 1
            && strcmp (recs[i].node, layout->node[layout->node_of_rank[recs[i].rank]]) != 0) {
            who (&recs[i], one, sizeof (one));
            doctor_problem (res, "rank %ld checked in from %s, but Slurm's layout puts it on %s",
                            recs[i].rank, one, layout->node[layout->node_of_rank[recs[i].rank]]);
        }
    /* missing ranks, grouped by the node that should run them; when as many
     * tasks came as there are ranks, one of them claims another's rank */
    hint = n >= world ? "every task checked in: one claims another's RANK"
                      : "a rank that cannot reach rank 0 says why on its stderr";
    if (layout->nranks == world) {
        long *v = malloc (world * sizeof (*v));
        for (node = 0; v != NULL && node < layout->nnodes; node++) {
            size_t nv = 0;
            for (i = 0; i < world; i++)
                if (count[i] == 0 && layout->node_of_rank[i] == node)
                    v[nv++] = (long) i;
            if (nv == 0)
                continue;
            doctor_ranges_text (v, nv, where, sizeof (where));
            doctor_problem (res, "%s: rank%s %s never checked in (%s)", layout->node[node],
                            nv > 1 ? "s" : "", where, hint);
        }
        free (v);
    } else {
        long *v = malloc (world * sizeof (*v));
        size_t nv = 0;
        for (i = 0; v != NULL && i < world; i++)
            if (count[i] == 0)
                v[nv++] = (long) i;
        if (nv > 0) {
            doctor_ranges_text (v, nv, where, sizeof (where));
            doctor_problem (res,
                            "rank%s %s never checked in (their nodes are unknown: "
                            "SLURM_STEP_NODELIST/SLURM_STEP_TASKS_PER_NODE do not give the layout)",
                            nv > 1 ? "s" : "", where);
        }
        free (v);
    }
    free (count);
}

static long node_index (const struct doctor_result *res, const char *name)
{
    for (size_t i = 0; i < res->nnodes; i++)
        if (strcmp (res->node[i].name, name) == 0)
            return (long) i;
    return -1;
}

int doctor_check (const struct doctor_rank *recs, size_t n, const struct doctor_layout *layout,
                  struct doctor_result *out)
{
    size_t world, i, *idx = NULL;
    bool *present;

    memset (out, 0, sizeof (*out));
    out->world_size = recs[0].world_size;
    out->checked_in = n;
    world = recs[0].world_size > 0 ? (size_t) recs[0].world_size : n;
    if (layout->nranks != 0 && layout->nranks != world)
        doctor_problem (out, "WORLD_SIZE=%zu, but Slurm's step has %zu tasks", world,
                        layout->nranks);
    check_ranks (out, recs, n, layout, world);
    check_same (out, recs, n, "WORLD_SIZE", get_world);
    check_same (out, recs, n, "MASTER_ADDR", get_addr);
    check_same (out, recs, n, "MASTER_PORT", get_port);

    /* which ranks came, for the nodes' lines */
    present = calloc (world, sizeof (*present));
    if (present == NULL)
        return -1;
    for (i = 0; i < n; i++)
        if (recs[i].rank >= 0 && (size_t) recs[i].rank < world)
            present[recs[i].rank] = true;
    /* nodes: the layout's, in order, then any other a rank named */
    out->node = calloc (layout->nnodes + n, sizeof (*out->node));
    idx = calloc (n, sizeof (*idx));
    if (out->node == NULL || idx == NULL) {
        free (idx);
        free (present);
        return -1;
    }
    for (i = 0; i < layout->nnodes; i++)
        snprintf (out->node[out->nnodes++].name, DOCTOR_NAME_MAX, "%s", layout->node[i]);
    for (i = 0; i < n; i++)
        if (node_index (out, recs[i].node) < 0)
            snprintf (out->node[out->nnodes++].name, DOCTOR_NAME_MAX, "%s", recs[i].node);
    for (size_t nd = 0; nd < out->nnodes; nd++) {
        struct doctor_node_summary *sum = &out->node[nd];
        size_t k = 0;
        for (i = 0; i < n; i++)
            if (strcmp (recs[i].node, sum->name) == 0)
                idx[k++] = i;
        doctor_check_node (out, sum, recs, idx, k);
        /* expected here and absent: for the node's line */
        if (nd < layout->nnodes && layout->nranks == world) {
            long *v = malloc (world * sizeof (*v));
            size_t nv = 0;
            for (size_t r = 0; v != NULL && r < world; r++)
                if (layout->node_of_rank[r] == nd && !present[r])
                    v[nv++] = (long) r;
            if (v != NULL)
                doctor_ranges_text (v, nv, sum->missing, sizeof (sum->missing));
            free (v);
        }
    }
    free (idx);
    free (present);
    return 0;
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
