/* test_doctor.c - dist-train-doctor's pure parts: the hostlist expander,
 * the wire format against hostile input, the handshake's lines and MACs,
 * the checks over rank records (also for tasks that all claim one node),
 * and the report's size for a big healthy step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/doctor/doctor.h"
#include "tools/doctor/auth.h"

static void test_hostlist (void **state)
{
    char names[16][DOCTOR_NAME_MAX];

    assert_int_equal (doctor_hostlist_expand ("node[1-3],login1", names, 16), 4);
    assert_string_equal (names[0], "node1");
    assert_string_equal (names[2], "node3");
    assert_string_equal (names[3], "login1");
    assert_int_equal (doctor_hostlist_expand ("gpu[07-09,11]x", names, 16), 4);
    assert_string_equal (names[0], "gpu07x");
    assert_string_equal (names[3], "gpu11x");
    assert_int_equal (doctor_hostlist_expand ("a", names, 16), 1);
}

static void test_hostlist_bad (void **state)
{
    char names[4][DOCTOR_NAME_MAX];
    const char *bad[] = {"",   "n[1-", "n[3-1]",   "n]",    "n[1-5]", "a,",
                         ",a", "n[a]", "n[1]x[2]", "n[1,]", "n[-1]"};
    size_t i;

    assert_int_equal (doctor_hostlist_expand (NULL, names, 4), -1);
    for (i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
        assert_int_equal (doctor_hostlist_expand (bad[i], names, 4), -1);
}

static void test_layout (void **state)
{
    struct doctor_layout l;

    assert_int_equal (doctor_layout_build ("node[1-3]", "2(x3)", NULL, NULL, &l), 0);
    assert_int_equal (l.nnodes, 3);
    assert_int_equal (l.nranks, 6);
    assert_int_equal (l.node_of_rank[2], 1);
    assert_int_equal (l.node_of_rank[5], 2);
    doctor_layout_free (&l);
    assert_int_equal (doctor_layout_build ("node[1-2]", "2(x3)", NULL, NULL, &l), -1);
    assert_int_equal (doctor_layout_build ("node[1-2]", "2,1", "cyclic", NULL, &l), 0);
    assert_int_equal (l.node_of_rank[1], 1);
    doctor_layout_free (&l);
}

/* The plugin's layout (rank 0's DIST_TRAIN_LAYOUT): RANK 0 and 1 on node3, whatever Slurm's
 * block order says; only for this step and these nodes. */
static void test_layout_from_plugin (void **state)
{
    static const char text[] = "step=7.2 nodes=3 ranks=6 layout=2*2,0*2,1*2";
    struct doctor_layout l;

    (void) state;
    assert_int_equal (doctor_layout_from_plugin ("node[1-3]", text, 7, 2, &l), 0);
    assert_int_equal (l.nranks, 6);
    assert_string_equal (l.node[l.node_of_rank[0]], "node3");
    assert_string_equal (l.node[l.node_of_rank[2]], "node1");
    doctor_layout_free (&l);
    assert_int_equal (doctor_layout_from_plugin ("node[1-3]", text, 7, 3, &l), -1);
    assert_null (l.node_of_rank);
    assert_int_equal (doctor_layout_from_plugin ("node[1-2]", text, 7, 2, &l), -1);
    assert_int_equal (doctor_layout_from_plugin ("node[1-3]", NULL, 7, 2, &l), -1);
    assert_int_equal (
        doctor_layout_from_plugin ("node[1-3]", "step=7.2 nodes=3 ranks=6 layout=3*6", 7, 2, &l),
        -1);
}

static void healthy (struct doctor_rank *r, long rank, const char *node, long local)
{
    memset (r, 0, sizeof (*r));
    r->procid = r->rank = rank;
    r->local_rank = local;
    r->world_size = 4;
    r->local_world_size = 2;
    r->group_rank = rank / 2;
    r->connect_ms = 3;
    snprintf (r->node, sizeof (r->node), "%s", node);
    strcpy (r->ifname, "eth0");
    strcpy (r->source, "10.0.0.1");
    strcpy (r->master_addr, "10.0.0.1");
    strcpy (r->master_port, "29500");
    strcpy (r->visible, "0,1");
    snprintf (r->cpus, sizeof (r->cpus), "%ld", local);
    strcpy (r->stack,
            "MPI plugins pmi2,pmix (this step: none); PMIx 4.2.2 (server), 4.2.2 (client)");
}

