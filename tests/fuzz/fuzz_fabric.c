/* fuzz_fabric.c - the fabric check's plan and results as they come from the
 * network (tools/doctor/fabric.c), and the verdict over the paths they
 * describe.  A plan reaches a node from rank 0 and results reach rank 0
 * from every node, each signed; still, whatever arrives, every field stays
 * in bounds and every line of the verdict is one line.  Input: a plan,
 * then a line "--", then results (as node 1's), as the wire has them. */
#define _GNU_SOURCE /* memmem */
#include "tests/fuzz/fuzz.h"
#include "tools/doctor/fabric.h"

static void check_lines (const struct doctor_result *res)
{
    for (size_t i = 0; i < res->nproblems && i < DOCTOR_PROBLEMS_MAX; i++)
        FUZZ_CHECK (strchr (res->problem[i], '\n') == NULL);
    for (size_t i = 0; i < res->nwarnings && i < DOCTOR_WARNINGS_MAX; i++)
        FUZZ_CHECK (strchr (res->warning[i], '\n') == NULL);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const char *sep = memmem (data, size, "\n--\n", 4);
    size_t plen = sep != NULL ? (size_t) (sep - (const char *) data) + 1 : size;
    struct fabric_pair pairs[FABRIC_ROUNDS_MAX * 2];
    struct fabric_node nodes[FABRIC_ROUNDS_MAX + 2];
    struct fabric_plan plan;
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n = 0, nn;

    if (fabric_plan_decode ((const char *) data, plen, &plan) == 0) {
        FUZZ_CHECK (plan.nodes >= 2 && plan.index < plan.nodes);
        FUZZ_CHECK (plan.ntargets <= FABRIC_ROUNDS_MAX && plan.expect <= FABRIC_ROUNDS_MAX);
        for (size_t i = 0; i < plan.ntargets; i++) {
            FUZZ_CHECK (plan.target[i].to < plan.nodes);
            FUZZ_CHECK (plan.target[i].port >= 1 && plan.target[i].port <= 65535);
            FUZZ_CHECK (strlen (plan.target[i].addr) < DOCTOR_NAME_MAX);
            FUZZ_CHECK (strlen (plan.target[i].name) < DOCTOR_NAME_MAX);
        }
    }
    if (sep == NULL)
        return 0;
    /* the results of node 1 of a step of a few nodes */
    nn = sizeof (nodes) / sizeof (nodes[0]);
    if (fabric_result_decode (sep + 4, size - plen - 3, 1, (uint32_t) nn, pairs, FABRIC_ROUNDS_MAX,
                              &n)
        != 0)
        return 0;
    FUZZ_CHECK (n <= FABRIC_ROUNDS_MAX);
    memset (nodes, 0, sizeof (nodes));
    for (size_t i = 0; i < nn; i++) {
        snprintf (nodes[i].name, sizeof (nodes[i].name), "node%zu", i);
        nodes[i].port = 20000;
        nodes[i].mtu = 1500;
    }
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK (pairs[i].from == 1 && pairs[i].to < nn && pairs[i].to != 1);
        FUZZ_CHECK (strlen (pairs[i].egress) < DOCTOR_NAME_MAX);
    }
    memset (&res, 0, sizeof (res));
    FUZZ_CHECK (fabric_judge (&res, nodes, nn, pairs, n, FABRIC_FAIL, summary, sizeof (summary))
                == 0);
    FUZZ_CHECK (strchr (summary, '\n') == NULL);
    check_lines (&res);
    return 0;
}
