/* test_netgroup.c - the step's nodes in Slurm's leaf switches and blocks, the text srun
 * hands over, and the rank order that keeps each group's ranks together. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/netgroup.h"

/* What Slurm 22.05's scontrol show topology prints for a tree whose switches hold nodes out
 * of name order, with a top switch. */
static const char tree[] = "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=node[7-12]\n"
                           "SwitchName=s2 Level=0 LinkSpeed=1 Nodes=node[1-6]\n"
                           "SwitchName=top Level=1 LinkSpeed=1 Nodes=node[1-12] Switches=s[1-2]\n";

static char *names12[] = {"node1", "node2", "node3", "node4",  "node5",  "node6",
                          "node7", "node8", "node9", "node10", "node11", "node12"};

static void test_tree_groups_follow_switch_order (void **state)
{
    uint32_t group[12];
    char err[256] = "";
    int i;

    (void) state;
    assert_int_equal (dist_netgroup_assign (tree, names12, 12, group, err, sizeof (err)), 2);
    for (i = 0; i < 6; i++)
        assert_int_equal (group[i], 1); /* node1-6 under s2, the second switch */
    for (i = 6; i < 12; i++)
        assert_int_equal (group[i], 0);
}

static void test_groups_count_only_the_steps (void **state)
{
    /* a step on node5..node8 and a node the topology leaves out */
    static char *names[] = {"node5", "node6", "node7", "node8", "login1"};
    static const char three[] = "SwitchName=a Level=0 LinkSpeed=1 Nodes=node[1-4]\n"
                                "SwitchName=b Level=0 LinkSpeed=1 Nodes=node[5-6]\n"
                                "SwitchName=c Level=0 LinkSpeed=1 Nodes=node[7-8]\n";
    uint32_t group[5];
    char err[256] = "";

    (void) state;
    assert_int_equal (dist_netgroup_assign (three, names, 5, group, err, sizeof (err)), 3);
    assert_int_equal (group[0], 0);
    assert_int_equal (group[1], 0);
    assert_int_equal (group[2], 1);
    assert_int_equal (group[3], 1);
    assert_int_equal (group[4], 2); /* the unplaced share the last group */
}

static void test_blocks (void **state)
{
    /* topology/block as 24.11 and 26.05 print it, aggregated blocks ignored */
    static const char blocks[] = "BlockName=b1 BlockIndex=0 Nodes=node[01-02] BlockSize=2\n"
                                 "BlockName=b2 BlockIndex=1 Nodes=node[03-04] BlockSize=2\n"
                                 "AggregatedBlock=b[1-2] BlockIndex=0 Nodes=node[01-04] "
                                 "BlockSize=4\n";
    static char *names[] = {"node03", "node01", "node04", "node02"};
    uint32_t group[4];
    char err[256] = "";

    (void) state;
    assert_int_equal (dist_netgroup_assign (blocks, names, 4, group, err, sizeof (err)), 2);
    assert_int_equal (group[0], 1);
    assert_int_equal (group[1], 0);
    assert_int_equal (group[2], 1);
    assert_int_equal (group[3], 0);
}

static void test_no_topology_and_bad_lists (void **state)
{
    uint32_t group[12];
    char err[256] = "";

    (void) state;
    /* no leaf record: no groups at all */
    assert_int_equal (dist_netgroup_assign ("", names12, 12, group, err, sizeof (err)), 0);
    assert_int_equal (dist_netgroup_assign ("SwitchName=top Level=1 Switches=s[1-2]\n", names12, 12,
                                            group, err, sizeof (err)),
                      0);
    assert_int_equal (group[11], 0);
    /* a node list no Slurm writes is refused, with the reason */
    assert_int_equal (dist_netgroup_assign ("SwitchName=s1 Level=0 Nodes=node[3-1\n", names12, 12,
                                            group, err, sizeof (err)),
                      -1);
    assert_non_null (strstr (err, "does not parse"));
}