static void test_wire_roundtrip (void **state)
{
    struct doctor_rank a, b;
    char buf[DOCTOR_MSG_MAX];
    int len;

    healthy (&a, 3, "node2", 1);
    strcpy (a.finding[0], "warning: port_range 30000-40000 overlaps the kernel's ephemeral ports");
    strcpy (a.finding[1], "problem: GLOO_SOCKET_IFNAME=nosuch0: nosuch0 has no IPv4 address");
    len = doctor_wire_encode (&a, buf, sizeof (buf));
    assert_true (len > 0);
    assert_int_equal (doctor_wire_decode (buf, (size_t) len, &b), 0);
    assert_memory_equal (&a, &b, sizeof (a));
}

static void test_wire_hostile (void **state)
{
    struct doctor_rank r;
    const char *msg = "dist-train-doctor 1\nrank=-3\nworld_size=99999999999999\n"
                      "node=a\033[2Jb%n\nunknown=1\nend\n";
    char big[DOCTOR_MSG_MAX];

    assert_int_equal (doctor_wire_decode (msg, strlen (msg), &r), 0);
    assert_int_equal (r.rank, -1);
    assert_int_equal (r.world_size, -1);
    assert_string_equal (r.node, "a?[2Jb%n");
    assert_int_equal (doctor_wire_decode ("GET / HTTP/1.0\n", 15, &r), -1);
    assert_int_equal (doctor_wire_decode ("dist-train-doctor 1\nrank=1\n", 27, &r), -1);
    /* one endless line: cut, never overrun */
    memset (big, 'x', sizeof (big));
    memcpy (big, "dist-train-doctor 1\nnode=", 25);
    big[sizeof (big) - 1] = '\n';
    assert_int_equal (doctor_wire_decode (big, sizeof (big), &r), -1);
}

static void four_ranks (struct doctor_rank *recs, struct doctor_layout *l)
{
    healthy (&recs[0], 0, "node1", 0);
    healthy (&recs[1], 1, "node1", 1);
    healthy (&recs[2], 2, "node2", 0);
    healthy (&recs[3], 3, "node2", 1);
    assert_int_equal (doctor_layout_build ("node[1-2]", "2(x2)", NULL, NULL, l), 0);
}

/* Two nodes of two healthy ranks each (four_ranks), which a test changes and then checks. */
struct step_check {
    struct doctor_rank recs[4];
    struct doctor_layout l;
    struct doctor_result res;
};

static int step_check_setup (void **state)
{
    struct step_check *c = calloc (1, sizeof (*c));

    if (c == NULL)
        return -1;
    four_ranks (c->recs, &c->l);
    *state = c;
    return 0;
}

static int step_check_teardown (void **state)
{
    struct step_check *c = *state;

    doctor_result_free (&c->res);
    doctor_layout_free (&c->l);
    free (c);
    return 0;
}

/* doctor_check over the first n ranks' records. */
static const struct doctor_result *check (struct step_check *c, size_t n)
{
    assert_int_equal (doctor_check (c->recs, n, &c->l, &c->res), 0);
    return &c->res;
}

static bool has_problem (const struct doctor_result *res, const char *part)
{
    for (size_t i = 0; i < res->nproblems && i < DOCTOR_PROBLEMS_MAX; i++)
        if (strstr (res->problem[i], part) != NULL)
            return true;
    return false;
}

static void test_check_healthy (void **state)
{
    const struct doctor_result *res = check (*state, 4);

    assert_true (doctor_result_ok (res));
    assert_int_equal (res->nnodes, 2);
    assert_string_equal (res->node[1].ranks, "2-3");
    assert_string_equal (res->node[1].ifnames, "eth0");
}

static void test_check_rank_twice (void **state)
{
    struct step_check *c = *state;
    const struct doctor_result *res;

    c->recs[2].rank = 1; /* task 2 exported RANK=1 */
    res = check (c, 4);
    assert_false (doctor_result_ok (res));
    assert_true (has_problem (res, "rank 1 checked in 2 times: from node1 (task 1), node2 "
                                   "(task 2)"));
    assert_true (has_problem (res, "node2: rank 2 never checked in"));
}

static void test_check_wrong_node (void **state)
{
    struct step_check *c = *state;
    const struct doctor_result *res;

    strcpy (c->recs[3].node, "node9");
    res = check (c, 4);
    assert_false (doctor_result_ok (res));
    assert_true (has_problem (res, "rank 3 checked in from node9 (task 3), but Slurm's layout "
                                   "puts it on node2"));
    assert_int_equal (res->nnodes, 3);
}

