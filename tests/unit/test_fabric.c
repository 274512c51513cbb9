/* test_fabric.c - the fabric check: which paths each node checks, its plan
 * and results on the wire (and hostile copies of them), the verdict for
 * each way a path goes wrong and for none, and the sockets themselves
 * between two processes on the loopback. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "tools/doctor/auth.h"
#include "tools/doctor/fabric.h"
#include "tools/doctor/net.h"

static void test_rounds (void **state)
{
    static const size_t n[] = {2, 3, 4, 5, 16, 17, 16384};
    (void) state;

    assert_int_equal (fabric_rounds (0), 0);
    assert_int_equal (fabric_rounds (1), 0);
    assert_int_equal (fabric_rounds (2), 1);
    assert_int_equal (fabric_rounds (3), 2);
    assert_int_equal (fabric_rounds (4), 2);
    assert_int_equal (fabric_rounds (5), 3);
    assert_int_equal (fabric_rounds (16), 4);
    assert_int_equal (fabric_rounds (16384), FABRIC_ROUNDS_MAX);
    for (size_t k = 0; k < sizeof (n) / sizeof (n[0]); k++) {
        /* the first round is the ring; every round brings another partner */
        for (uint32_t i = 0; i < n[k] && i < 64; i++) {
            assert_int_equal (fabric_target_of (n[k], i, 0), (i + 1) % n[k]);
            for (unsigned r = 0; r < fabric_rounds (n[k]); r++) {
                assert_int_not_equal (fabric_target_of (n[k], i, r), i);
                for (unsigned q = 0; q < r; q++)
                    assert_int_not_equal (fabric_target_of (n[k], i, r),
                                          fabric_target_of (n[k], i, q));
            }
        }
    }
}

static void make_nodes (struct fabric_node *nodes, size_t n)
{
    memset (nodes, 0, n * sizeof (*nodes));
    for (size_t i = 0; i < n; i++) {
        snprintf (nodes[i].name, sizeof (nodes[i].name), "node%zu", i + 1);
        snprintf (nodes[i].addr, sizeof (nodes[i].addr), "10.0.0.%zu", i + 1);
        snprintf (nodes[i].ifname, sizeof (nodes[i].ifname), "eth0");
        nodes[i].port = 29500;
        nodes[i].mtu = 1500;
    }
}

static void test_plan (void **state)
{
    struct fabric_node nodes[16];
    struct fabric_plan plan, back;
    char buf[4096];
    int len;
    (void) state;

    make_nodes (nodes, 16);
    nodes[9].port = 0; /* it could not listen: nobody checks it, it checks nobody */
    fabric_plan_make (nodes, 16, 8, &plan);
    assert_int_equal (plan.index, 8);
    assert_int_equal (plan.nodes, 16);
    assert_int_equal (plan.ntargets, 3); /* 10, 12, 0: not 9 */
    assert_int_equal (plan.target[0].to, 10);
    assert_int_equal (plan.target[0].round, 1);
    assert_string_equal (plan.target[0].addr, "10.0.0.11");
    assert_int_equal (plan.expect, 4); /* 7, 6, 4, 0 come to 8 */
    fabric_plan_make (nodes, 16, 10, &plan);
    assert_int_equal (plan.expect, 3); /* not 9 */
    fabric_plan_make (nodes, 16, 9, &plan);
    assert_int_equal (plan.ntargets, 0);
    assert_int_equal (plan.expect, 0);

    fabric_plan_make (nodes, 16, 3, &plan);
    len = fabric_plan_encode (&plan, buf, sizeof (buf));
    assert_true (len > 0);
    assert_int_equal (fabric_plan_decode (buf, (size_t) len, &back), 0);
    assert_int_equal (back.index, 3);
    assert_int_equal (back.ntargets, plan.ntargets);
    assert_int_equal (back.expect, plan.expect);
    assert_int_equal (back.sample_ms, FABRIC_SAMPLE_MS);
    assert_false (back.timed);
    /* a path measured again: a timed sample, as long as rank 0 said */
    plan.sample_ms = FABRIC_AGAIN_SAMPLE_MS;
    plan.timed = true;
    len = fabric_plan_encode (&plan, buf, sizeof (buf));
    assert_int_equal (fabric_plan_decode (buf, (size_t) len, &back), 0);
    assert_int_equal (back.sample_ms, FABRIC_AGAIN_SAMPLE_MS);
    assert_true (back.timed);
    for (size_t i = 0; i < plan.ntargets; i++) {
        assert_int_equal (back.target[i].to, plan.target[i].to);
        assert_int_equal (back.target[i].port, plan.target[i].port);
        assert_int_equal (back.target[i].mtu, plan.target[i].mtu);
        assert_string_equal (back.target[i].name, plan.target[i].name);
    }
    assert_int_equal (fabric_plan_encode (&plan, buf, 20), -1);
}