static void test_text_round_trip (void **state)
{
    uint32_t group[6] = {1, 1, 0, 0, 2, 2}, back[6], n = 0;
    char *text;

    (void) state;
    text = dist_netgroup_text (7, 3, 3, group, 6);
    assert_non_null (text);
    assert_string_equal (text, "step=7.3 groups=3 nodes=6 of=1..0*2,2*2");
    assert_int_equal (dist_netgroup_text_parse (text, 7, 3, 6, back, &n), 0);
    assert_int_equal (n, 3);
    assert_memory_equal (back, group, sizeof (group));
    /* another step, another shape, a group out of range, trailing bytes */
    assert_int_equal (dist_netgroup_text_parse (text, 7, 4, 6, back, &n), -1);
    assert_int_equal (dist_netgroup_text_parse (text, 7, 3, 5, back, &n), -1);
    assert_int_equal (
        dist_netgroup_text_parse ("step=7.3 groups=2 nodes=2 of=0,2", 7, 3, 2, back, &n), -1);
    assert_int_equal (
        dist_netgroup_text_parse ("step=7.3 groups=1 nodes=2 of=0*2 x", 7, 3, 2, back, &n), -1);
    assert_int_equal (
        dist_netgroup_text_parse ("step=7.3 groups=0 nodes=2 of=0*2", 7, 3, 2, back, &n), -1);
    assert_null (dist_netgroup_text (7, 3, 2, group, 6)); /* group 2 is not below 2 */
    free (text);
}

/* 4 nodes of 2 ranks each (block): nodes 0 and 2 under switch 1, nodes 1 and 3 under 0. */
static const uint32_t block_nodes[8] = {0, 0, 1, 1, 2, 2, 3, 3};
static const uint32_t interleaved[4] = {1, 0, 1, 0};

static void test_order_by_group (void **state)
{
    static const uint32_t want_rank[8] = {4, 5, 0, 1, 6, 7, 2, 3};
    static const uint32_t want_node[4] = {2, 0, 3, 1};
    static const uint32_t want_group_rank[8] = {0, 1, 0, 1, 2, 3, 2, 3};
    struct dist_netorder o;
    uint32_t in_order[8], r;

    (void) state;
    assert_int_equal (dist_netorder_make (&o, 1, 2, interleaved, 4, block_nodes, 8), 0);
    assert_memory_equal (o.new_rank, want_rank, sizeof (want_rank));
    assert_memory_equal (o.new_node, want_node, sizeof (want_node));
    assert_memory_equal (o.group_rank, want_group_rank, sizeof (want_group_rank));
    assert_int_equal (o.group_size[0], 4);
    assert_int_equal (o.group_size[1], 4);
    assert_int_equal (o.slurm_rank0, 2); /* Slurm's rank 2, on node 1 under switch 0 */
    /* a ring in RANK order crosses between the switches twice; in Slurm's order, 4 times */
    for (r = 0; r < 8; r++)
        in_order[o.new_rank[r]] = interleaved[block_nodes[r]];
    assert_int_equal (dist_netgroup_ring_crossings (in_order, 8), 2);
    for (r = 0; r < 8; r++)
        in_order[r] = interleaved[block_nodes[r]];
    assert_int_equal (dist_netgroup_ring_crossings (in_order, 8), 4);
    dist_netorder_free (&o);
}

static void test_slurm_order_kept (void **state)
{
    static const uint32_t cyclic[8] = {0, 1, 2, 3, 0, 1, 2, 3};
    static const uint32_t want_group_rank[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    struct dist_netorder o;
    uint32_t r;

    (void) state;
    assert_int_equal (dist_netorder_make (&o, 0, 2, interleaved, 4, cyclic, 8), 0);
    for (r = 0; r < 8; r++)
        assert_int_equal (o.new_rank[r], r);
    assert_int_equal (o.new_node[3], 3);
    assert_memory_equal (o.group_rank, want_group_rank, sizeof (want_group_rank));
    assert_int_equal (o.slurm_rank0, 0);
    dist_netorder_free (&o);
    /* out of range: a group, a node */
    assert_int_equal (dist_netorder_make (&o, 1, 1, interleaved, 4, cyclic, 8), -1);
    assert_int_equal (dist_netorder_make (&o, 1, 2, interleaved, 3, cyclic, 8), -1);
    assert_null (o.new_rank);
}

/* ---- one node's share, from the runs, against the whole order ----------------------- */

static uint64_t seed = 0x2545f4914f6cdd1du;

static uint32_t below (uint32_t n)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (uint32_t) (seed % n);
}

