/* Unit tests for shim/pmi2wire.c: PMI-2 requests and answers as Slurm's server writes them,
 * values and the process mapping; and the frame's PMI-2 chunks (shim/wire.c).  The host
 * list that names rank 0's node is libdist's (tests/unit/test_hostlist.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/dtshim.h"
#include "shim/pmi2wire.h"
#include "shim/wire.h"

static void requests_are_framed (void **state)
{
    const char *put[] = {"key", "dtshim.3", "value", "QUJD"};
    const char *semi[] = {"key", "a;b", "value", "x"};
    const char *eq[] = {"k=y", "v"};
    const char *nl[] = {"msg", "two\nlines"};
    char buf[128], tiny[20];
    long n;

    n = shim_pmi2_request (buf, sizeof (buf), "kvs-put", put, 4);
    assert_int_equal (n, 6 + 36);
    assert_memory_equal (buf, "36    cmd=kvs-put;key=dtshim.3;value=QUJD;", (size_t) n);
    n = shim_pmi2_request (buf, sizeof (buf), "kvs-fence", NULL, 0);
    assert_memory_equal (buf, "14    cmd=kvs-fence;", (size_t) n);
    /* '=' in a value is fine (the server looks for ';' after the first '='), not in a key. */
    assert_true (shim_pmi2_request (buf, sizeof (buf), "abort", (const char *[]){"msg", "a=b"}, 2)
                 > 0);
    assert_int_equal (shim_pmi2_request (buf, sizeof (buf), "kvs-put", semi, 4), -1);
    assert_int_equal (shim_pmi2_request (buf, sizeof (buf), "kvs-put", eq, 2), -1);
    assert_int_equal (shim_pmi2_request (buf, sizeof (buf), "abort", nl, 2), -1);
    assert_int_equal (shim_pmi2_request (tiny, sizeof (tiny), "kvs-put", put, 4), -1);
}

static void answer_headers (void **state)
{
    assert_int_equal (shim_pmi2_msg_len ("29    "), 29);
    assert_int_equal (shim_pmi2_msg_len ("999999"), 999999);
    assert_int_equal (shim_pmi2_msg_len ("0     "), 0);
    assert_int_equal (shim_pmi2_msg_len ("      "), -1);
    assert_int_equal (shim_pmi2_msg_len ("-1    "), -1);
    assert_int_equal (shim_pmi2_msg_len ("12 3  "), -1);
    assert_int_equal (shim_pmi2_msg_len ("12x   "), -1);
}

/* The answers as Slurm 22.05 - 26.05 write them (src/plugins/mpi/pmi2/pmi2.c). */
static void answer_fields (void **state)
{
    static const char get[] = "cmd=kvs-get-response;rc=0;found=TRUE;value=QU=JD;";
    static const char miss[] = "cmd=kvs-get-response;rc=0;found=FALSE;";
    static const char init[] = "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;"
                               "rank=5;size=6;appnum=-1;debugged=FALSE;pmiverbose=FALSE;";
    const char *v;
    size_t n;

    assert_true (shim_pmi2_field (get, strlen (get), "value", &v, &n));
    assert_int_equal (n, 5);
    assert_memory_equal (v, "QU=JD", 5);
    assert_true (shim_pmi2_ok (get, strlen (get), "kvs-get-response"));
    assert_false (shim_pmi2_ok (get, strlen (get), "kvs-put-response"));
    assert_false (shim_pmi2_field (miss, strlen (miss), "value", &v, &n));
    assert_true (shim_pmi2_field (miss, strlen (miss), "found", &v, &n));
    assert_memory_equal (v, "FALSE", 5);
    assert_true (shim_pmi2_field (init, strlen (init), "size", &v, &n));
    assert_memory_equal (v, "6;", 2);
    /* A prefix of a key is not the key; rc other than 0 is a failure. */
    assert_false (shim_pmi2_field (init, strlen (init), "pmi", &v, &n));
    assert_false (shim_pmi2_ok ("cmd=kvs-fence-response;rc=1;errmsg=x;", 37, "kvs-fence-response"));
    assert_false (shim_pmi2_ok ("cmd=kvs-fence-response;rc=00;", 29, "kvs-fence-response"));
    /* Not a sequence of fields: refused whole. */
    assert_false (shim_pmi2_field ("rc=0;cmd=x;", 11, "rc", &v, &n));
    assert_false (shim_pmi2_field ("cmd=x;rc=0", 10, "cmd", &v, &n));
    assert_false (shim_pmi2_field ("cmd=x;=0;", 9, "cmd", &v, &n));
    assert_false (shim_pmi2_field ("cmd=x;rc;0=;", 12, "cmd", &v, &n));
    /* The first of a repeated key counts. */
    assert_true (shim_pmi2_field ("cmd=x;rc=0;rc=1;", 16, "rc", &v, &n));
    assert_memory_equal (v, "0", 1);
}