static void test_plan_hostile (void **state)
{
    static const char *const bad[] = {
        "",
        "fabric 1\nnode 0 2 1 200 bytes\nend\n", /* the version before */
        "fabric 2\nnode 2 2 1 200 bytes\nend\n", /* index past the nodes */
        "fabric 2\nnode 0 1 1 200 bytes\nend\n", /* one node has no path */
        "fabric 2\nnode 0 2 9 200 bytes\nend\n",
        "fabric 2\nnode 0 2 1\nend\n", /* no sample time */
        "fabric 2\nnode 0 2 1 200\nend\n", /* no sample kind */
        "fabric 2\nnode 0 2 1 200 forever\nend\n",
        "fabric 2\nnode 0 2 1 60000 bytes\nend\n", /* a sample longer than any */
        "fabric 2\nnode 0 2 1 200 bytes\ntarget 0 1 0 1500 10.0.0.2 node2\nend\n", /* port 0 */
        "fabric 2\nnode 0 2 1 200 bytes\ntarget 0 5 29500 1500 10.0.0.2 node2\nend\n",
        "fabric 2\nnode 0 2 1 200 bytes\ntarget 7 1 29500 1500 10.0.0.2 node2\nend\n",
        "fabric 2\nnode 0 2 1 200 bytes\ntarget 0 1 29500 1500 10.0.0.2\nend\n",
        "fabric 2\nnode 0 2 1 200 bytes\ntarget 0 1 +29500 1500 10.0.0.2 node2\nend\n",
        "fabric 2\nnode 0 2 1 200 bytes\ntarget 0 1 29500 1500 10.0.0.2 node2\n", /* no end */
        "fabric 2\nnode 0 5 1 200 bytes\ntarget 0 1 1 1 a b\ntarget 0 1 1 1 a b\ntarget 0 1 1 1 a "
        "b\n"
        "target 0 1 1 1 a b\ntarget 0 1 1 1 a b\nend\n", /* more than the rounds */
    };
    struct fabric_plan plan;
    char odd[] = "fabric 2\nnode 0 2 1 200 bytes\ntarget 0 1 29500 1500 10.0.0.2 no\033de\nend\n";
    (void) state;

    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
        assert_int_equal (fabric_plan_decode (bad[i], strlen (bad[i]), &plan), -1);
    /* a name is made printable, not trusted */
    assert_int_equal (fabric_plan_decode (odd, strlen (odd), &plan), 0);
    assert_string_equal (plan.target[0].name, "no?de");
}

