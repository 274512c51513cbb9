/* test_handover.c - srun's texts for the nodes (the hand-over, and the arbitrary
 * distribution's layout): round trip, and hostile input refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/handover.h"

static void test_round_trip (void **state)
{
    struct dist_handover h = {.job_id = 4294967295u, .step_id = 7, .fail_fast = true};
    struct dist_handover back;
    char text[DIST_HANDOVER_MAX];

    strcpy (h.rank0_node, "gpu-a017");
    strcpy (h.rank0_addr, "10.1.2.17");
    assert_int_equal (dist_handover_format (&h, text, sizeof (text)), 0);
    assert_string_equal (text, "step=4294967295.7 rank0=gpu-a017 addr=10.1.2.17 fail_fast=1");
    assert_int_equal (dist_handover_parse (text, &back), 0);
    assert_int_equal (back.job_id, 4294967295u);
    assert_int_equal (back.step_id, 7);
    assert_string_equal (back.rank0_node, "gpu-a017");
    assert_string_equal (back.rank0_addr, "10.1.2.17");
    assert_true (back.fail_fast);
}

/* srun could not ask slurmctld: only the step and fail fast. */
static void test_empty_names (void **state)
{
    struct dist_handover h = {.job_id = 3, .step_id = 0};
    char text[DIST_HANDOVER_MAX];

    assert_int_equal (dist_handover_format (&h, text, sizeof (text)), 0);
    assert_int_equal (dist_handover_parse (text, &h), 0);
    assert_string_equal (h.rank0_node, "");
    assert_string_equal (h.rank0_addr, "");
    assert_false (h.fail_fast);
    /* IPv6 NodeAddr */
    assert_int_equal (dist_handover_parse ("step=1.2 addr=fd00::1:17 rank0=n1", &h), 0);
    assert_string_equal (h.rank0_addr, "fd00::1:17");
}

static void test_format_refuses_odd_names (void **state)
{
    struct dist_handover h = {.job_id = 1};
    char text[DIST_HANDOVER_MAX];

    strcpy (h.rank0_node, "node 1");
    assert_int_equal (dist_handover_format (&h, text, sizeof (text)), -1);
    strcpy (h.rank0_node, "node1");
    strcpy (h.rank0_addr, "%s%n");
    assert_int_equal (dist_handover_format (&h, text, sizeof (text)), -1);
    strcpy (h.rank0_addr, "10.0.0.1");
    assert_int_equal (dist_handover_format (&h, text, 10), -1); /* does not fit */
}

static void test_parse_refuses_hostile_text (void **state)
{
    static const char *bad[] = {
        "", /* no step */
        "rank0=n1 addr=10.0.0.1", /* no step */
        "step=1 rank0=n1", /* no step id */
        "step=.1",
        "step=1.",
        "step=1.2.3",
        "step=99999999999.1", /* beyond 32 bits */
        "step=4294967296.0",
        "step=-1.0",
        "step=1.0 fail_fast=2",
        "step=1.0 fail_fast=",
        "step=1.0 colour=red", /* unknown key */
        "step=1.0 rank0", /* no '=' */
        "step=1.0 rank0=/proc/self/maps",
        "step=1.0 addr=10.0.0.1;reboot",
        "step=1.0 rank0=a\tb",
        "step=1.0 rank0=n\n1",
    };
    struct dist_handover h;
    char big[DIST_HANDOVER_MAX + 10];
    size_t i;

    for (i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        memset (&h, 0x55, sizeof (h));
        assert_int_equal (dist_handover_parse (bad[i], &h), -1);
        assert_int_equal (h.job_id, 0); /* cleared, nothing half-read */
        assert_string_equal (h.rank0_node, "");
    }
    assert_int_equal (dist_handover_parse (NULL, &h), -1);
    /* a name of DIST_NODE_MAX characters does not fit */
    memset (big, 'a', sizeof (big));
    memcpy (big, "step=1.0 rank0=", 15);
    big[15 + DIST_NODE_MAX] = '\0';
    assert_int_equal (dist_handover_parse (big, &h), -1);
    big[15 + DIST_NODE_MAX - 1] = '\0';
    assert_int_equal (dist_handover_parse (big, &h), 0);
    assert_int_equal (strlen (h.rank0_node), DIST_NODE_MAX - 1);
    /* the whole text is bounded too */
    memset (big, ' ', sizeof (big));
    memcpy (big, "step=1.0", 8);
    big[sizeof (big) - 1] = '\0';
    assert_int_equal (dist_handover_parse (big, &h), -1);
}

