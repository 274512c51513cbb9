/* test_netgroup.c - the step's nodes in Slurm's leaf switches and blocks, the text srun
 * hands over, and the rank order that keeps each group's ranks together. */
#include <setjmp.h>
#include <stdarg.h>
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
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
