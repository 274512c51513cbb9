/* Unit tests for shim/rankmap.c: the tasks' RANK and GROUP_RANK under the plugin's rank
 * order, the check that they order the step, and the maps between its ranks and the
 * transport's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shim/rankmap.h"

#define U SHIM_CLAIM_UNSET
#define BAD SHIM_CLAIM_BAD

static void claims_parse_strictly (void **state)
{
    assert_int_equal (shim_claim_parse ("0", 4), 0);
    assert_int_equal (shim_claim_parse ("3", 4), 3);
    assert_int_equal (shim_claim_parse ("0003", 4), 3);
    assert_int_equal (shim_claim_parse (NULL, 4), U);
    assert_int_equal (shim_claim_parse ("4", 4), BAD);
    assert_int_equal (shim_claim_parse ("", 4), BAD);
    assert_int_equal (shim_claim_parse ("-1", 4), BAD);
    assert_int_equal (shim_claim_parse ("+1", 4), BAD);
    assert_int_equal (shim_claim_parse (" 1", 4), BAD);
    assert_int_equal (shim_claim_parse ("1 ", 4), BAD);
    assert_int_equal (shim_claim_parse ("1x", 4), BAD);
    assert_int_equal (shim_claim_parse ("0x1", 4), BAD);
    assert_int_equal (shim_claim_parse ("2147483647", 2147483647), BAD);
    assert_int_equal (shim_claim_parse ("2147483646", 2147483647), 2147483646);
    assert_int_equal (shim_claim_parse ("4294967296", 2147483647), BAD); /* wraps to 0 in 32 bits */
    assert_int_equal (shim_claim_parse ("99999999999", 2147483647), BAD);
    assert_int_equal (shim_claim_parse ("00000000001", 2), BAD); /* 11 digits: never a rank */
}

static void claims_travel_as_twelve_bytes (void **state)
{
    struct shim_claim in = {.rank = 70000, .node_rank = U, .node = 5}, out;
    uint8_t bytes[SHIM_CLAIM_BYTES];

    shim_claim_encode (&in, bytes);
    assert_int_equal (bytes[0], 0x70); /* little-endian */
    assert_int_equal (bytes[2], 0x01);
    assert_int_equal (shim_claim_decode (bytes, sizeof (bytes), &out), 0);
    assert_int_equal (out.rank, 70000);
    assert_int_equal (out.node_rank, U);
    assert_int_equal (out.node, 5);
    assert_int_equal (shim_claim_decode (bytes, sizeof (bytes) - 1, &out), -1);
    assert_int_equal (shim_claim_decode (bytes, sizeof (bytes) + 1, &out), -1);
    assert_int_equal (shim_claim_decode (NULL, sizeof (bytes), &out), -1);
}

/* The map of n tasks on nodes of the claims, or the message of its failure in why. */
static int build (struct shim_rank_map *map, const struct shim_claim *claims, int n, int nodes,
                  char *why, size_t len)
{
    assert_int_equal (shim_rank_map_new (map, n, nodes), 0);
    why[0] = '\0';
    return shim_rank_map_build (map, claims, why, len);
}

/* 4 tasks on 2 nodes (SLURM_PROCID 0, 1 on node 0; 2, 3 on node 1), RANK = 3 - SLURM_PROCID:
 * the transport's node 1 holds rank 0 and is node rank 0. */
static void a_reversed_order_maps_both_ways (void **state)
{
    struct shim_claim claims[4] = {{3, U, 0}, {2, U, 0}, {1, U, 1}, {0, U, 1}};
    struct shim_rank_map map;
    char why[256];

    assert_int_equal (build (&map, claims, 4, 2, why, sizeof (why)), 0);
    for (int t = 0; t < 4; t++) {
        assert_int_equal (map.rank_of[t], 3 - t);
        assert_int_equal (map.transport_of[3 - t], t);
    }
    assert_int_equal (map.node_rank_of[1], 0);
    assert_int_equal (map.node_rank_of[0], 1);
    shim_rank_map_free (&map);
    assert_null (map.rank_of);
    assert_int_equal (map.size, 0);
}

/* Nodes numbered in the order the ranks meet them, each once. */
static void node_ranks_follow_the_ranks (void **state)
{
    /* 6 tasks on 3 nodes, two each; the plugin puts node 2 first, then 0, then 1. */
    struct shim_claim claims[6] = {{2, U, 0}, {3, U, 0}, {4, U, 1},
                                   {5, U, 1}, {0, U, 2}, {1, U, 2}};
    struct shim_rank_map map;
    char why[256];

    assert_int_equal (build (&map, claims, 6, 3, why, sizeof (why)), 0);
    assert_int_equal (map.node_rank_of[2], 0);
    assert_int_equal (map.node_rank_of[0], 1);
    assert_int_equal (map.node_rank_of[1], 2);
    shim_rank_map_free (&map);
}

