/* test_slurm_lists.c - the lists Slurm gives a step, as libdist reads them: GPU indices
 * (SLURM_STEP_GPUS, CUDA_VISIBLE_DEVICES), comma-separated names, and cores, which become
 * the PUs of a recorded topology read from $TOPOLOGY_DIR (tests/topologies by default). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/bind.h"
#include "libdist/topo.h"
#include "topologies.h"

#define G4DN_METAL "g4dnmetal.xml" /* 48 cores of 2 PUs */
#define MINICLUSTER "minicluster-4gpu.xml" /* 2 PUs */

static void test_index_list (void **state)
{
    int out[128], i;
    char list[1024];
    size_t off = 0;

    assert_int_equal (dist_parse_index_list ("0", out, 64), 1);
    assert_int_equal (out[0], 0);
    assert_int_equal (dist_parse_index_list ("3,1", out, 64), 2);
    assert_int_equal (out[0], 3);
    assert_int_equal (out[1], 1);
    assert_int_equal (dist_parse_index_list ("0-3,6", out, 64), 5);
    assert_int_equal (out[3], 3);
    assert_int_equal (out[4], 6);
    assert_int_equal (dist_parse_index_list ("4095", out, 64), 1);
    assert_int_equal (out[0], 4095);
    for (i = 0; i < 100; i++)
        off += (size_t) snprintf (list + off, sizeof (list) - off, "%s%d", i ? "," : "", i);
    assert_int_equal (dist_parse_index_list (list, out, 128), 100);
    assert_int_equal (out[99], 99);
    assert_int_equal (dist_parse_index_list (list, out, 64), -1);
    assert_int_equal (dist_parse_index_list ("0-4095", out, 64), -1);
    assert_int_equal (dist_parse_index_list ("0-63", out, 64), 64);
}