static void test_result_wire (void **state)
{
    struct fabric_pair p[2] =
        {
            {.from = 3,
             .to = 4,
             .round = 0,
             .conn = FABRIC_OK,
             .connect_us = 120,
             .rtt_us = 80,
             .bytes = 4194304,
             .usecs = 41000,
             .udp_max = 1500,
             .egress = "eth0"},
            {.from = 3,
             .to = 5,
             .round = 1,
             .conn = FABRIC_TIMEOUT,
             .connect_us = -1,
             .rtt_us = -1,
             .bytes = -1,
             .usecs = -1},
        },
                       back[4];
    char buf[2048];
    size_t n;
    int len;
    (void) state;

    len = fabric_result_encode (p, 2, buf, sizeof (buf));
    assert_true (len > 0);
    assert_int_equal (fabric_result_decode (buf, (size_t) len, 3, 16, back, 4, &n), 0);
    assert_int_equal (n, 2);
    assert_int_equal (back[0].from, 3);
    assert_int_equal (back[0].bytes, 4194304);
    assert_string_equal (back[0].egress, "eth0");
    assert_int_equal (back[1].conn, FABRIC_TIMEOUT);
    assert_string_equal (back[1].egress, "");
    /* not more than the caller has room for; not its own node; no unknown word */
    assert_int_equal (fabric_result_decode (buf, (size_t) len, 3, 16, back, 1, &n), -1);
    assert_int_equal (fabric_result_decode (buf, (size_t) len, 4, 16, back, 4, &n), -1);
    assert_int_equal (fabric_result_decode (buf, (size_t) len, 3, 5, back, 4, &n), -1);
    const char *odd = "fabric 2\npair 0 1 fine 1 1 1 1 1 -\nend\n";
    assert_int_equal (fabric_result_decode (odd, strlen (odd), 0, 2, back, 4, &n), -1);
    odd = "fabric 2\npair 0 1 ok 1 1 1 1 99999999 -\nend\n";
    assert_int_equal (fabric_result_decode (odd, strlen (odd), 0, 2, back, 4, &n), -1);
}

/* Every path of n nodes, healthy: bandwidth around 100 MB/s. */
static size_t healthy (const struct fabric_node *nodes, size_t n, struct fabric_pair *pairs)
{
    size_t k = 0;

    for (uint32_t i = 0; i < n; i++)
        for (unsigned r = 0; r < fabric_rounds (n); r++) {
            struct fabric_pair *p = &pairs[k++];
            memset (p, 0, sizeof (*p));
            p->from = i;
            p->to = fabric_target_of (n, i, r);
            p->round = (int) r;
            p->conn = FABRIC_OK;
            p->connect_us = 200;
            p->rtt_us = 90 + (long) (k % 7);
            p->bytes = 4L << 20;
            /* 2x between the fastest and the slowest: noise, not a finding */
            p->usecs = 30000 + (long) ((k * 7919) % 30000);
            p->udp_max = nodes[p->to].mtu < nodes[i].mtu ? nodes[p->to].mtu : nodes[i].mtu;
            snprintf (p->egress, sizeof (p->egress), "eth0");
        }
    return k;
}

/* Node x's paths, both ways, at 1/20 of a healthy path's rate. */
static void slow_node (struct fabric_pair *pairs, size_t n, uint32_t x)
{
    for (size_t i = 0; i < n; i++)
        if (pairs[i].from == x || pairs[i].to == x)
            pairs[i].usecs = 20 * 45000;
}

static bool any_line (char (*lines)[DOCTOR_LINE_MAX], size_t n, const char *a, const char *b)
{
    for (size_t i = 0; i < n && i < DOCTOR_PROBLEMS_MAX; i++)
        if (strstr (lines[i], a) != NULL && (b == NULL || strstr (lines[i], b) != NULL))
            return true;
    return false;
}

static void judge (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                   const struct fabric_pair *pairs, size_t np, enum fabric_mode mode,
                   char summary[DOCTOR_LINE_MAX])
{
    memset (res, 0, sizeof (*res));
    assert_int_equal (fabric_judge (res, nodes, n, pairs, np, mode, summary, DOCTOR_LINE_MAX), 0);
}

static void test_judge_healthy (void **state)
{
    struct fabric_node nodes[16];
    struct fabric_pair pairs[64];
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n;
    (void) state;

    make_nodes (nodes, 16);
    n = healthy (nodes, 16, pairs);
    assert_int_equal (n, 64);
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 0);
    assert_int_equal (res.nwarnings, 0);
    assert_non_null (strstr (summary, "64 of 64 paths between 16 nodes connected in 4 rounds"));
}