/* GROUP_RANK, where every task has one, is the plugin's word: taken as it is. */
static void group_rank_is_taken_when_every_task_has_one (void **state)
{
    struct shim_claim claims[4] = {{0, 1, 0}, {1, 1, 0}, {2, 0, 1}, {3, 0, 1}};
    struct shim_rank_map map;
    char why[256];

    assert_int_equal (build (&map, claims, 4, 2, why, sizeof (why)), 0);
    assert_int_equal (map.node_rank_of[0], 1);
    assert_int_equal (map.node_rank_of[1], 0);
    shim_rank_map_free (&map);
}

static void expect_failure (struct shim_claim *claims, int n, int nodes, const char *want)
{
    struct shim_rank_map map;
    char why[256];

    assert_int_equal (build (&map, claims, n, nodes, why, sizeof (why)), -1);
    assert_string_equal (why, want);
    shim_rank_map_free (&map);
}

static void ranks_that_are_no_permutation_name_the_tasks (void **state)
{
    struct shim_claim twice[4] = {{0, U, 0}, {1, U, 0}, {1, U, 1}, {3, U, 1}};
    struct shim_claim unset[4] = {{0, U, 0}, {U, U, 0}, {2, U, 1}, {3, U, 1}};
    struct shim_claim bad[4] = {{0, U, 0}, {1, U, 0}, {BAD, U, 1}, {3, U, 1}};
    struct shim_claim beyond[4] = {{0, U, 0}, {1, U, 0}, {2, U, 1}, {4, U, 1}};
    struct shim_claim negative[4] = {{0, U, 0}, {-7, U, 0}, {2, U, 1}, {3, U, 1}};
    struct shim_claim off_node[4] = {{0, U, 0}, {1, U, 0}, {2, U, 2}, {3, U, 1}};

    expect_failure (twice, 4, 2, "RANK=1 is claimed by tasks 1 and 2 (SLURM_PROCID)");
    expect_failure (unset, 4, 2, "task 1 (SLURM_PROCID) has no RANK");
    expect_failure (bad, 4, 2, "task 2 (SLURM_PROCID) has a RANK that is not a number in 0..3");
    expect_failure (beyond, 4, 2, "task 3 (SLURM_PROCID) has a RANK that is not a number in 0..3");
    expect_failure (negative, 4, 2,
                    "task 1 (SLURM_PROCID) has a RANK that is not a number in 0..3");
    expect_failure (off_node, 4, 2, "task 2 (SLURM_PROCID) is on node 2 of 2");
}

static void group_ranks_must_name_each_node_once (void **state)
{
    struct shim_claim some[4] = {{0, 0, 0}, {1, 0, 0}, {2, U, 1}, {3, 1, 1}};
    struct shim_claim split[4] = {{0, 0, 0}, {1, 1, 0}, {2, 1, 1}, {3, 1, 1}};
    struct shim_claim shared[4] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 1}, {3, 0, 1}};
    struct shim_claim beyond[4] = {{0, 0, 0}, {1, 0, 0}, {2, 2, 1}, {3, 2, 1}};

    expect_failure (some, 4, 2, "GROUP_RANK is set on some tasks, not on task 2 (SLURM_PROCID)");
    expect_failure (split, 4, 2, "tasks of one node say GROUP_RANK=0 and 1 (task 1, SLURM_PROCID)");
    expect_failure (
        shared, 4, 2,
        "GROUP_RANK=0 is claimed by two nodes (task 2, SLURM_PROCID, is on the second)");
    expect_failure (beyond, 4, 2,
                    "task 2 (SLURM_PROCID) has a GROUP_RANK that is not a number in 0..1");
}

/* What the collectives read in the transport's order comes out in the plugin's. */
static void pieces_come_out_in_the_plugins_order (void **state)
{
    const int transport_of[4] = {3, 2, 0, 1};
    const char in[4][3] = {"t0", "t1", "t2", "t3"};
    char out[4][3];

    shim_rank_map_permute (transport_of, 4, in, out, sizeof (in[0]));
    assert_string_equal (out[0], "t3");
    assert_string_equal (out[1], "t2");
    assert_string_equal (out[2], "t0");
    assert_string_equal (out[3], "t1");
}

static void maps_of_no_size_are_refused (void **state)
{
    struct shim_rank_map map;

    assert_int_equal (shim_rank_map_new (&map, 0, 1), -1);
    assert_int_equal (shim_rank_map_new (&map, 1, 0), -1);
    shim_rank_map_free (&map);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (claims_parse_strictly),
        cmocka_unit_test (claims_travel_as_twelve_bytes),
        cmocka_unit_test (a_reversed_order_maps_both_ways),
        cmocka_unit_test (node_ranks_follow_the_ranks),
        cmocka_unit_test (group_rank_is_taken_when_every_task_has_one),
        cmocka_unit_test (ranks_that_are_no_permutation_name_the_tasks),
        cmocka_unit_test (group_ranks_must_name_each_node_once),
        cmocka_unit_test (pieces_come_out_in_the_plugins_order),
        cmocka_unit_test (maps_of_no_size_are_refused),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
