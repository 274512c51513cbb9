/* doctor_node.c - the checks among the ranks of one node (local ranks,
 * GPUs, CPU sets) and the node's line in the report. */
#include <stdlib.h>
#include <string.h>

#include "doctor_text.h"
#include "libdist/ranges.h"

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
static void check_pairs (struct doctor_result *res, struct doctor_node_summary *sum,
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
                doctor_problem (res, "%s: ranks %ld and %ld both have LOCAL_RANK=%ld", sum->name,
                                a->rank, b->rank, a->local_rank);
            gpu_of (a, gi, sizeof (gi));
            gpu_of (b, gj, sizeof (gj));
            if (gi[0] != '\0' && strcmp (gi, gj) == 0) {
                if (a->gpus[0] != '\0' && b->gpus[0] != '\0')
                    gpu_planned_share = true; /* more ranks than GPUs: the plan's choice */
                else
                    doctor_problem (res,
                                    "%s: ranks %ld and %ld both use GPU %.64s "
                                    "(CUDA_VISIBLE_DEVICES %.64s and %.64s)",
                                    sum->name, a->rank, b->rank, gi, a->visible, b->visible);
            }
            switch (cpus_compare (a->cpus, b->cpus)) {
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

void doctor_check_node (struct doctor_result *res, struct doctor_node_summary *sum,
                        const struct doctor_rank *recs, const size_t *idx, size_t k)
{
    summarize (sum, recs, idx, k);
    check_pairs (res, sum, recs, idx, k);
}