static void test_judge_slow (void **state)
{
    struct fabric_node nodes[16];
    struct fabric_pair pairs[64];
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n;
    (void) state;

    make_nodes (nodes, 16);
    n = healthy (nodes, 16, pairs);
    /* node6 at 1/20 of the others, both ways */
    slow_node (pairs, n, 5);
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 0);
    assert_int_equal (res.nwarnings, 1);
    assert_non_null (strstr (res.warning[0], "fabric: node6 is slow: 4.7 MB/s over its 8 paths"));
    assert_non_null (strstr (res.warning[0], "1/19 of the step's median 89.3 MB/s"));
    /* node6's paths are measured again before it is named: all 8 */
    size_t idx[64];
    assert_int_equal (fabric_suspects (pairs, n, idx), 8);
    for (size_t j = 0; j < 8; j++)
        assert_true (pairs[idx[j]].from == 5 || pairs[idx[j]].to == 5);
    /* one path alone: the path, not a node; it is measured again first */
    n = healthy (nodes, 16, pairs);
    pairs[20].usecs = 20 * 45000;
    assert_int_equal (fabric_suspects (pairs, n, idx), 1);
    assert_int_equal (idx[0], 20);
    pairs[20].usecs = 20 * 45000;
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nwarnings, 1);
    assert_non_null (strstr (res.warning[0], "fabric: the path node"));
}

/* A node whose paths all came out slow once, a pause of that node: measured
 * again, its paths into it beside their senders' fastest, its own with no
 * reference (it has no path that is not a suspect), it is not named; slow
 * again, it is. */
static void test_judge_slow_node_again (void **state)
{
    struct fabric_node nodes[16];
    struct fabric_pair pairs[64], first[64];
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n, idx[64], k;
    (void) state;

    make_nodes (nodes, 16);
    n = healthy (nodes, 16, pairs);
    slow_node (pairs, n, 5);
    memcpy (first, pairs, sizeof (first));
    k = fabric_suspects (pairs, n, idx);
    assert_int_equal (k, 8);
    for (int slow_again = 0; slow_again < 2; slow_again++) {
        memcpy (pairs, first, sizeof (pairs));
        for (size_t j = 0; j < k; j++) {
            struct fabric_pair again = pairs[idx[j]], ref = again;
            again.usecs = slow_again ? 20 * 45000 : 45000;
            if (again.to == 5) {
                /* the sender's fastest other path, beside it */
                ref.to = again.to == 0 ? 1 : 0;
                ref.usecs = 45000;
                fabric_remeasured (pairs, n, &again, &ref);
            } else {
                fabric_remeasured (pairs, n, &again, NULL);
            }
        }
        judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
        assert_int_equal (res.nproblems, 0);
        assert_int_equal (res.nwarnings, slow_again ? 1 : 0);
        if (slow_again)
            assert_non_null (strstr (res.warning[0], "fabric: node6 is slow"));
    }
}

/* A path measured again beside its sender's fastest path: the ratio of the
 * two decides, not the median the first samples gave. */