static void test_check_missing_node (void **state)
{
    const struct doctor_result *res = check (*state, 2);

    assert_false (doctor_result_ok (res));
    assert_true (has_problem (res, "node2: ranks 2-3 never checked in"));
    assert_string_equal (res->node[1].missing, "2-3");
}

static void test_check_disagreements (void **state)
{
    struct step_check *c = *state;
    const struct doctor_result *res;

    c->recs[3].world_size = 5;
    strcpy (c->recs[3].master_port, "29501");
    c->recs[3].local_rank = 0; /* twice on node2 */
    strcpy (c->recs[1].visible, "0"); /* both ranks of node1 on GPU 0 */
    strcpy (c->recs[2].cpus, "0-3"); /* node2: 0-3 and 1-2 overlap */
    strcpy (c->recs[3].cpus, "1-2");
    res = check (c, 4);
    assert_true (has_problem (res, "WORLD_SIZE=5 (rank 0 has 4) on rank 3 on node2"));
    assert_true (has_problem (res, "MASTER_PORT=29501 (rank 0 has 29500) on rank 3 on node2"));
    assert_true (has_problem (res, "node2: ranks 2 and 3 both have LOCAL_RANK=0"));
    assert_true (has_problem (res, "node1: ranks 0 and 1 both use GPU 0"));
    assert_true (has_problem (res, "node2: ranks 2 and 3 are bound to overlapping CPUs"));
}

static void test_check_planned_share (void **state)
{
    struct step_check *c = *state;
    const struct doctor_result *res;

    /* more ranks than GPUs: the plugin's plan puts two ranks on one GPU */
    for (int i = 0; i < 4; i++)
        strcpy (c->recs[i].gpus, "0000:3b:00.0");
    res = check (c, 4);
    assert_true (doctor_result_ok (res));
    assert_non_null (strstr (res->node[0].note, "GPUs shared as planned"));
}

/* 512 healthy ranks on 64 nodes: 64 node lines and the verdict. */
static void test_report_fits (void **state)
{
    struct doctor_rank *recs = calloc (512, sizeof (*recs));
    struct doctor_layout l;
    struct doctor_result res;
    char *text = NULL, node[32];
    size_t size = 0, lines = 0;
    FILE *f;

    assert_non_null (recs);
    for (long r = 0; r < 512; r++) {
        snprintf (node, sizeof (node), "gpu%02ld", r / 8 + 1);
        healthy (&recs[r], r, node, r % 8);
        recs[r].world_size = 512;
        snprintf (recs[r].visible, sizeof (recs[r].visible), "0,1,2,3,4,5,6,7");
    }
    assert_int_equal (doctor_layout_build ("gpu[01-64]", "8(x64)", NULL, NULL, &l), 0);
    assert_int_equal (doctor_check (recs, 512, &l, &res), 0);
    assert_true (doctor_result_ok (&res));
    f = open_memstream (&text, &size);
    doctor_report_text (f, &res, 20);
    fclose (f);
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    /* a line per node, one for the stack they share, the verdict */
    assert_int_equal (lines, 66);
    assert_non_null (strstr (text, "dist-train-doctor: gpu64: ranks 504-511 via eth0 10.0.0.1"));
    assert_non_null (strstr (text, "dist-train-doctor: gpu01,gpu02,"));
    assert_non_null (strstr (text, ",...: MPI plugins pmi2,pmix (this step: none); PMIx 4.2.2"));
    assert_non_null (strstr (text, "ok: all 512 ranks on 64 nodes checked in"));
    free (text);
    doctor_result_free (&res);
    doctor_layout_free (&l);
    free (recs);
}

static const char *KEY_A = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
static const char *KEY_B = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

