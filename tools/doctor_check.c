/* doctor_check.c - rank 0's checks over every rank's facts: each rank once,
 * one world, one master, local ranks, GPUs and CPUs per node; and the
 * per-node summary the report prints. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "libdist/ranges.h"

static void problem (struct doctor_result *res, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));
static void problem (struct doctor_result *res, const char *fmt, ...)
{
    va_list ap;

    if (res->nproblems < DOCTOR_PROBLEMS_MAX) {
        va_start (ap, fmt);
        vsnprintf (res->problem[res->nproblems], DOCTOR_LINE_MAX, fmt, ap);
        va_end (ap);
    }
    res->nproblems++;
}

/* Append sep and item to a bounded list, ending it with "..." once full. */
static void list_join (char *list, size_t size, const char *sep, const char *item)
{
    size_t len = strlen (list);

    if (len >= 3 && strcmp (list + len - 3, "...") == 0)
        return;
    if (len + strlen (item) + 6 >= size) {
        snprintf (list + len, size - len, "%s...", len > 0 ? sep : "");
        return;
    }
    snprintf (list + len, size - len, "%s%s", len > 0 ? sep : "", item);
}

static void list_add (char *list, size_t size, const char *item)
{
    list_join (list, size, ",", item);
}

/* Add item unless the list has it already. */
static void set_add (char *list, size_t size, const char *item)
{
    char copy[DOCTOR_LINE_MAX], *tok, *save = NULL;

    snprintf (copy, sizeof (copy), "%s", list);
    for (tok = strtok_r (copy, ",", &save); tok != NULL; tok = strtok_r (NULL, ",", &save))
        if (strcmp (tok, item) == 0)
            return;
    list_add (list, size, item[0] != '\0' ? item : "?");
}

static int cmp_long (const void *a, const void *b)
{
    long x = *(const long *) a, y = *(const long *) b;
    return x < y ? -1 : x > y;
}

/* Sorted values as ranges: "0-3,8". */
static void ranges_text (long *v, size_t n, char *out, size_t size)
{
    char item[48];
    size_t i, j;

    out[0] = '\0';
    qsort (v, n, sizeof (*v), cmp_long);
    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && v[j] <= v[j - 1] + 1; j++)
            ;
        if (v[j - 1] == v[i])
            snprintf (item, sizeof (item), "%ld", v[i]);
        else
            snprintf (item, sizeof (item), "%ld-%ld", v[i], v[j - 1]);
        list_add (out, size, item);
    }
}

/* The ranks of the records at idx[0..n) as ranges (copied: sorting). */
static void ranks_of (const struct doctor_rank *recs, const size_t *idx, size_t n, char *out,
                      size_t size)
{
    long *v = malloc ((n + 1) * sizeof (*v));
    size_t i;

    if (v == NULL) {
        snprintf (out, size, "?");
        return;
    }
    for (i = 0; i < n; i++)
        v[i] = recs[idx[i]].rank;
    ranges_text (v, n, out, size);
    free (v);
}

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
                problem (res, "%s: more values than these on other ranks", name);
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
            list_join (where, sizeof (where), ", ", one);
        }
        problem (res, "%s=%.64s (rank 0 has %.64s) on %s", name, mine[0] ? mine : "(unset)",
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
        problem (res, "out of memory checking %zu ranks", world);
        return;
    }
    for (i = 0; i < n; i++) {
        if (recs[i].rank >= 0 && (size_t) recs[i].rank < world)
            count[recs[i].rank]++;
        else {
            who (&recs[i], one, sizeof (one));
            problem (res, "%s says RANK=%s, outside 0..%zu", one,
                     recs[i].rank < 0 ? "(unset or not a number)" : "(too large)", world - 1);
        }
    }
    for (i = 0; i < world; i++) {
        if (count[i] <= 1)
            continue;
        where[0] = '\0';
        for (j = 0; j < n; j++)
            if (recs[j].rank == (long) i) {
                who (&recs[j], one, sizeof (one));
                list_join (where, sizeof (where), ", ", one);
            }
        problem (res, "rank %zu checked in %zu times: from %s; a script that sets RANK?", i,
                 count[i], where);
    }
    /* a rank that came once, from another node than Slurm's layout says */
    for (i = 0; layout->nranks == world && i < n; i++)
        if (recs[i].rank >= 0 && (size_t) recs[i].rank < world && count[recs[i].rank] == 1
            && strcmp (recs[i].node, layout->node[layout->node_of_rank[recs[i].rank]]) != 0) {
            who (&recs[i], one, sizeof (one));
            problem (res, "rank %ld checked in from %s, but Slurm's layout puts it on %s",
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
            ranges_text (v, nv, where, sizeof (where));
            problem (res, "%s: rank%s %s never checked in (%s)", layout->node[node],
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
            ranges_text (v, nv, where, sizeof (where));
            problem (res,
                     "rank%s %s never checked in (their nodes are unknown: "
                     "SLURM_STEP_NODELIST/SLURM_STEP_TASKS_PER_NODE do not give the layout)",
                     nv > 1 ? "s" : "", where);
        }
        free (v);
    }
    free (count);
}

/* A CPU list as a bitmap of DOCTOR_CPUS_MAX bits. */
static int set_bit (long lo, long hi, void *arg)
{
    unsigned char *bits = arg;
    for (long c = lo; c <= hi; c++)
        bits[c / 8] |= (unsigned char) (1u << (c % 8));
    return 0;
}

enum overlap { CPUS_APART, CPUS_SAME, CPUS_OVERLAP, CPUS_UNKNOWN };