/* The step's key: drawn fresh, carried as 64 lowercase hex digits, and
 * nothing else accepted in its place. */
static void test_key (void **state)
{
    struct dist_handover h = {.job_id = 9, .step_id = 0}, back;
    char text[DIST_HANDOVER_MAX], other[DIST_STEP_KEY_HEX + 1];
    const char *bad[] = {
        "step=9.0 key=",
        "step=9.0 key=0123", /* too short */
        "step=9.0 key=0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", /* upper */
        "step=9.0 key=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefa", /* long */
        "step=9.0 key=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg",
    };

    (void) state;
    assert_int_equal (dist_random_hex (h.key, DIST_STEP_KEY_HEX / 2), 0);
    assert_int_equal (strlen (h.key), DIST_STEP_KEY_HEX);
    assert_int_equal (strspn (h.key, "0123456789abcdef"), DIST_STEP_KEY_HEX);
    assert_int_equal (dist_random_hex (other, DIST_STEP_KEY_HEX / 2), 0);
    assert_string_not_equal (h.key, other);
    assert_int_equal (dist_handover_format (&h, text, sizeof (text)), 0);
    assert_non_null (strstr (text, " key="));
    assert_int_equal (dist_handover_parse (text, &back), 0);
    assert_string_equal (back.key, h.key);
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        assert_int_equal (dist_handover_parse (bad[i], &back), -1);
        assert_string_equal (back.key, "");
    }
    /* a key that is not one is never written */
    strcpy (h.key, "not-a-key");
    assert_int_equal (dist_handover_format (&h, text, sizeof (text)), -1);
    /* no key, no word */
    h.key[0] = '\0';
    assert_int_equal (dist_handover_format (&h, text, sizeof (text)), 0);
    assert_null (strstr (text, "key"));
    assert_int_equal (dist_random_hex (other, 65), -1);
}

/* The arbitrary layout: runs of ranks on one node, read back rank by rank. */
static void test_layout_round_trip (void **state)
{
    const uint32_t node_of_rank[] = {2, 0, 0, 1, 2, 2, 2};
    uint32_t back[7];
    char *text;

    (void) state;
    text = dist_layout_text (31, 4, 3, node_of_rank, 7);
    assert_non_null (text);
    assert_string_equal (text, "step=31.4 nodes=3 ranks=7 layout=2,0*2,1,2*3");
    assert_int_equal (dist_layout_text_parse (text, 31, 4, 3, 7, back), 0);
    assert_memory_equal (back, node_of_rank, sizeof (back));
    /* tied to the step and its shape */
    assert_int_equal (dist_layout_text_parse (text, 31, 5, 3, 7, back), -1);
    assert_int_equal (dist_layout_text_parse (text, 30, 4, 3, 7, back), -1);
    assert_int_equal (dist_layout_text_parse (text, 31, 4, 4, 7, back), -1);
    assert_int_equal (dist_layout_text_parse (text, 31, 4, 3, 8, back), -1);
    free (text);
    /* a node out of range is never written */
    assert_null (dist_layout_text (31, 4, 2, node_of_rank, 7));
}

static void test_layout_refuses_hostile_text (void **state)
{
    static const char *const bad[] = {
        "",
        "step=1.0 nodes=2 ranks=2 layout=",
        "step=1.0 nodes=2 ranks=2 layout=0", /* one rank short */
        "step=1.0 nodes=2 ranks=2 layout=0*3", /* one too many */
        "step=1.0 nodes=2 ranks=2 layout=0,1,", /* trailing comma */
        "step=1.0 nodes=2 ranks=2 layout=0,2", /* no node 2 */
        "step=1.0 nodes=2 ranks=2 layout=0*0,1*2", /* an empty run */
        "step=1.0 nodes=2 ranks=2 layout=0,-1",
        "step=1.0 nodes=2 ranks=2 layout=0 ,1",
        "step=1.0 nodes=2 ranks=2 layout=0*99999999999", /* past 32 bits */
        "step=1.0 nodes=2 ranks=2 layout=0..2", /* no node 2 */
        "step=1.0 nodes=2 ranks=2 layout=1..0*2", /* two too many */
        "step=1.0 nodes=2 ranks=2 layout=0..1*0", /* an empty range */
        "step=1.0 nodes=2 ranks=2 layout=0..1*4294967295", /* far too many */
        "step=1.0 nodes=2 ranks=2 layout=0..",
        "step=1.0 nodes=2 ranks=2 layout=..1",
        "step=1.0 nodes=2 ranks=2 layout=0...1",
        "step=1.0 nodes=2 ranks=2 layout=0..1..0",
        "step=1.0 nodes=2 ranks=2 layout=0.1",
        "step=1.0 nodes=2 ranks=2 layout=0,1 extra",
        "step=1.0  nodes=2 ranks=2 layout=0,1",
        "nodes=2 ranks=2 layout=0,1",
    };
    uint32_t back[2];

    (void) state;
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
        if (dist_layout_text_parse (bad[i], 1, 0, 2, 2, back) != -1)
            fail_msg ("accepted: '%s'", bad[i]);
    assert_int_equal (
        dist_layout_text_parse ("step=1.0 nodes=2 ranks=2 layout=1,0", 1, 0, 2, 2, back), 0);
    assert_int_equal (
        dist_layout_text_parse ("step=1.0 nodes=2 ranks=2 layout=1..0", 1, 0, 2, 2, back), 0);
    assert_true (back[0] == 1 && back[1] == 0);
    assert_int_equal (dist_layout_text_parse (NULL, 1, 0, 2, 2, back), -1);
}