/* One whole exchange, as a rank and rank 0 see it. */
static void test_auth_exchange (void **state)
{
    struct doctor_key key;
    char pn[DOCTOR_NONCE_HEX + 1], sn[DOCTOR_NONCE_HEX + 1], got[DOCTOR_NONCE_HEX + 1];
    char line[DOCTOR_AUTH_LINE_MAX], mac[DOCTOR_MAC_HEX + 1];
    const char rec[] = "dist-train-doctor 1\nrank=1\nend\n";
    size_t reclen;
    bool ok = false;
    int n;

    (void) state;
    assert_int_equal (doctor_key_parse (KEY_A, &key), 0);
    assert_int_equal (doctor_nonce (pn), 0);
    assert_int_equal (doctor_nonce (sn), 0);
    assert_string_not_equal (pn, sn);
    n = doctor_hello_format (&key, pn, line, sizeof (line));
    assert_true (n > 0 && line[n - 1] == '\n');
    assert_int_equal (doctor_hello_check (&key, line, (size_t) n, got), 0);
    assert_string_equal (got, pn);
    n = doctor_proof_format (&key, pn, sn, line, sizeof (line));
    assert_int_equal (doctor_proof_check (&key, pn, line, (size_t) n, got), 0);
    assert_string_equal (got, sn);
    n = doctor_record_header (&key, sn, pn, rec, strlen (rec), line, sizeof (line));
    assert_int_equal (doctor_record_header_parse (line, (size_t) n, &reclen, mac), 0);
    assert_int_equal (reclen, strlen (rec));
    assert_int_equal (doctor_record_check (&key, sn, pn, rec, reclen, mac), 0);
    n = doctor_taken_format (&key, pn, sn, line, sizeof (line));
    assert_int_equal (doctor_taken_check (&key, pn, sn, line, (size_t) n), 0);
    n = doctor_verdict_format (&key, pn, sn, true, line, sizeof (line));
    assert_int_equal (doctor_verdict_check (&key, pn, sn, line, (size_t) n, &ok), 0);
    assert_true (ok);
    n = doctor_verdict_format (&key, pn, sn, false, line, sizeof (line));
    assert_int_equal (doctor_verdict_check (&key, pn, sn, line, (size_t) n, &ok), 0);
    assert_false (ok);
}

/* Whoever lacks the key, or replays another connection's line, is refused. */
static void test_auth_refusals (void **state)
{
    struct doctor_key a, b;
    char pn[DOCTOR_NONCE_HEX + 1], sn[DOCTOR_NONCE_HEX + 1], other[DOCTOR_NONCE_HEX + 1];
    char got[DOCTOR_NONCE_HEX + 1], line[DOCTOR_AUTH_LINE_MAX], mac[DOCTOR_MAC_HEX + 1];
    char rec[] = "dist-train-doctor 1\nrank=1\nend\n";
    size_t reclen;
    bool ok;
    int n;

    (void) state;
    assert_int_equal (doctor_key_parse (KEY_A, &a), 0);
    assert_int_equal (doctor_key_parse (KEY_B, &b), 0);
    assert_int_equal (doctor_nonce (pn), 0);
    assert_int_equal (doctor_nonce (sn), 0);
    assert_int_equal (doctor_nonce (other), 0);
    /* a hello with another key, or with its nonce changed */
    n = doctor_hello_format (&b, pn, line, sizeof (line));
    assert_int_equal (doctor_hello_check (&a, line, (size_t) n, got), -1);
    n = doctor_hello_format (&a, pn, line, sizeof (line));
    line[strlen ("dist-train-doctor 3 hello ")] ^= 1;
    assert_int_equal (doctor_hello_check (&a, line, (size_t) n, got), -1);
    /* rank 0 with another key; a proof made for another rank's nonce */
    n = doctor_proof_format (&b, pn, sn, line, sizeof (line));
    assert_int_equal (doctor_proof_check (&a, pn, line, (size_t) n, got), -1);
    n = doctor_proof_format (&a, other, sn, line, sizeof (line));
    assert_int_equal (doctor_proof_check (&a, pn, line, (size_t) n, got), -1);
    /* a record signed with another key, for another connection, or changed */
    n = doctor_record_header (&b, sn, pn, rec, strlen (rec), line, sizeof (line));
    assert_int_equal (doctor_record_header_parse (line, (size_t) n, &reclen, mac), 0);
    assert_int_equal (doctor_record_check (&a, sn, pn, rec, reclen, mac), -1);
    n = doctor_record_header (&a, other, pn, rec, strlen (rec), line, sizeof (line));
    doctor_record_header_parse (line, (size_t) n, &reclen, mac);
    assert_int_equal (doctor_record_check (&a, sn, pn, rec, reclen, mac), -1);
    n = doctor_record_header (&a, sn, pn, rec, strlen (rec), line, sizeof (line));
    doctor_record_header_parse (line, (size_t) n, &reclen, mac);
    rec[strlen (rec) - 6] = '2'; /* rank=2 */
    assert_int_equal (doctor_record_check (&a, sn, pn, rec, reclen, mac), -1);
    /* a verdict for another connection, or with its word changed */
    n = doctor_verdict_format (&a, pn, other, true, line, sizeof (line));
    assert_int_equal (doctor_verdict_check (&a, pn, sn, line, (size_t) n, &ok), -1);
    n = doctor_verdict_format (&a, pn, sn, false, line, sizeof (line));
    memcpy (line, "ok     ", 7);
    assert_int_equal (doctor_verdict_check (&a, pn, sn, line, (size_t) n, &ok), -1);
    assert_int_equal (doctor_verdict_check (&a, pn, sn, "ok\n", 3, &ok), -1);
    /* "taken" for another connection, or a verdict's MAC as one */
    n = doctor_taken_format (&a, other, sn, line, sizeof (line));
    assert_int_equal (doctor_taken_check (&a, pn, sn, line, (size_t) n), -1);
    n = doctor_verdict_format (&a, pn, sn, true, line, sizeof (line));
    assert_int_equal (doctor_taken_check (&a, pn, sn, line, (size_t) n), -1);
    n = doctor_taken_format (&a, pn, sn, line, sizeof (line));
    assert_int_equal (doctor_verdict_check (&a, pn, sn, line, (size_t) n, &ok), -1);
    /* keys that are not 64 hex digits */
    assert_int_equal (doctor_key_parse (NULL, &a), -1);
    assert_int_equal (doctor_key_parse ("", &a), -1);
    assert_int_equal (doctor_key_parse ("00112233", &a), -1);
    assert_int_equal (
        doctor_key_parse ("0011223344556677889xaabbccddeeff00112233445566778899aabbccddeeff", &a),
        -1);
}