static void values_round_trip (void **state)
{
    uint8_t in[SHIM_PMI2_CHUNK], out[SHIM_PMI2_CHUNK];
    char text[SHIM_PMI2_VALLEN + 1];

    for (size_t i = 0; i < sizeof (in); i++)
        in[i] = (uint8_t) (i * 37 + 11);
    assert_int_equal (shim_pmi2_encoded_len (SHIM_PMI2_CHUNK), SHIM_PMI2_VALLEN);
    for (size_t n = 0; n <= 8; n++) {
        shim_pmi2_encode (in, n, text);
        assert_int_equal (strlen (text), shim_pmi2_encoded_len (n));
        assert_null (strpbrk (text, ";=\n"));
        assert_int_equal (shim_pmi2_decode (text, strlen (text), out, sizeof (out)), (long) n);
        assert_memory_equal (in, out, n);
    }
    shim_pmi2_encode (in, sizeof (in), text);
    assert_int_equal (strlen (text), SHIM_PMI2_VALLEN);
    assert_int_equal (shim_pmi2_decode (text, strlen (text), out, sizeof (out)),
                      (long) sizeof (in));
    assert_memory_equal (in, out, sizeof (in));
    /* One byte short of room, a stray character, a length no encoding has, and
     * non-canonical trailing bits are all refused. */
    assert_int_equal (shim_pmi2_decode (text, strlen (text), out, sizeof (out) - 1), -1);
    assert_int_equal (shim_pmi2_decode ("QUJ;", 4, out, sizeof (out)), -1);
    assert_int_equal (shim_pmi2_decode ("QUJDR", 5, out, sizeof (out)), -1);
    assert_int_equal (shim_pmi2_decode ("QQ", 2, out, sizeof (out)), 1); /* "A" */
    assert_int_equal (shim_pmi2_decode ("QR", 2, out, sizeof (out)), -1);
    assert_int_equal (shim_pmi2_decode ("QUI", 3, out, sizeof (out)), 2); /* "AB" */
    assert_int_equal (shim_pmi2_decode ("QUJ", 3, out, sizeof (out)), -1);
    assert_int_equal (shim_pmi2_decode ("QQ==", 4, out, sizeof (out)), -1);
}

static void keys_and_chunks (void **state)
{
    /* A rank's key, and its chunk after the first; NULL: refused. */
    static const struct {
        int rank;
        size_t chunk;
        const char *want;
    } keys[] = {
        {0, 0, "dtshim.0"},
        {2147483647, 1367, "dtshim.2147483647.1367"},
        {-1, 0, NULL},
    };
    char key[SHIM_PMI2_KEYLEN + 1], tiny[8];

    for (size_t i = 0; i < sizeof (keys) / sizeof (keys[0]); i++) {
        int rv = shim_pmi2_key (key, sizeof (key), keys[i].rank, keys[i].chunk);

        assert_int_equal (rv, keys[i].want != NULL ? DTSHIM_OK : DTSHIM_ERR_INVALID);
        if (keys[i].want != NULL)
            assert_string_equal (key, keys[i].want);
    }
    assert_int_equal (shim_pmi2_key (tiny, sizeof (tiny), 12, 0), DTSHIM_ERR_INVALID);
    assert_int_equal (shim_chunk_count (0, SHIM_PMI2_CHUNK), 1);
    assert_int_equal (shim_chunk_count (SHIM_PMI2_CHUNK, SHIM_PMI2_CHUNK), 1);
    assert_int_equal (shim_chunk_count (SHIM_PMI2_CHUNK + 1, SHIM_PMI2_CHUNK), 2);
    assert_int_equal (shim_chunk_len (SHIM_PMI2_CHUNK + 1, SHIM_PMI2_CHUNK, 1), 1);
    assert_int_equal (shim_chunk_len (SHIM_PMI2_CHUNK + 1, SHIM_PMI2_CHUNK, 2), 0);
    /* The largest frame: 1 MiB and its header, 1,366 values. */
    assert_int_equal (shim_chunk_count (24 + SHIM_PMI2_MAX_PAYLOAD, SHIM_PMI2_CHUNK), 1366);
}

static void check_mapping (const char *text, int size, const int *want)
{
    int got[16];

    memset (got, 0xff, sizeof (got));
    assert_int_equal (shim_pmi2_mapping (text, strlen (text), size, 15, got), 0);
    assert_memory_equal (got, want, (size_t) size * sizeof (int));
}

