/* fuzz_layout.c - SLURM_DISTRIBUTION, SLURM_STEP_TASKS_PER_NODE and the
 * rank-to-node map built from them (libdist/layout.c).  Input: three lines,
 * the distribution ("cyclic:block"), the tasks per node ("2(x3),1") and
 * SLURM_DIST_PLANESIZE. */
#include "libdist/layout.h"
#include "tests/fuzz/fuzz.h"

#define NODES_MAX 4096 /* the node count slurmstepd gives, here at most */
#define TASKS_MAX (1u << 16) /* larger layouts only cost time */

/* Every rank on a node, and each node with exactly its count of ranks. */
static void check_layout (const uint32_t *counts, size_t nnodes, const uint32_t *node_of_rank,
                          size_t ntasks)
{
    uint32_t *got = calloc (nnodes, sizeof (*got));
    size_t i;

    for (i = 0; i < ntasks; i++) {
        FUZZ_CHECK (node_of_rank[i] < nnodes);
        got[node_of_rank[i]]++;
    }
    for (i = 0; i < nnodes; i++)
        FUZZ_CHECK (got[i] == counts[i]);
    free (got);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size), *p = text;
    char *dist_text = fuzz_line (&p), *tasks_text = fuzz_line (&p), *plane_text = fuzz_line (&p);
    static const size_t maxes[] = {NODES_MAX, 3, 1, 0};
    enum dist_distribution dist = dist_distribution_parse (dist_text);
    uint32_t plane = plane_text != NULL ? (uint32_t) strtoul (plane_text, NULL, 10) : 0;
    uint32_t *counts = NULL;
    int nnodes = -1;

    FUZZ_CHECK (dist >= DIST_DIST_BLOCK && dist <= DIST_DIST_UNKNOWN);
    if (tasks_text != NULL)
        tasks_text = fuzz_dup (tasks_text);
    /* the counts array of exactly max entries: a write past it is caught */
    for (size_t m = 0; m < sizeof (maxes) / sizeof (maxes[0]); m++) {
        uint32_t *c = malloc (maxes[m] * sizeof (*c));
        int n = dist_tasks_per_node_parse (tasks_text, c, maxes[m]);
        FUZZ_CHECK (n >= -1 && n <= (int) maxes[m]);
        if (m == 0) {
            counts = c;
            nnodes = n;
        } else {
            free (c);
        }
    }
    if (nnodes > 0) {
        uint64_t sum = 0;
        for (int i = 0; i < nnodes; i++)
            sum += counts[i];
        if (sum <= TASKS_MAX) {
            static const enum dist_distribution all[] = {DIST_DIST_BLOCK, DIST_DIST_CYCLIC,
                                                         DIST_DIST_PLANE, DIST_DIST_ARBITRARY,
                                                         DIST_DIST_UNKNOWN};
            uint32_t *node_of_rank = malloc ((size_t) sum * sizeof (*node_of_rank));
            for (size_t d = 0; d <= sizeof (all) / sizeof (all[0]); d++) {
                /* the parsed distribution first, then every one */
                enum dist_distribution which = d == 0 ? dist : all[d - 1];
                uint32_t chunk = which == DIST_DIST_PLANE && d > 0 && plane == 0 ? 2 : plane;
                int rc = dist_layout_assign (which, chunk, counts, (size_t) nnodes, node_of_rank,
                                             (size_t) sum);
                if (which == DIST_DIST_BLOCK || which == DIST_DIST_CYCLIC
                    || (which == DIST_DIST_PLANE && chunk > 0))
                    FUZZ_CHECK (rc == 0);
                else
                    FUZZ_CHECK (rc == -1);
                if (rc == 0)
                    check_layout (counts, (size_t) nnodes, node_of_rank, (size_t) sum);
            }
            /* counts that do not add up to the task count are refused */
            FUZZ_CHECK (dist_layout_assign (DIST_DIST_BLOCK, 1, counts, (size_t) nnodes,
                                            node_of_rank, (size_t) sum + 1)
                        == -1);
            free (node_of_rank);
        }
    }
    free (counts);
    free (tasks_text);
    free (text);
    return 0;
}