/* Lines that are not the protocol's, from anyone who connects (a MAC of the
 * right form where one is due: the form is checked before the MAC). */
#define HELLO_MAC "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
static void test_auth_malformed (void **state)
{
    struct doctor_key key;
    char pn[DOCTOR_NONCE_HEX + 1], mac[DOCTOR_MAC_HEX + 1];
    size_t reclen = 0;
    const char *mac64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char line[DOCTOR_AUTH_LINE_MAX * 2];
    const char *hello_bad[] = {
        "",
        "\n",
        "dist-train-doctor 1\n",
        "dist-train-doctor 3 hello \n",
        "dist-train-doctor 2 hello 0123456789abcdef0123456789abcdef\n", /* the old protocol's */
        "dist-train-doctor 3 hello 0123456789abcdef0123456789abcdef\n", /* no MAC */
        "dist-train-doctor 3 hello 0123456789abcdef0123456789abcde " HELLO_MAC "\n", /* short */
        "dist-train-doctor 3 hello 0123456789abcdef0123456789abcdef0 " HELLO_MAC "\n", /* long */
        "dist-train-doctor 3 hello 0123456789ABCDEF0123456789abcdef " HELLO_MAC "\n", /* upper */
        "dist-train-doctor 3 hello 0123456789abcdef0123456789abcdeg " HELLO_MAC "\n",
        "dist-train-doctor 3 hello 0123456789abcdef0123456789abcdef  " HELLO_MAC "\n",
    };
    const char *lengths_bad[] = {"0", "00012", "12289", "99999999999999999999", "-1", "12x"};

    (void) state;
    assert_int_equal (doctor_key_parse (KEY_A, &key), 0);
    for (size_t i = 0; i < sizeof (hello_bad) / sizeof (hello_bad[0]); i++)
        assert_int_equal (doctor_hello_check (&key, hello_bad[i], strlen (hello_bad[i]), pn), -1);
    /* a NUL inside the line */
    assert_int_equal (doctor_hello_check (&key,
                                          "dist-train-doctor 3 hello 0123456789abcdef\0"
                                          "123456789abcdef\n",
                                          43, pn),
                      -1);
    /* longer than any line of ours */
    memset (line, 'a', sizeof (line));
    assert_int_equal (doctor_hello_check (&key, line, sizeof (line), pn), -1);
    assert_int_equal (doctor_record_header_parse (line, sizeof (line), &reclen, mac), -1);
    for (size_t i = 0; i < sizeof (lengths_bad) / sizeof (lengths_bad[0]); i++) {
        snprintf (line, sizeof (line), "record %s %s\n", lengths_bad[i], mac64);
        assert_int_equal (doctor_record_header_parse (line, strlen (line), &reclen, mac), -1);
    }
    snprintf (line, sizeof (line), "record 12288 %s\n", mac64);
    assert_int_equal (doctor_record_header_parse (line, strlen (line), &reclen, mac), 0);
    assert_int_equal (reclen, DOCTOR_MSG_MAX);
    snprintf (line, sizeof (line), "record 12 %.63s\n", mac64);
    assert_int_equal (doctor_record_header_parse (line, strlen (line), &reclen, mac), -1);
}