static enum overlap cpus_compare (const char *a, const char *b)
{
    static unsigned char x[DOCTOR_CPUS_MAX / 8], y[DOCTOR_CPUS_MAX / 8];
    bool any = false, same = true;
    size_t i;

    memset (x, 0, sizeof (x));
    memset (y, 0, sizeof (y));
    if (dist_ranges_parse (a, DOCTOR_CPUS_MAX - 1, set_bit, x) < 0
        || dist_ranges_parse (b, DOCTOR_CPUS_MAX - 1, set_bit, y) < 0)
        return CPUS_UNKNOWN;
    for (i = 0; i < sizeof (x); i++) {
        any |= (x[i] & y[i]) != 0;
        same &= x[i] == y[i];
    }
    return same ? CPUS_SAME : any ? CPUS_OVERLAP : CPUS_APART;
}

/* The GPU a rank computes on: its planned GPU (bus id), else the entry of
 * CUDA_VISIBLE_DEVICES that cuda:LOCAL_RANK picks. */
static void gpu_of (const struct doctor_rank *r, char *out, size_t size)
{
    char list[DOCTOR_LIST_MAX], *tok, *save = NULL;
    long pick, i;
    size_t count = 0;

    out[0] = '\0';
    if (r->gpus[0] != '\0') {
        snprintf (out, size, "%.*s", (int) strcspn (r->gpus, ","), r->gpus);
        return;
    }
    if (r->visible[0] == '\0' || strcmp (r->visible, "NoDevFiles") == 0)
        return;
    for (const char *p = r->visible; *p; p++)
        count += *p == ',';
    count++;
    pick = count == 1 ? 0 : r->local_rank >= 0 ? r->local_rank % (long) count : 0;
    snprintf (list, sizeof (list), "%s", r->visible);
    for (i = 0, tok = strtok_r (list, ",", &save); tok != NULL;
         tok = strtok_r (NULL, ",", &save), i++)
        if (i == pick) {
            snprintf (out, size, "%s", tok);
            return;
        }
}

/* Per node: local ranks unique, GPUs not shared unless planned, CPU sets
 * apart (identical sets are an unbound or planned share, not a mistake). */
static void check_node (struct doctor_result *res, struct doctor_node_summary *sum,
                        const struct doctor_rank *recs, const size_t *idx, size_t k)
{
    char gi[DOCTOR_LIST_MAX], gj[DOCTOR_LIST_MAX];
    bool gpu_planned_share = false, cpu_share = false;
    size_t i, j;

    for (i = 0; i < k; i++)
        for (j = i + 1; j < k; j++) {
            const struct doctor_rank *a = &recs[idx[i]], *b = &recs[idx[j]], *t;
            /* the lower rank first, whatever order they came in */
            if (a->rank > b->rank) {
                t = a;
                a = b;
                b = t;
            }
            if (a->local_rank >= 0 && a->local_rank == b->local_rank)
                problem (res, "%s: ranks %ld and %ld both have LOCAL_RANK=%ld", sum->name, a->rank,
                         b->rank, a->local_rank);
            gpu_of (a, gi, sizeof (gi));
            gpu_of (b, gj, sizeof (gj));
            if (gi[0] != '\0' && strcmp (gi, gj) == 0) {
                if (a->gpus[0] != '\0' && b->gpus[0] != '\0')
                    gpu_planned_share = true; /* more ranks than GPUs: the plan's choice */
                else
                    problem (res,
                             "%s: ranks %ld and %ld both use GPU %.64s "
                             "(CUDA_VISIBLE_DEVICES %.64s and %.64s)",
                             sum->name, a->rank, b->rank, gi, a->visible, b->visible);
            }
            switch (cpus_compare (a->cpus, b->cpus)) {
            case CPUS_SAME:
                cpu_share = true;
                break;
            case CPUS_OVERLAP:
                problem (res,
                         "%s: ranks %ld and %ld are bound to overlapping CPUs (%.80s and %.80s)",
                         sum->name, a->rank, b->rank, a->cpus, b->cpus);
                break;
            default:
                break;
            }
        }
    if (gpu_planned_share)
        list_add (sum->note, sizeof (sum->note), "GPUs shared as planned");
    if (cpu_share)
        list_add (sum->note, sizeof (sum->note), "ranks share CPUs");
}

/* The summary of one node: its ranks (indices idx[0..k) of recs). */
static void summarize (struct doctor_node_summary *sum, const struct doctor_rank *recs,
                       const size_t *idx, size_t k)
{
    size_t i;

    sum->max_connect_ms = 0;
    ranks_of (recs, idx, k, sum->ranks, sizeof (sum->ranks));
    for (i = 0; i < k; i++) {
        const struct doctor_rank *r = &recs[idx[i]];
        set_add (sum->ifnames, sizeof (sum->ifnames), r->ifname);
        set_add (sum->sources, sizeof (sum->sources), r->source);
        if (r->connect_ms > sum->max_connect_ms)
            sum->max_connect_ms = r->connect_ms;
    }
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
        problem (out, "WORLD_SIZE=%zu, but Slurm's step has %zu tasks", world, layout->nranks);
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
        summarize (sum, recs, idx, k);
        check_node (out, sum, recs, idx, k);
        /* expected here and absent: for the node's line */
        if (nd < layout->nnodes && layout->nranks == world) {
            long *v = malloc (world * sizeof (*v));
            size_t nv = 0;
            for (size_t r = 0; v != NULL && r < world; r++)
                if (layout->node_of_rank[r] == nd && !present[r])
                    v[nv++] = (long) r;
            if (v != NULL)
                ranges_text (v, nv, sum->missing, sizeof (sum->missing));
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