/* What Slurm's _get_proc_mapping writes for block, cyclic, plane and arbitrary layouts. */
static void mappings (void **state)
{
    int out[16];

    check_mapping ("(vector,(0,3,2))", 6, (int[]){0, 0, 1, 1, 2, 2});
    check_mapping ("(vector,(0,2,2),(2,1,1))", 5, (int[]){0, 0, 1, 1, 2});
    check_mapping ("(vector,(0,3,1),(0,3,1))", 6, (int[]){0, 1, 2, 0, 1, 2});
    check_mapping ("(vector,(1,1,2),(0,1,1),(2,1,1))", 4, (int[]){1, 1, 0, 2});
    /* MPICH's rule: the vector repeats until every rank is placed. */
    check_mapping ("(vector,(0,3,1))", 7, (int[]){0, 1, 2, 0, 1, 2, 0});
    assert_int_equal (shim_pmi2_mapping ("(vector,(0,3,0))", 16, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(vector)", 8, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(vector,(0,17,1))", 17, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(vector,(15,2,1))", 17, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(vector,(0,3,1)", 15, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(vector,(0,3,1)) ", 17, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(vector,(0,-3,1))", 17, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(hex,(0,3,1))", 13, 4, 15, out), -1);
    assert_int_equal (shim_pmi2_mapping ("(vector,(0,3,1))", 16, 0, 15, out), -1);
}

/* A server's rank and size: decimal, bounded, whole; never wrapped around (a size of
 * 99999999999 must not become 1,215,752,191 ranks and a 4.5 GiB allocation). */
static void int_fields (void **state)
{
    const char *ok = "cmd=fullinit-response;rc=0;rank=3;size=16777216;";
    const char *bad[] = {
        "cmd=fullinit-response;rc=0;size=99999999999;",
        "cmd=fullinit-response;rc=0;size=2147483648;",
        "cmd=fullinit-response;rc=0;size=16777217;",
        "cmd=fullinit-response;rc=0;size=-4;",
        "cmd=fullinit-response;rc=0;size=+4;",
        "cmd=fullinit-response;rc=0;size= 4;",
        "cmd=fullinit-response;rc=0;size=4x;",
        "cmd=fullinit-response;rc=0;size=;",
        "cmd=fullinit-response;rc=0;size=0;",
    };
    char shown[8];
    int v = -1;

    (void) state;
    assert_true (shim_pmi2_int_field (ok, strlen (ok), "rank", 0, SHIM_PMI2_SIZE_MAX, &v));
    assert_int_equal (v, 3);
    assert_true (shim_pmi2_int_field (ok, strlen (ok), "size", 1, SHIM_PMI2_SIZE_MAX, &v));
    assert_int_equal (v, 1 << 24);
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        v = -1;
        assert_false (
            shim_pmi2_int_field (bad[i], strlen (bad[i]), "size", 1, SHIM_PMI2_SIZE_MAX, &v));
        assert_int_equal (v, -1);
    }
    /* a server's text in a message: bounded, and nothing a terminal would act on */
    shim_pmi2_shown ("ab\033[2Jcdefgh", 13, shown, sizeof (shown));
    assert_string_equal (shown, "ab?[2Jc");
}

/* The passes over a mapping cost the ranks placed and the triples, not their product: a
 * vector of 100,000 triples that place nothing and one that places one rank, for a million
 * ranks, took 10^11 steps when each pass parsed the text again and walked the empty ones.
 * (Bounded by the alarm: slower than that fails.) */
static void mapping_passes_are_linear (void **state)
{
    const int size = 1000000, empty = 100000;
    size_t len = 0, cap = (size_t) empty * 12 + 64;
    char *text = malloc (cap);
    int *node_of = malloc ((size_t) size * sizeof (*node_of));

    (void) state;
    assert_non_null (text);
    assert_non_null (node_of);
    len += (size_t) snprintf (text + len, cap - len, "(vector");
    for (int i = 0; i < empty; i++)
        len += (size_t) snprintf (text + len, cap - len, ",(%d,7,0)", i % 1000);
    len += (size_t) snprintf (text + len, cap - len, ",(5,1,1))");
    alarm (20);
    assert_int_equal (shim_pmi2_mapping (text, len, size, size - 1, node_of), 0);
    alarm (0);
    assert_int_equal (node_of[0], 5);
    assert_int_equal (node_of[size - 1], 5);
    free (text);
    free (node_of);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (requests_are_framed), cmocka_unit_test (answer_headers),
        cmocka_unit_test (answer_fields),       cmocka_unit_test (values_round_trip),
        cmocka_unit_test (keys_and_chunks),     cmocka_unit_test (mappings),
        cmocka_unit_test (int_fields),          cmocka_unit_test (mapping_passes_are_linear),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
