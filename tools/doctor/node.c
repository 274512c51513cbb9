/* node.c - the checks among the ranks of one node (local ranks,
 * GPUs, CPU sets) and the node's line in the report. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "libdist/ranges.h"

/* A CPU list as a bitmap of 64-bit words, sized by the node's highest CPU
 * and parsed once per rank, so that each pair costs a few words. */
static int highest_cpu (long lo, long hi, void *arg)
{
    (void) lo;
    if (hi > *(long *) arg)
        *(long *) arg = hi;
    return 0;
}

static int set_bits (long lo, long hi, void *arg)
{
    uint64_t *words = arg;
    for (long c = lo; c <= hi; c++)
        words[c / 64] |= (uint64_t) 1 << (c % 64);
    return 0;
}

enum overlap { CPUS_APART, CPUS_SAME, CPUS_OVERLAP, CPUS_UNKNOWN };

/* NULL where a rank's list does not parse. */
struct cpu_sets {
    size_t nwords;
    uint64_t *words; /* rank i's at words + i * nwords */
    bool *known;
};

static int cpu_sets_parse (struct cpu_sets *cs, const struct doctor_rank *recs, const size_t *idx,
                           size_t k)
{
    long top = 0;
    size_t i;

    cs->known = calloc (k + 1, sizeof (*cs->known));
    if (cs->known == NULL)
        return -1;
    for (i = 0; i < k; i++)
        cs->known[i] =
            dist_ranges_parse (recs[idx[i]].cpus, DOCTOR_CPUS_MAX - 1, highest_cpu, &top) == 0;
    cs->nwords = (size_t) top / 64 + 1;
    cs->words = calloc (k * cs->nwords + 1, sizeof (*cs->words));
    if (cs->words == NULL)
        return -1;
    for (i = 0; i < k; i++)
        if (cs->known[i])
            dist_ranges_parse (recs[idx[i]].cpus, DOCTOR_CPUS_MAX - 1, set_bits,
                               cs->words + i * cs->nwords);
    return 0;
}

static enum overlap cpus_compare (const struct cpu_sets *cs, size_t a, size_t b)
{
    const uint64_t *x = cs->words + a * cs->nwords, *y = cs->words + b * cs->nwords;
    bool any = false, same = true;

    if (!cs->known[a] || !cs->known[b])
        return CPUS_UNKNOWN;
    for (size_t i = 0; i < cs->nwords; i++) {
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
static void check_pairs (struct doctor_result *res, struct doctor_node_summary *sum,
                         const struct doctor_rank *recs, const size_t *idx, size_t k)
{
    struct cpu_sets cs = {0, NULL, NULL};
    char (*gpu)[DOCTOR_NAME_MAX] = calloc (k + 1, sizeof (*gpu));
    bool gpu_planned_share = false, cpu_share = false;
    size_t i, j;

    if (gpu == NULL || cpu_sets_parse (&cs, recs, idx, k) < 0) {
        doctor_problem (res, "%s: out of memory checking %zu ranks", sum->name, k);
        goto out;
    }
    for (i = 0; i < k; i++)
        gpu_of (&recs[idx[i]], gpu[i], sizeof (gpu[i]));
    for (i = 0; i < k; i++)
        for (j = i + 1; j < k; j++) {
            const struct doctor_rank *a = &recs[idx[i]], *b = &recs[idx[j]], *t;
            size_t ga = i, gb = j;
            /* the lower rank first, whatever order they came in */
            if (a->rank > b->rank) {
                t = a;
                a = b;
                b = t;
                ga = j;
                gb = i;
            }
            if (a->local_rank >= 0 && a->local_rank == b->local_rank)
                doctor_problem (res, "%s: ranks %ld and %ld both have LOCAL_RANK=%ld", sum->name,
                                a->rank, b->rank, a->local_rank);
            if (gpu[ga][0] != '\0' && strcmp (gpu[ga], gpu[gb]) == 0) {
                if (a->gpus[0] != '\0' && b->gpus[0] != '\0')
                    gpu_planned_share = true; /* more ranks than GPUs: the plan's choice */
                else
                    doctor_problem (res,
                                    "%s: ranks %ld and %ld both use GPU %.64s "
                                    "(CUDA_VISIBLE_DEVICES %.64s and %.64s)",
                                    sum->name, a->rank, b->rank, gpu[ga], a->visible, b->visible);
            }
            switch (cpus_compare (&cs, i, j)) {
            case CPUS_SAME:
                cpu_share = true;
                break;
            case CPUS_OVERLAP:
                doctor_problem (
                    res, "%s: ranks %ld and %ld are bound to overlapping CPUs (%.80s and %.80s)",
                    sum->name, a->rank, b->rank, a->cpus, b->cpus);
                break;
            default:
                break;
            }
        }
    if (gpu_planned_share)
        doctor_list_add (sum->note, sizeof (sum->note), "GPUs shared as planned");
    if (cpu_share)
        doctor_list_add (sum->note, sizeof (sum->note), "ranks share CPUs");
out:
    free (gpu);
    free (cs.words);
    free (cs.known);
}

/* The summary of one node: its ranks (indices idx[0..k) of recs). */
static void summarize (struct doctor_node_summary *sum, const struct doctor_rank *recs,
                       const size_t *idx, size_t k)
{
    size_t i;

    sum->max_connect_ms = 0;
    doctor_ranks_of (recs, idx, k, sum->ranks, sizeof (sum->ranks));
    for (i = 0; i < k; i++) {
        const struct doctor_rank *r = &recs[idx[i]];
        doctor_set_add (sum->ifnames, sizeof (sum->ifnames), r->ifname);
        doctor_set_add (sum->sources, sizeof (sum->sources), r->source);
        if (r->connect_ms > sum->max_connect_ms)
            sum->max_connect_ms = r->connect_ms;
    }
}

#define NODE_FINDINGS_MAX 8 /* different lines from one node's ranks: a few say enough */

void doctor_check_stack (struct doctor_result *res, struct doctor_node_summary *sum,
                         const struct doctor_rank *recs, const size_t *idx, size_t k)
{
    const char *seen[NODE_FINDINGS_MAX];
    size_t nseen = 0, i, f, s;

    if (k > 0)
        snprintf (sum->stack, sizeof (sum->stack), "%s", recs[idx[0]].stack);
    /* each line once per node: every rank of a node sees its libraries and ports */
    for (i = 0; i < k && nseen < NODE_FINDINGS_MAX; i++)
        for (f = 0; f < DOCTOR_FINDINGS_MAX && nseen < NODE_FINDINGS_MAX; f++) {
            const char *line = recs[idx[i]].finding[f];
            for (s = 0; s < nseen && strcmp (seen[s], line) != 0; s++)
                ;
            if (line[0] == '\0' || s < nseen)
                continue;
            seen[nseen++] = line;
            if (strncmp (line, "problem: ", 9) == 0)
                doctor_problem (res, "%s: %s", sum->name, line + 9);
            else if (strncmp (line, "warning: ", 9) == 0)
                doctor_warning (res, "%s: %s", sum->name, line + 9);
        }
}

void doctor_check_node (struct doctor_result *res, struct doctor_node_summary *sum,
                        const struct doctor_rank *recs, const size_t *idx, size_t k, size_t bound)
{
    summarize (sum, recs, idx, k);
    check_pairs (res, sum, recs, idx, bound < k ? bound : k);
    doctor_check_stack (res, sum, recs, idx, bound < k ? bound : k);
}