/* A layout of nnodes nodes: block, cyclic or plane over uneven counts, whole nodes in
 * reverse, or shuffled ranks; into node_of_rank, its rank count returned. */
static uint32_t make_layout (int kind, uint32_t nnodes, uint32_t *node_of_rank)
{
    uint32_t counts[64], left[64], n = 0, plane = 1 + below (3);

    for (uint32_t i = 0; i < nnodes; i++)
        n += left[i] = counts[i] = kind == 0 ? 4 : 1 + below (4);
    if (kind <= 1) /* block */
        for (uint32_t i = 0, r = 0; i < nnodes; i++)
            for (uint32_t k = 0; k < counts[i]; k++)
                node_of_rank[r++] = i;
    else if (kind <= 3) /* cyclic (plane 1), plane */
        for (uint32_t r = 0, i = 0; r < n; i = (i + 1) % nnodes)
            for (uint32_t k = 0; k < (kind == 2 ? 1 : plane) && left[i] > 0; k++, left[i]--)
                node_of_rank[r++] = i;
    else if (kind == 4) /* a hostfile of whole nodes, last first */
        for (uint32_t i = nnodes, r = 0; i-- > 0;)
            for (uint32_t k = 0; k < counts[i]; k++)
                node_of_rank[r++] = i;
    else { /* scrambled */
        for (uint32_t i = 0, r = 0; i < nnodes; i++)
            for (uint32_t k = 0; k < counts[i]; k++)
                node_of_rank[r++] = i;
        for (uint32_t r = n; r > 1; r--) {
            uint32_t j = below (r), t = node_of_rank[r - 1];
            node_of_rank[r - 1] = node_of_rank[j];
            node_of_rank[j] = t;
        }
    }
    return n;
}

/* Groups of consecutive nodes, or of nodes anywhere; their number. */
static uint32_t make_groups (bool consecutive, uint32_t nnodes, uint32_t *group)
{
    uint32_t ngroups = 1 + below (nnodes < 5 ? nnodes : 5), g;

    for (uint32_t i = 0; i < nnodes; i++)
        group[i] = consecutive ? (uint32_t) ((uint64_t) i * ngroups / nnodes) : below (ngroups);
    /* (every group holds a node, as dist_netgroup_assign numbers them; consecutive ones
     * do, ngroups being at most nnodes) */
    for (g = 0; !consecutive && g < ngroups; g++)
        group[g] = g;
    return ngroups;
}

/* Whether the nodes first appear as 0, 1, 2, ...: what the runs' shortcut needs. */
static bool first_in_order (const uint32_t *node_of_rank, uint32_t n)
{
    uint32_t next = 0;

    for (uint32_t r = 0; r < n; r++) {
        if (node_of_rank[r] > next)
            return false;
        if (node_of_rank[r] == next)
            next++;
    }
    return true;
}

/* RANK 0's layout by RANK, from the runs, is the whole order's. */
static void check_layout_by_rank (const struct dist_netorder *full, const uint32_t *node_of_rank,
                                  const struct dist_runs *lr, const struct dist_runs *gr,
                                  uint32_t ngroups)
{
    uint32_t by_rank[256], back[256];
    char *text = dist_local_order_layout_text (1, 0, lr, gr, ngroups);

    assert_non_null (text);
    for (uint32_t r = 0; r < full->nranks; r++)
        by_rank[full->new_rank[r]] = node_of_rank[r];
    assert_int_equal (dist_layout_text_parse (text, 1, 0, full->nnodes, full->nranks, back), 0);
    assert_memory_equal (back, by_rank, full->nranks * sizeof (*back));
    free (text);
}

