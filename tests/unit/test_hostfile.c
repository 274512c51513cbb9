/* test_hostfile.c - the arbitrary distribution's hostfile: rank 0's node, and
 * every entry in rank order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/hostfile.h"

static void first_is (const char *text, const char *want)
{
    char out[64] = "";
    if (want == NULL) {
        assert_int_equal (dist_hostfile_first (text, out, sizeof (out)), -1);
        return;
    }
    assert_int_equal (dist_hostfile_first (text, out, sizeof (out)), 0);
    assert_string_equal (out, want);
}

static void test_plain_lines (void **state)
{
    first_is ("node3\nnode1\nnode2\n", "node3");
    first_is ("node3", "node3");
    first_is ("\n\n  node7  \nnode1\n", "node7");
    first_is ("node2,node1\n", "node2");
    first_is ("node2 node1\n", "node2");
}

static void test_comments_and_repeats (void **state)
{
    first_is ("# rank 0 isolated\n\nnode9*1\nnode1*4\n", "node9");
    first_is ("node4#comment\n", "node4");
    first_is ("  # only a comment\n", NULL);
}

static void test_hostlist_expression_kept (void **state)
{
    first_is ("gpu[03-04],gpu01\n", "gpu[03-04]");
    first_is ("rack1-n[1,3]\n", "rack1-n[1,3]");
}

static void test_empty_and_too_long (void **state)
{
    char longname[200];
    first_is ("", NULL);
    first_is ("\n \t,\n", NULL);
    memset (longname, 'x', sizeof (longname) - 1);
    longname[sizeof (longname) - 1] = '\0';
    first_is (longname, NULL);
}

/* The entries as "entry*repeat" joined by spaces. */
static int collect (const char *entry, unsigned repeat, void *arg)
{
    char *buf = arg;
    size_t len = strlen (buf);
    snprintf (buf + len, 256 - len, "%s%s*%u", len ? " " : "", entry, repeat);
    return 0;
}

static void walk_is (const char *text, const char *want)
{
    char buf[256] = "";
    if (want == NULL) {
        assert_int_equal (dist_hostfile_walk (text, collect, buf), -1);
        return;
    }
    assert_int_equal (dist_hostfile_walk (text, collect, buf), 0);
    assert_string_equal (buf, want);
}

static void test_walk (void **state)
{
    walk_is ("node3\nnode1\nnode2\n", "node3*1 node1*1 node2*1");
    walk_is ("# header\nnode9*2\nnode1*4 # four\ngpu[1-2],x\n", "node9*2 node1*4 gpu[1-2]*1 x*1");
    walk_is ("", "");
    walk_is ("node1*0\n", NULL);
    walk_is ("node1*\n", NULL);
    walk_is ("node1*4x\n", NULL);
    walk_is ("node1*70000\n", NULL);
    walk_is ("node1*-1\n", NULL);
    /* a repeat of nothing never reaches the callback */
    walk_is ("*5\n", NULL);
    walk_is ("node1,*3\n", NULL);
    walk_is ("node1\n*2 node2\n", NULL);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_plain_lines),
        cmocka_unit_test (test_comments_and_repeats),
        cmocka_unit_test (test_hostlist_expression_kept),
        cmocka_unit_test (test_empty_and_too_long),
        cmocka_unit_test (test_walk),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