static void test_index_list_bad (void **state)
{
    const char *bad[] = {"",           "5-",    "-5",   "0,,1",   ",0",
                         "0,",         "3-1",   "4096", "1-4096", "99999999999999999999",
                         "4294967296", "1 ,2",  " 1",   "1 ",     "a",
                         "0x1",        "1-2-3", "+1",   "1;2",    "GPU-8f3a",
                         "0-",         "--"};
    char digits[2000];
    int out[64];
    size_t i;

    assert_int_equal (dist_parse_index_list (NULL, out, 64), -1);
    for (i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
        if (dist_parse_index_list (bad[i], out, 64) != -1)
            fail_msg ("'%s' parsed", bad[i]);
    memset (digits, '7', sizeof (digits) - 1);
    digits[sizeof (digits) - 1] = '\0';
    assert_int_equal (dist_parse_index_list (digits, out, 64), -1);
}

/* Slurm's GPU variables: global and local indices, UUIDs, MIG ids, junk. */
static void test_step_gpus (void **state)
{
    char tokens[DIST_GPUS_MAX][64], err[256];
    int index[DIST_GPUS_MAX];

    /* unconstrained: CUDA_VISIBLE_DEVICES holds the global indices */
    assert_int_equal (dist_step_gpus ("2,3", "2,3", index, tokens, err, sizeof (err)), 2);
    assert_int_equal (index[0], 2);
    assert_string_equal (tokens[1], "3");
    /* ConstrainDevices: local indices, matched by position */
    assert_int_equal (dist_step_gpus ("0,1", "4,6", index, tokens, err, sizeof (err)), 2);
    assert_int_equal (index[1], 6);
    assert_string_equal (tokens[1], "1");
    /* UUIDs with SLURM_STEP_GPUS: the names are kept as they are */
    assert_int_equal (
        dist_step_gpus ("GPU-5d7f9a1c,GPU-77aa0b2e", "0,1", index, tokens, err, sizeof (err)), 2);
    assert_string_equal (tokens[0], "GPU-5d7f9a1c");
    /* no GPUs */
    assert_int_equal (dist_step_gpus (NULL, NULL, index, tokens, err, sizeof (err)), 0);
    assert_int_equal (dist_step_gpus ("", "0", index, tokens, err, sizeof (err)), 0);
    assert_int_equal (dist_step_gpus ("NoDevFiles", NULL, index, tokens, err, sizeof (err)), 0);
    /* UUID or MIG ids without Slurm's indices: cannot be placed */
    assert_int_equal (
        dist_step_gpus ("GPU-5d7f9a1c,MIG-2b4e6f80", NULL, index, tokens, err, sizeof (err)), -1);
    assert_non_null (strstr (err, "UUID or MIG"));
    /* MIG instances: more names than Slurm's GPUs */
    assert_int_equal (dist_step_gpus ("MIG-a,MIG-b,MIG-c", "0", index, tokens, err, sizeof (err)),
                      -1);
    assert_non_null (strstr (err, "differ in length"));
    assert_int_equal (dist_step_gpus ("0,,1", "0,1", index, tokens, err, sizeof (err)), -1);
    assert_non_null (strstr (err, "does not parse"));
}

static void test_split_list (void **state)
{
    char tok[100][64], list[8000], longtok[100];
    size_t off = 0;
    int i;

    assert_int_equal (dist_split_list ("GPU-8f3a1c2e,MIG-GPU-1/2/0", tok, 8), 2);
    assert_string_equal (tok[0], "GPU-8f3a1c2e");
    assert_string_equal (tok[1], "MIG-GPU-1/2/0");
    assert_int_equal (dist_split_list ("3", tok, 8), 1);
    assert_string_equal (tok[0], "3");
    memset (longtok, 'x', 63);
    longtok[63] = '\0';
    assert_int_equal (dist_split_list (longtok, tok, 8), 1);
    assert_int_equal (strlen (tok[0]), 63);
    longtok[63] = 'x';
    longtok[64] = '\0';
    assert_int_equal (dist_split_list (longtok, tok, 8), -1);
    assert_int_equal (dist_split_list (NULL, tok, 8), -1);
    assert_int_equal (dist_split_list ("", tok, 8), -1);
    assert_int_equal (dist_split_list ("0,,1", tok, 8), -1);
    assert_int_equal (dist_split_list (",0", tok, 8), -1);
    assert_int_equal (dist_split_list ("0,", tok, 8), -1);
    assert_int_equal (dist_split_list (",", tok, 8), -1);
    for (i = 0; i < 100; i++)
        off += (size_t) snprintf (list + off, sizeof (list) - off, "%sGPU-%d", i ? "," : "", i);
    assert_int_equal (dist_split_list (list, tok, 100), 100);
    assert_string_equal (tok[99], "GPU-99");
    assert_int_equal (dist_split_list (list, tok, 64), -1);
}

static void test_cores_cpuset (void **state)
{
    struct dist_topo t;
    hwloc_bitmap_t out = hwloc_bitmap_alloc (), missing = hwloc_bitmap_alloc ();
    char err[256], list[1024];
    size_t off = 0;
    int i;

    topology_load (G4DN_METAL, &t);
    assert_int_equal (dist_topo_cores_cpuset (&t, "0-23", out, NULL, err, sizeof (err)), 0);
    assert_cpus (out, "0-23,48-71");
    assert_int_equal (dist_topo_cores_cpuset (&t, "0,47", out, NULL, err, sizeof (err)), 0);
    assert_cpus (out, "0,47-48,95");
    /* cores the topology lacks are counted, left out and named */
    assert_int_equal (dist_topo_cores_cpuset (&t, "46-50", out, NULL, err, sizeof (err)), 3);
    assert_cpus (out, "46-47,94-95");
    assert_int_equal (dist_topo_cores_cpuset (&t, "0,46-50,60", out, missing, err, sizeof (err)),
                      4);
    assert_cpus (out, "0,46-48,94-95");
    assert_cpus (missing, "48-50,60");
    assert_int_equal (dist_topo_cores_cpuset (&t, "1-2", out, missing, err, sizeof (err)), 0);
    assert_true (hwloc_bitmap_iszero (missing));
    assert_int_equal (dist_topo_cores_cpuset (&t, "65535", out, NULL, err, sizeof (err)), 1);
    assert_true (hwloc_bitmap_iszero (out));
    for (i = 0; i < 100; i++)
        off += (size_t) snprintf (list + off, sizeof (list) - off, "%s%d", i ? "," : "", i);
    assert_int_equal (dist_topo_cores_cpuset (&t, list, out, NULL, err, sizeof (err)), 52);
    assert_int_equal (hwloc_bitmap_weight (out), 96);
    assert_int_equal (dist_topo_core_count (&t), 48);
    hwloc_bitmap_free (out);
    hwloc_bitmap_free (missing);
    dist_topo_destroy (&t);
}

/* Each of these once hung (-5), allocated 512 MB (4294967295), wrapped to
 * core 0 (4294967296) or made an empty step (1-0) in hwloc's parser. */
static void test_cores_cpuset_bad (void **state)
{
    const char *bad[] = {
        "",        "5-",          "-5",         "0,,1",       ",0",   "0,",    "1-0", "65536",
        "0-65536", "99999999999", "4294967295", "4294967296", "0--1", "1-2-3", "0x3", "a",
        " 1",      "1 ",          "1;2",        "+1",         "0-",   "-"};
    struct dist_topo t;
    hwloc_bitmap_t out = hwloc_bitmap_alloc ();
    char err[256], digits[3000];
    size_t i;

    topology_load (MINICLUSTER, &t);
    assert_int_equal (dist_topo_cores_cpuset (&t, NULL, out, NULL, err, sizeof (err)), -1);
    for (i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        err[0] = '\0';
        if (dist_topo_cores_cpuset (&t, bad[i], out, NULL, err, sizeof (err)) != -1)
            fail_msg ("'%s' parsed", bad[i]);
        assert_non_null (strstr (err, "does not parse"));
        assert_true (hwloc_bitmap_iszero (out));
    }
    memset (digits, '1', sizeof (digits) - 1);
    digits[sizeof (digits) - 1] = '\0';
    assert_int_equal (dist_topo_cores_cpuset (&t, digits, out, NULL, err, sizeof (err)), -1);
    assert_int_equal (dist_topo_cores_cpuset (&t, "0-1", out, NULL, err, sizeof (err)), 0);
    assert_cpus (out, "0-1");
    hwloc_bitmap_free (out);
    dist_topo_destroy (&t);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_index_list),   cmocka_unit_test (test_index_list_bad),
        cmocka_unit_test (test_split_list),   cmocka_unit_test (test_step_gpus),
        cmocka_unit_test (test_cores_cpuset), cmocka_unit_test (test_cores_cpuset_bad),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