static void test_judge_slow_again (void **state)
{
    struct fabric_node nodes[16];
    struct fabric_pair pairs[64];
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n, idx[64];
    (void) state;

    make_nodes (nodes, 16);
    n = healthy (nodes, 16, pairs);
    pairs[20].usecs = 20 * 45000;
    struct fabric_pair again = pairs[20], ref = pairs[21];
    again.usecs = 40000;
    ref.usecs = 30000; /* 3/4 of the reference's rate: not slow */
    fabric_remeasured (pairs, n, &again, &ref);
    assert_int_equal (pairs[20].usecs, 20 * 45000); /* (the median is the first samples') */
    assert_true (pairs[20].vs_ref > 0.74 && pairs[20].vs_ref < 0.76);
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nwarnings, 0);
    /* still a twentieth of its reference: named, though its rate is the
     * median's; measured twice, its better ratio counts */
    again.usecs = 30000 * 20;
    pairs[20].usecs = 30000;
    pairs[20].vs_ref = 0;
    fabric_remeasured (pairs, n, &again, &ref);
    again.usecs = 30000 * 30;
    fabric_remeasured (pairs, n, &again, &ref);
    assert_true (pairs[20].vs_ref > 0.049 && pairs[20].vs_ref < 0.051);
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nwarnings, 1);
    assert_non_null (strstr (res.warning[0], "fabric: the path node"));
    /* with no reference, the faster sample counts */
    pairs[20].usecs = 20 * 45000;
    pairs[20].vs_ref = 0;
    again.usecs = 45000;
    fabric_remeasured (pairs, n, &again, NULL);
    assert_int_equal (pairs[20].usecs, 45000);
    assert_true (pairs[20].vs_ref == 0);
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nwarnings, 0);
    /* a path just over the line (a quarter of 89.3 MB/s: 4 MiB in 188 ms)
     * is no suspect, under it one */
    n = healthy (nodes, 16, pairs);
    pairs[20].usecs = 180000;
    assert_int_equal (fabric_suspects (pairs, n, idx), 0);
    pairs[20].usecs = 196000;
    assert_int_equal (fabric_suspects (pairs, n, idx), 1);
}

static void test_judge_firewall (void **state)
{
    struct fabric_node nodes[16];
    struct fabric_pair pairs[64];
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n;
    (void) state;

    make_nodes (nodes, 16);
    n = healthy (nodes, 16, pairs);
    for (size_t i = 0; i < n; i++)
        if (pairs[i].to == 6) {
            pairs[i].conn = FABRIC_TIMEOUT;
            pairs[i].bytes = pairs[i].usecs = pairs[i].rtt_us = -1;
        }
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 1);
    assert_true (any_line (res.problem, res.nproblems, "no connection reached node7",
                           "a firewall on node7 drops the port range"));
    assert_int_equal (res.nwarnings, 0);
    /* fabric=warn: the same, as a warning */
    judge (&res, nodes, 16, pairs, n, FABRIC_WARN, summary);
    assert_int_equal (res.nproblems, 0);
    assert_true (any_line (res.warning, res.nwarnings, "no connection reached node7", NULL));
    /* to and from: cut off */
    for (size_t i = 0; i < n; i++)
        if (pairs[i].from == 6)
            pairs[i].conn = FABRIC_UNREACHABLE;
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 1);
    assert_true (any_line (res.problem, res.nproblems, "fabric: node7 is cut off", NULL));
    /* one path alone */
    n = healthy (nodes, 16, pairs);
    pairs[3].conn = FABRIC_REFUSED;
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 1);
    assert_true (any_line (res.problem, 1, "fabric: node1 cannot connect to", "refused"));
}

static void test_judge_mtu (void **state)
{
    struct fabric_node nodes[16];
    struct fabric_pair pairs[64];
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n;
    (void) state;

    make_nodes (nodes, 16);
    nodes[4].mtu = 1400;
    n = healthy (nodes, 16, pairs);
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 1);
    assert_true (any_line (res.problem, 1,
                           "MTU mismatch: node5's eth0 has MTU 1400, 15 other nodes 1500",
                           "the largest probe that reached it: 1400 bytes"));
    /* alike at both ends, and large packets still vanish on the way */
    make_nodes (nodes, 16);
    n = healthy (nodes, 16, pairs);
    pairs[10].udp_max = 1280;
    judge (&res, nodes, 16, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 1);
    assert_true (any_line (res.problem, 1, "packets over 1280 bytes are dropped on the way", NULL));
}

static void test_judge_route (void **state)
{
    struct fabric_node nodes[4];
    struct fabric_pair pairs[8];
    struct doctor_result res;
    char summary[DOCTOR_LINE_MAX];
    size_t n;
    (void) state;

    make_nodes (nodes, 4);
    n = healthy (nodes, 4, pairs);
    snprintf (pairs[2].egress, sizeof (pairs[2].egress), "eth1");
    judge (&res, nodes, 4, pairs, n, FABRIC_FAIL, summary);
    assert_int_equal (res.nproblems, 0);
    assert_int_equal (res.nwarnings, 1);
    assert_true (any_line (res.warning, 1, "by the interface eth1, not eth0", "ip route get"));
}