/* Node me's share from the runs (groups NULL: none) against the whole order: 1 when it
 * was worked out, 0 when refused, as it must be when the nodes are not in order. */
static int check_node (const struct dist_netorder *full, const uint32_t *node_of_rank, uint32_t n,
                       int by_group, const struct dist_runs *lr, const struct dist_runs *gr,
                       uint32_t me)
{
    struct dist_local_order o;
    uint32_t mine[8], nlocal = 0;
    int rc;

    for (uint32_t r = 0; r < n && nlocal < 8; r++)
        if (node_of_rank[r] == me)
            mine[nlocal++] = r;
    rc = dist_local_order_make (&o, by_group, lr, gr, full->ngroups, me, mine, nlocal);
    if (!first_in_order (node_of_rank, n)) {
        assert_int_equal (rc, -1);
        return 0;
    }
    assert_int_equal (rc, 0);
    assert_int_equal (o.node_rank, full->new_node[me]);
    assert_int_equal (o.slurm_rank0, full->slurm_rank0);
    assert_int_equal (o.ngroups, full->ngroups);
    assert_int_equal (o.group, full->group_of_node[me]);
    assert_int_equal (o.group_size, full->group_size[o.group]);
    for (uint32_t i = 0; i < nlocal; i++) {
        assert_int_equal (o.rank[i], full->new_rank[mine[i]]);
        assert_int_equal (o.group_rank[i], full->group_rank[mine[i]]);
    }
    dist_local_order_free (&o);
    return 1;
}

/* Every node of many layouts: what it works out from the runs is what the whole order
 * says, and it works it out whenever the nodes first appear in order. */
static void test_local_order_matches (void **state)
{
    uint32_t node_of_rank[256], group[64];
    int checked = 0;

    (void) state;
    for (int round = 0; round < 600; round++) {
        int kind = round % 6, by_group = (round / 6) % 2;
        bool with_groups = (round / 12) % 3 != 0, consecutive = (round / 12) % 3 == 1;
        uint32_t nnodes = 1 + below (24), n = make_layout (kind, nnodes, node_of_rank);
        uint32_t ngroups = with_groups ? make_groups (consecutive, nnodes, group) : 1;
        struct dist_runs lr, gr;
        struct dist_netorder full;
        char *lt, *gt;

        if (!with_groups)
            memset (group, 0, sizeof (group));
        lt = dist_layout_text (1, 0, nnodes, node_of_rank, n);
        gt = dist_netgroup_text (1, 0, ngroups, group, nnodes);
        assert_non_null (lt);
        assert_non_null (gt);
        assert_int_equal (dist_layout_text_runs (lt, 1, 0, nnodes, n, &lr), 0);
        assert_int_equal (dist_netgroup_text_runs (gt, 1, 0, nnodes, &gr, &ngroups), 0);
        assert_int_equal (
            dist_netorder_make (&full, by_group, ngroups, group, nnodes, node_of_rank, n), 0);
        /* (any layout: the runs need no order of the nodes for this) */
        if (by_group && with_groups)
            check_layout_by_rank (&full, node_of_rank, &lr, &gr, ngroups);
        for (uint32_t me = 0; me < nnodes; me++)
            checked +=
                check_node (&full, node_of_rank, n, by_group, &lr, with_groups ? &gr : NULL, me);
        dist_netorder_free (&full);
        dist_runs_free (&lr);
        dist_runs_free (&gr);
        free (lt);
        free (gt);
    }
    assert_true (checked > 2000);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_tree_groups_follow_switch_order),
        cmocka_unit_test (test_groups_count_only_the_steps),
        cmocka_unit_test (test_blocks),
        cmocka_unit_test (test_no_topology_and_bad_lists),
        cmocka_unit_test (test_text_round_trip),
        cmocka_unit_test (test_order_by_group),
        cmocka_unit_test (test_slurm_order_kept),
        cmocka_unit_test (test_local_order_matches),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