/* Block, cyclic and plane in a few runs whatever the node count; read back exactly. */
static void test_layout_ranges (void **state)
{
    const uint32_t nodes = 16384, ppn = 8, n = nodes * ppn;
    static const char *const want[] = {
        "step=1.0 nodes=16384 ranks=131072 layout=0..16383*8",
        "step=1.0 nodes=16384 ranks=131072 layout=0..16383,0..16383,0..16383,0..16383,"
        "0..16383,0..16383,0..16383,0..16383",
        "step=1.0 nodes=16384 ranks=131072 layout=0..16383*2,0..16383*2,0..16383*2,0..16383*2",
        "step=1.0 nodes=16384 ranks=131072 layout=16383..0*8",
    };
    uint32_t *layout = calloc (n, sizeof (*layout)), *back = calloc (n, sizeof (*back));
    char *text;

    (void) state;
    assert_non_null (layout);
    assert_non_null (back);
    for (int kind = 0; kind < 4; kind++) {
        for (uint32_t r = 0; r < n; r++)
            layout[r] = kind == 0   ? r / ppn
                        : kind == 1 ? r % nodes
                        : kind == 2 ? (r / 2) % nodes
                                    : nodes - 1 - r / ppn;
        text = dist_layout_text (1, 0, nodes, layout, n);
        assert_non_null (text);
        assert_string_equal (text, want[kind]);
        memset (back, 0xff, n * sizeof (*back));
        assert_int_equal (dist_layout_text_parse (text, 1, 0, nodes, n, back), 0);
        assert_memory_equal (back, layout, n * sizeof (*back));
        free (text);
    }
    /* uneven: a run, then a range of runs; a lone value is not made a range */
    const uint32_t uneven[] = {0, 0, 0, 1, 1, 2, 2, 3, 4, 4, 4};
    text = dist_layout_text (1, 0, 5, uneven, 11);
    assert_string_equal (text, "step=1.0 nodes=5 ranks=11 layout=0*3,1..2*2,3,4*3");
    assert_int_equal (dist_layout_text_parse (text, 1, 0, 5, 11, back), 0);
    assert_memory_equal (back, uneven, sizeof (uneven));
    free (text);
    free (layout);
    free (back);
}

/* A layout too long for one variable is not written (the tf profile then says why). */
static void test_layout_too_long (void **state)
{
    const uint32_t n = 40000;
    uint32_t *alternating = calloc (n, sizeof (*alternating));

    (void) state;
    assert_non_null (alternating);
    for (uint32_t i = 0; i < n; i++)
        alternating[i] = i % 2 == 0 ? 1000 : 1001;
    assert_null (dist_layout_text (1, 0, 1002, alternating, n));
    for (uint32_t i = 0; i < n; i++)
        alternating[i] = i / 1000;
    char *text = dist_layout_text (1, 0, 1002, alternating, n);
    assert_non_null (text);
    free (text);
    free (alternating);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_round_trip),
        cmocka_unit_test (test_empty_names),
        cmocka_unit_test (test_format_refuses_odd_names),
        cmocka_unit_test (test_parse_refuses_hostile_text),
        cmocka_unit_test (test_key),
        cmocka_unit_test (test_layout_round_trip),
        cmocka_unit_test (test_layout_refuses_hostile_text),
        cmocka_unit_test (test_layout_ranges),
        cmocka_unit_test (test_layout_too_long),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