/* ---- the sockets, between two processes on the loopback ---- */

static int free_port (void)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int tfd, ufd;

    /* a port both TCP and UDP have free: try from a pid-derived start */
    for (int port = 20000 + (getpid () % 5000); port < 30000; port += 7) {
        char text[16];
        snprintf (text, sizeof (text), "%d", port);
        assert_int_equal (doctor_sockaddr ("127.0.0.1", text, &ss, &len), 0);
        if (fabric_listen ("127.0.0.1", port, &tfd, &ufd) == 0) {
            close (tfd);
            close (ufd);
            return port;
        }
    }
    fail ();
    return -1;
}

/* Two nodes on the loopback, each listening on its own port. */
struct two {
    struct doctor_key key, other;
    struct fabric_node nodes[2];
    int tfd[2], ufd[2];
    long mtu;
    /* node 0, here: its end, its plan and its results; node 1's child */
    struct fabric_end end;
    struct fabric_plan plan;
    struct fabric_pair out[FABRIC_ROUNDS_MAX];
    pid_t pid;
};

static void two_setup (struct two *t)
{
    char ifname[DOCTOR_NAME_MAX];

    memset (t->key.bytes, 7, sizeof (t->key.bytes));
    memset (t->other.bytes, 8, sizeof (t->other.bytes));
    assert_int_equal (fabric_interface ("127.0.0.1", ifname, sizeof (ifname), &t->mtu), 0);
    assert_string_equal (ifname, "lo");
    assert_true (t->mtu >= 1500);
    make_nodes (t->nodes, 2);
    for (int i = 0; i < 2; i++) {
        snprintf (t->nodes[i].addr, sizeof (t->nodes[i].addr), "127.0.0.1");
        t->nodes[i].port = free_port ();
        t->nodes[i].mtu = t->mtu;
        assert_int_equal (fabric_listen ("127.0.0.1", t->nodes[i].port, &t->tfd[i], &t->ufd[i]), 0);
    }
}

/* Node 1 in a child, with key; its results come back on the pipe. */
static pid_t two_child (struct two *t, const struct doctor_key *key, int wfd, long ms)
{
    struct fabric_pair out[FABRIC_ROUNDS_MAX];
    struct fabric_plan plan;
    char buf[2048];
    int len;
    pid_t pid = fork ();

    assert_true (pid >= 0);
    if (pid > 0)
        return pid;
    fabric_plan_make (t->nodes, 2, 1, &plan);
    struct fabric_end end = {.key = key,
                             .addr = "127.0.0.1",
                             .mtu = t->mtu,
                             .tfd = t->tfd[1],
                             .ufd = t->ufd[1],
                             .stop_fd = -1};
    fabric_run (&end, &plan, doctor_now_ms () + ms, out);
    len = fabric_result_encode (out, plan.ntargets, buf, sizeof (buf));
    _exit (wfd < 0 || (len > 0 && write (wfd, buf, (size_t) len) == len) ? 0 : 1);
}

/* The two: node 1 in a child for ms, with the other key when foreign (its
 * results on wfd, or dropped for -1), node 0's end with the two's key and its
 * plan here. */
static void two_start (struct two *t, bool foreign, int wfd, long ms)
{
    two_setup (t);
    t->pid = two_child (t, foreign ? &t->other : &t->key, wfd, ms);
    close (t->tfd[1]);
    close (t->ufd[1]);
    t->end = (struct fabric_end){.key = &t->key,
                                 .addr = "127.0.0.1",
                                 .mtu = t->mtu,
                                 .tfd = t->tfd[0],
                                 .ufd = t->ufd[0],
                                 .stop_fd = -1};
    fabric_plan_make (t->nodes, 2, 0, &t->plan);
}