/* Tasks that all claim one node: the checks stay within the ranks Slurm
 * placed there, and say so first. */
/* Each node's findings on its collective stack once, as problems and
 * warnings; only problems fail the step. */
static void test_check_stack_findings (void **state)
{
    struct step_check *c = *state;
    const struct doctor_result *res;
    const char *port = "warning: port_range 30000-40000 overlaps the kernel's ephemeral ports";
    char *text = NULL;
    size_t size = 0;
    FILE *f;

    strcpy (c->recs[2].finding[0], port);
    strcpy (c->recs[3].finding[0], port);
    res = check (c, 4);
    assert_true (doctor_result_ok (res));
    assert_int_equal (res->nwarnings, 1);
    assert_string_equal (res->warning[0], "node2: port_range 30000-40000 overlaps the kernel's "
                                          "ephemeral ports");
    doctor_result_free (&c->res);
    strcpy (c->recs[3].finding[1], "problem: GLOO_SOCKET_IFNAME=lo0: lo0 has no IPv4 address");
    strcpy (c->recs[1].stack, "MPI plugins pmi2 (this step: none); no mpi/pmix");
    res = check (c, 4);
    assert_false (doctor_result_ok (res));
    assert_int_equal (res->nwarnings, 1);
    assert_true (has_problem (res, "node2: GLOO_SOCKET_IFNAME=lo0: lo0 has no IPv4 address"));
    f = open_memstream (&text, &size);
    doctor_report_text (f, res, 20);
    fclose (f);
    /* (node1's stack is its first rank's; the nodes that share one share a line) */
    assert_non_null (strstr (text, "\ndist-train-doctor: node1,node2: MPI plugins pmi2,pmix"));
    assert_non_null (strstr (text, "\ndist-train-doctor: warning: node2: port_range 30000-40000"));
    assert_non_null (strstr (text, "\ndist-train-doctor: problem: node2: GLOO_SOCKET_IFNAME"));
    free (text);
}

static void test_check_crowded_node (void **state)
{
    const size_t world = 2048;
    struct doctor_rank *recs = calloc (world, sizeof (*recs));
    struct doctor_layout l;
    struct doctor_result res;

    (void) state;
    assert_non_null (recs);
    for (size_t i = 0; i < world; i++) {
        healthy (&recs[i], (long) i, "node1", (long) i);
        recs[i].world_size = (long) world;
        strcpy (recs[i].cpus, "0-1"); /* every pair overlaps or is the same */
    }
    assert_int_equal (doctor_layout_build ("node[1-2]", "1024(x2)", NULL, NULL, &l), 0);
    assert_int_equal (doctor_check (recs, world, &l, &res), 0);
    assert_false (doctor_result_ok (&res));
    assert_string_equal (res.problem[0], "node1: 2048 tasks say they run here, but Slurm placed "
                                         "1024 there; only the first 1024 are checked against "
                                         "each other");
    assert_true (has_problem (&res, "rank 1024 checked in from node1 (task 1024), but Slurm's "
                                    "layout puts it on node2"));
    /* (they all came, from the wrong node: node2 has none, and misses none) */
    assert_string_equal (res.node[1].ranks, "");
    assert_string_equal (res.node[1].missing, "");
    doctor_result_free (&res);
    doctor_layout_free (&l);
    free (recs);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_hostlist),
        cmocka_unit_test (test_hostlist_bad),
        cmocka_unit_test (test_layout),
        cmocka_unit_test (test_layout_from_plugin),
        cmocka_unit_test (test_wire_roundtrip),
        cmocka_unit_test (test_wire_hostile),
#define STEP_CHECK(test)                                                                           \
    cmocka_unit_test_setup_teardown (test, step_check_setup, step_check_teardown)
        STEP_CHECK (test_check_healthy),
        STEP_CHECK (test_check_rank_twice),
        STEP_CHECK (test_check_missing_node),
        STEP_CHECK (test_check_wrong_node),
        STEP_CHECK (test_check_disagreements),
        STEP_CHECK (test_check_planned_share),
        cmocka_unit_test (test_report_fits),
        cmocka_unit_test (test_auth_exchange),
        cmocka_unit_test (test_auth_refusals),
        cmocka_unit_test (test_auth_malformed),
        cmocka_unit_test (test_check_crowded_node),
        STEP_CHECK (test_check_stack_findings),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