static void test_sockets (void **state)
{
    struct two t;
    struct fabric_pair child_out[FABRIC_ROUNDS_MAX];
    char buf[2048];
    int pipefd[2], status, len;
    size_t n;
    (void) state;

    assert_int_equal (pipe (pipefd), 0);
    two_start (&t, false, pipefd[1], 8000);
    close (pipefd[1]);
    assert_int_equal (t.plan.ntargets, 1);
    assert_int_equal (t.plan.expect, 1);
    fabric_run (&t.end, &t.plan, doctor_now_ms () + 8000, t.out);
    close (t.tfd[0]);
    close (t.ufd[0]);
    assert_int_equal (waitpid (t.pid, &status, 0), t.pid);
    assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
    len = (int) read (pipefd[0], buf, sizeof (buf));
    close (pipefd[0]);
    assert_true (len > 0);
    assert_int_equal (fabric_result_decode (buf, (size_t) len, 1, 2, child_out, 4, &n), 0);
    assert_int_equal (n, 1);
    for (int i = 0; i < 2; i++) {
        struct fabric_pair *p = i == 0 ? &t.out[0] : &child_out[0];
        assert_int_equal (p->conn, FABRIC_OK);
        assert_true (p->rtt_us >= 0 && p->connect_us >= 0);
        assert_true (p->bytes > 0 && p->bytes <= FABRIC_SAMPLE_BYTES);
        assert_true (p->usecs > 0);
        /* the loopback's MTU, up to what one IP packet holds */
        assert_int_equal (p->udp_max, t.mtu < 65535 ? t.mtu : 65535);
        assert_string_equal (p->egress, "lo");
    }
}

/* A timed sample (a path measured again) runs its whole time, past
 * FABRIC_SAMPLE_BYTES if the path is fast: the receiver counts more than
 * that, or bytes over half its time at least (a receiver that lost the CPU
 * for a while finds much of it waiting, and counts it at once). */
static void test_sockets_timed (void **state)
{
    struct two t;
    int status;
    (void) state;

    two_start (&t, false, -1, 8000);
    t.plan.sample_ms = FABRIC_SAMPLE_MS;
    t.plan.timed = true;
    fabric_run (&t.end, &t.plan, doctor_now_ms () + 8000, t.out);
    close (t.tfd[0]);
    close (t.ufd[0]);
    assert_int_equal (waitpid (t.pid, &status, 0), t.pid);
    assert_int_equal (t.out[0].conn, FABRIC_OK);
    assert_true (t.out[0].bytes > FABRIC_SAMPLE_BYTES
                 || t.out[0].usecs >= FABRIC_SAMPLE_MS * 1000L / 2);
    assert_true (t.out[0].usecs < FABRIC_PAIR_MS * 1000L);
}

/* A listener with another key: found, not trusted; nothing there: refused. */
static void test_sockets_foreign (void **state)
{
    struct two t;
    int status;
    (void) state;

    two_start (&t, true, -1, 4000);
    t.plan.expect = 0;
    fabric_run (&t.end, &t.plan, doctor_now_ms () + 4000, t.out);
    assert_int_equal (t.out[0].conn, FABRIC_FOREIGN);
    kill (t.pid, SIGKILL);
    waitpid (t.pid, &status, 0);
    /* node 1's port is closed now */
    fabric_run (&t.end, &t.plan, doctor_now_ms () + 4000, t.out);
    assert_int_equal (t.out[0].conn, FABRIC_REFUSED);
    close (t.tfd[0]);
    close (t.ufd[0]);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_rounds),           cmocka_unit_test (test_plan),
        cmocka_unit_test (test_plan_hostile),     cmocka_unit_test (test_result_wire),
        cmocka_unit_test (test_judge_healthy),    cmocka_unit_test (test_judge_slow),
        cmocka_unit_test (test_judge_slow_again), cmocka_unit_test (test_judge_slow_node_again),
        cmocka_unit_test (test_judge_firewall),   cmocka_unit_test (test_judge_mtu),
        cmocka_unit_test (test_judge_route),      cmocka_unit_test (test_sockets),
        cmocka_unit_test (test_sockets_timed),    cmocka_unit_test (test_sockets_foreign),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
