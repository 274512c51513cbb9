/* test_hang.c - dist-train-doctor hang: the verdict over probe lines for
 * each way a step hangs (and two ways it does not), the probe's lines
 * against hostile input, and the probe itself on real processes of a
 * made-up step: one stopped, one asleep where the others read. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tools/doctor/auth.h"
#include "tools/doctor/hang.h"

/* A rank line: rank r of world on node, in state st, waiting in sys/wchan,
 * with cpu ms of CPU and io bytes in a 2 s window. */
static void rank_line (struct hang_sample *s, long r, long world, const char *node, char st,
                       const char *sys, const char *wchan, long cpu, long io)
{
    char line[512];

    snprintf (line, sizeof (line),
              "rank rank=%ld world=%ld node=%s pid=%ld state=%c syscall=%s wchan=%s cpu_ms=%ld "
              "io=%ld window_ms=2000 nproc=1",
              r, world, node, 100 + r, st, sys, wchan, cpu, io);
    assert_int_equal (hang_sample_parse_line (s, line), 0);
}

static void sock_line (struct hang_sample *s, long r, const char *local, const char *remote,
                       unsigned long txq, unsigned long rxq, unsigned long retr)
{
    char line[512];

    snprintf (line, sizeof (line), "sock rank=%ld local=%s remote=%s txq=%lu rxq=%lu retr=%lu", r,
              local, remote, txq, rxq, retr);
    assert_int_equal (hang_sample_parse_line (s, line), 0);
}

/* What node from's probe said of the host of node n<to> (10.0.0.<to>). */
static void reaches (struct hang_sample *s, int from, int to, bool ok)
{
    char line[128];

    snprintf (line, sizeof (line), "reach node=n%d addr=10.0.0.%d ok=%d why=%s", from, to, ok,
              ok ? "-" : "no-route");
    assert_int_equal (hang_sample_parse_line (s, line), 0);
}

/* 8 ranks, two per node n1..n4, all waiting in futex; rank i listens on
 * 10.0.0.<node>:<5000+i>, and every pair is connected once. */
static void step_of_8 (struct hang_sample *s)
{
    char node[16];

    for (long r = 0; r < 8; r++) {
        char line[64];
        snprintf (node, sizeof (node), "n%ld", r / 2 + 1);
        snprintf (line, sizeof (line), "node node=%s procs=2", node);
        if (r % 2 == 0)
            assert_int_equal (hang_sample_parse_line (s, line), 0);
        rank_line (s, r, 8, node, 'S', "futex", "futex_wait_queue", 4, 0);
    }
}

/* The connection between ranks a and b (a < b), with a's queues and b's. */
static void connect_ranks (struct hang_sample *s, long a, long b, unsigned long a_tx,
                           unsigned long a_rx, unsigned long b_tx, unsigned long b_rx,
                           unsigned long retr)
{
    char ea[64], eb[64];

    snprintf (ea, sizeof (ea), "10.0.0.%ld:%ld", a / 2 + 1, 6000 + a * 16 + b);
    snprintf (eb, sizeof (eb), "10.0.0.%ld:%ld", b / 2 + 1, 5000 + b);
    sock_line (s, a, ea, eb, a_tx, a_rx, retr);
    sock_line (s, b, eb, ea, b_tx, b_rx, retr);
}

static void all_connected (struct hang_sample *s)
{
    for (long a = 0; a < 8; a++)
        for (long b = a + 1; b < 8; b++)
            connect_ranks (s, a, b, 0, 0, 0, 0, 0);
}

static size_t verdict (struct hang_sample *s, char *out, size_t size)
{
    size_t n;

    hang_sample_finish (s);
    n = hang_verdict (s, out, size);
    print_message ("verdict: %s\n", out);
    return n;
}

static void test_stopped (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    s.rank[5].state = 'T';
    snprintf (s.rank[5].wchan, sizeof (s.rank[5].wchan), "do_signal_stop");
    all_connected (&s);
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "rank 5 on n3 is stopped (SIGSTOP"));
    assert_non_null (strstr (out, "7 ranks wait on it"));
    hang_sample_free (&s);
}

static void test_missing_rank (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    s.rank[3].rank = 2; /* rank 3's line gone: 2 is repeated, then dropped */
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_int_equal (s.nranks, 7);
    assert_non_null (strstr (out, "rank 3 has no process"));
    hang_sample_free (&s);
    /* the same, when the probe's srun found that a node did not answer */
    step_of_8 (&s);
    s.rank[3].rank = 2;
    snprintf (s.silent, sizeof (s.silent), "n2");
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_string_equal (out, "node n2 did not answer, and 7 ranks wait on rank 3: cut off from "
                              "the others, or down");
    hang_sample_free (&s);
    assert_string_equal (s.silent, "");
}

static void test_odd_wait (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    snprintf (s.rank[6].syscall, sizeof (s.rank[6].syscall), "clock_nanosleep");
    all_connected (&s);
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "rank 6 on n4 waits in clock_nanosleep"));
    assert_non_null (strstr (out, "7 others wait in futex"));
    hang_sample_free (&s);
}

/* n2 (ranks 2 and 3) drops every packet: the connections to and from it
 * hold unacknowledged data and retransmit; the others are quiet. */
static void test_cut_node (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX], pair[2][HANG_ENDPOINT_MAX];

    step_of_8 (&s);
    for (long a = 0; a < 8; a++)
        for (long b = a + 1; b < 8; b++) {
            bool cut = (a / 2 == 1) != (b / 2 == 1);
            connect_ranks (&s, a, b, cut ? 4096 : 0, 0, cut ? 4096 : 0, 0, cut ? 3 : 0);
        }
    assert_int_equal (verdict (&s, out, sizeof (out)), 2);
    assert_non_null (strstr (out, "node n2 is cut off"));
    assert_int_equal (hang_suspect_pair (&s, pair), -1);
    assert_non_null (strstr (out, "24 connections to and from it"));
    assert_non_null (strstr (out, "ranks 2-3 on n2"));
    hang_sample_free (&s);
}

/* A ring's collective leaves one connection with data in flight to a node
 * cut off: the pair alone does not say which end it is; the probes' tries
 * to reach the other nodes do. */
static void test_cut_node_one_connection (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX], pair[2][HANG_ENDPOINT_MAX];

    step_of_8 (&s);
    all_connected (&s);
    connect_ranks (&s, 5, 6, 1024, 0, 0, 0, 4);
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "the network between n3,n4 drops data"));
    /* the front end asks every node about the pair */
    assert_int_equal (hang_suspect_pair (&s, pair), 0);
    assert_string_equal (pair[0], "10.0.0.3");
    assert_string_equal (pair[1], "10.0.0.4");
    /* n3 reaches no one; n4 reaches the others but n3 */
    for (int n = 1; n <= 4; n++) {
        if (n != 3)
            reaches (&s, 3, n, false);
        reaches (&s, 4, n, n != 3);
    }
    assert_int_equal (verdict (&s, out, sizeof (out)), 2);
    assert_non_null (strstr (out, "node n3 is cut off: 1 connection to and from it"));
    assert_int_equal (hang_suspect_pair (&s, pair), -1);
    assert_non_null (strstr (out, "ranks 4-5 on n3"));
    hang_sample_free (&s);
}

/* A route that fails on the node cut off is no retransmission: its data
 * is only held, unacknowledged, while the step waits; the probes' tries
 * tell whether that is a cut or a peer that does not read. */
static void test_held_data (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX], pair[2][HANG_ENDPOINT_MAX];

    step_of_8 (&s);
    all_connected (&s);
    connect_ranks (&s, 5, 6, 2048, 0, 0, 0, 0);
    assert_int_equal (hang_suspect_pair (&s, pair), 0);
    /* everyone reaches everyone: not the network */
    for (int n = 1; n <= 4; n++)
        reaches (&s, 1, n, true);
    assert_int_equal (verdict (&s, out, sizeof (out)), 0);
    assert_non_null (strstr (out, "no rank stands out"));
    /* n3 reaches no one */
    for (int n = 1; n <= 4; n++)
        if (n != 3)
            reaches (&s, 3, n, false);
    assert_int_equal (verdict (&s, out, sizeof (out)), 2);
    assert_non_null (strstr (out, "node n3 is cut off"));
    /* a rank that works: held data is no sign then */
    s.rank[0].cpu_ms = 1500;
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "rank 0 on n1 works"));
    hang_sample_free (&s);
}

/* The probe's tries: a refusal proves the path, silence or no route not. */
static void test_reach (void **state)
{
    /* (no TCP path leads to a multicast group, on any machine) */
    char endpoints[2][HANG_ENDPOINT_MAX] = {"127.0.0.1:0", "224.0.0.1:0"};
    char *text = NULL;
    size_t len;
    FILE *f;

    assert_non_null (f = open_memstream (&text, &len));
    hang_reach (f, "n1", endpoints, 2);
    fclose (f);
    print_message ("%s", text);
    assert_non_null (strstr (text, "reach node=n1 addr=127.0.0.1 ok=1 why=-\n"));
    assert_non_null (strstr (text, "reach node=n1 addr=224.0.0.1 ok=0 why=no-route"));
    free (text);
}

/* One bad link, between n1 and n4, is not a node cut off. */
static void test_bad_link (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    all_connected (&s);
    connect_ranks (&s, 1, 7, 512, 0, 0, 0, 2);
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "the network between n1,n4 drops data"));
    hang_sample_free (&s);
}

static void test_working_rank (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    s.rank[0].io_bytes = 200 * 1024 * 1024; /* a checkpoint */
    all_connected (&s);
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "rank 0 on n1 works (CPU or I/O) while 7 ranks wait"));
    hang_sample_free (&s);
}

static void test_no_hang (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    for (size_t i = 0; i < s.nranks; i++)
        s.rank[i].cpu_ms = 900;
    assert_int_equal (verdict (&s, out, sizeof (out)), 0);
    assert_non_null (strstr (out, "no hang seen"));
    hang_sample_free (&s);
}

/* Every rank moves data, and rank 0 was caught in D state between two
 * writes to a slow disk: a step at work, not a rank stuck in D state.  A
 * rank in D state that moved nothing is still named. */
static void test_busy_in_d_state (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    for (size_t i = 0; i < s.nranks; i++)
        s.rank[i].io_bytes = 300 * 1024;
    s.rank[0].state = 'D';
    assert_int_equal (verdict (&s, out, sizeof (out)), 0);
    assert_non_null (strstr (out, "no hang seen"));
    hang_sample_free (&s);

    s = (struct hang_sample) HANG_SAMPLE_INIT;
    step_of_8 (&s);
    s.rank[3].state = 'D';
    all_connected (&s);
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "rank 3 on n2 is in D state"));
    hang_sample_free (&s);
}

/* Every rank waits alike and no socket holds data: nobody can be named. */
static void test_all_alike (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    all_connected (&s);
    assert_int_equal (verdict (&s, out, sizeof (out)), 0);
    assert_non_null (strstr (out, "no rank stands out: all 8 ranks wait alike"));
    hang_sample_free (&s);
}

/* Every rank's stack read: rank 5 is in gloo's broadcast, the others in a collective of
 * torch's own (no name: "-"); then the others in gloo's allreduce and rank 2 in none.  A
 * rank whose stack could not be read ("?") names no one. */
static void test_odd_collective (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];

    step_of_8 (&s);
    all_connected (&s);
    hang_sample_finish (&s);
    for (size_t i = 0; i < s.nranks; i++)
        snprintf (s.rank[i].coll, sizeof (s.rank[i].coll), "-");
    snprintf (s.rank[5].coll, sizeof (s.rank[5].coll), "gloo::broadcast");
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "rank 5 on n3 is in gloo::broadcast, where the 7 others are in "
                                  "another collective: the ranks do not call the same"));

    for (size_t i = 0; i < s.nranks; i++)
        snprintf (s.rank[i].coll, sizeof (s.rank[i].coll), "gloo::allreduce");
    snprintf (s.rank[2].coll, sizeof (s.rank[2].coll), "-");
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (
        strstr (out, "rank 2 on n2 is not in gloo::allreduce, where the 7 others are"));

    snprintf (s.rank[4].coll, sizeof (s.rank[4].coll), "?");
    assert_int_equal (verdict (&s, out, sizeof (out)), 0);
    assert_non_null (strstr (out, "no rank stands out"));
    hang_sample_free (&s);
}

/* The names of the collectives, from the symbols as ELF files hold them. */
static void test_collective_symbol (void **state)
{
    char out[HANG_WAIT_MAX];

    assert_true (
        hang_collective_symbol ("_ZN4gloo9broadcastERNS_16BroadcastOptionsE", out, sizeof (out)));
    assert_string_equal (out, "gloo::broadcast");
    assert_true (
        hang_collective_symbol ("_ZN4gloo9allreduceERKNS_16AllreduceOptionsE", out, sizeof (out)));
    assert_string_equal (out, "gloo::allreduce");
    assert_true (hang_collective_symbol ("PMPI_Bcast", out, sizeof (out)));
    assert_string_equal (out, "MPI_Bcast");
    assert_true (hang_collective_symbol ("MPI_Allreduce", out, sizeof (out)));
    assert_string_equal (out, "MPI_Allreduce");
    /* gloo's own helpers, names that only begin like one, and broken manglings */
    assert_false (hang_collective_symbol ("_ZN4gloo9transport3tcp13UnboundBuffer8waitRecvEPiNSt6"
                                          "chrono8durationIlSt5ratioILl1ELl1000EEEE",
                                          out, sizeof (out)));
    assert_false (hang_collective_symbol ("_ZN4gloo10allreduce2ERKNS_16AllreduceOptionsE", out,
                                          sizeof (out)));
    assert_false (hang_collective_symbol ("_ZN4gloo9broadcast", out, sizeof (out)));
    assert_false (
        hang_collective_symbol ("_ZN4gloo99999999999999999999broadcastE", out, sizeof (out)));
    assert_false (hang_collective_symbol ("_ZN4gloo0E", out, sizeof (out)));
    assert_false (hang_collective_symbol ("MPI_Bcast_init", out, sizeof (out)));
    assert_false (hang_collective_symbol ("", out, sizeof (out)));
}

/* A thread of this process blocked in a read, called from hang_marker_wait: the scan of
 * the process's stacks finds that function (this program's .symtab names it) and no
 * other; a process whose stacks hold none of it shows nothing. */
__attribute__ ((noinline)) void hang_marker_wait (int fd);
__attribute__ ((noinline)) void hang_marker_wait (int fd)
{
    char c;

    while (read (fd, &c, 1) < 0 && errno == EINTR)
        ;
    __asm__ volatile("" ::: "memory"); /* (no tail call: this frame stays) */
}

static void *marker_thread (void *arg)
{
    hang_marker_wait (*(int *) arg);
    return NULL;
}

static bool marker_match (const char *name, char *out, size_t size)
{
    if (strcmp (name, "hang_marker_wait") != 0)
        return false;
    snprintf (out, size, "marker");
    return true;
}

/* Whether thread tid of this process waits in read (syscall 0 on x86-64 and aarch64's 63). */
static bool in_read (pid_t tid)
{
    char path[64], text[64] = "";
    FILE *f;

    snprintf (path, sizeof (path), "/proc/self/task/%d/syscall", (int) tid);
    if ((f = fopen (path, "r")) == NULL)
        return false;
    if (fgets (text, sizeof (text), f) == NULL)
        text[0] = '\0';
    fclose (f);
    return strncmp (text, SYS_read == 0 ? "0 " : "63 ", SYS_read == 0 ? 2 : 3) == 0;
}

/* This process's stacks, with a thread in hang_marker_wait: "marker" in out, or "" when
 * not found; what hang_stack_collectives returned, or -2 when the thread could not be
 * made.  (No cmocka assertion: it runs in a forked child too.) */
static int scan_self (char *out, size_t size)
{
    int fds[2], rc = -2;
    pthread_t t;
    pid_t tid = -1;

    out[0] = '\0';
    if (pipe (fds) < 0)
        return -2;
    if (pthread_create (&t, NULL, marker_thread, &fds[0]) != 0) {
        close (fds[0]);
        close (fds[1]);
        return -2;
    }
    /* the thread's id, then the thread in its read (5 s at most) */
    for (int i = 0; i < 500 && tid < 0; i++) {
        DIR *d = opendir ("/proc/self/task");
        struct dirent *e;
        while (d != NULL && (e = readdir (d)) != NULL)
            if (e->d_name[0] != '.' && atoi (e->d_name) != (int) syscall (SYS_gettid)
                && in_read (atoi (e->d_name)))
                tid = atoi (e->d_name);
        if (d != NULL)
            closedir (d);
        if (tid < 0)
            usleep (10000);
    }
    if (tid > 0)
        rc = hang_stack_collectives ("/proc", getpid (), marker_match, out, size);
    if (write (fds[1], "x", 1) != 1)
        rc = -2;
    pthread_join (t, NULL);
    close (fds[0]);
    close (fds[1]);
    return rc;
}

static void test_stack_real (void **state)
{
    pid_t child;
    int status;
    char out[HANG_WAIT_MAX] = "";

    assert_int_equal (scan_self (out, sizeof (out)), 0);
    print_message ("this process's stacks (uid %d): '%s'\n", (int) geteuid (), out);
    assert_string_equal (out, "marker");
    /* a user's probe: the mapped files by their paths, as map_files is root's alone */
    if (geteuid () == 0) {
        if ((child = fork ()) == 0) {
            if (setresgid (65534, 65534, 65534) < 0 || setresuid (65534, 65534, 65534) < 0)
                _exit (2);
            prctl (PR_SET_DUMPABLE, 1);
            status = scan_self (out, sizeof (out));
            fprintf (stderr, "as uid 65534: %d '%s'\n", status, out);
            _exit (status == 0 && strcmp (out, "marker") == 0 ? 0 : 1);
        }
        assert_true (child > 0);
        assert_int_equal (waitpid (child, &status, 0), child);
        assert_true (WIFEXITED (status));
        assert_int_equal (WEXITSTATUS (status), 0);
    }

    /* a child asleep in its own code: nothing of the marker's */
    if ((child = fork ()) == 0) {
        pause ();
        _exit (0);
    }
    assert_true (child > 0);
    usleep (100000);
    out[0] = '\0';
    assert_int_equal (hang_stack_collectives ("/proc", child, marker_match, out, sizeof (out)), 0);
    assert_string_equal (out, "");
    /* and gloo's names find nothing in it either */
    assert_int_equal (
        hang_stack_collectives ("/proc", child, hang_collective_symbol, out, sizeof (out)), 0);
    assert_string_equal (out, "");
    kill (child, SIGKILL);
    waitpid (child, NULL, 0);
    /* a process that is gone */
    assert_int_equal (hang_stack_collectives ("/proc", child, marker_match, out, sizeof (out)), -1);
}

/* Rank 4 left what 1 and 7 sent it unread, where it waits like the rest. */
static void test_unread (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX];
    char *text = NULL;
    size_t len;
    FILE *f;

    step_of_8 (&s);
    for (long a = 0; a < 8; a++)
        for (long b = a + 1; b < 8; b++)
            connect_ranks (&s, a, b, 0, (a == 4 && b == 7) ? 800 : 0, 0,
                           (a == 1 && b == 4) ? 800 : 0, 0);
    assert_int_equal (verdict (&s, out, sizeof (out)), 1);
    assert_non_null (strstr (out, "rank 4 on n3 has not read what peers sent it"));
    /* the table says who waits on whom */
    assert_non_null (f = open_memstream (&text, &len));
    assert_int_equal (hang_report (f, "77.0", &s), 1);
    fclose (f);
    print_message ("%s", text);
    assert_non_null (strstr (text, "step 77.0, 8 ranks found on 4 nodes"));
    assert_non_null (strstr (text, "verdict: rank 4 on n3"));
    /* ranks 1 and 7 wait on 4; 2 on nobody (and no probe read the stacks: "?") */
    assert_non_null (strstr (text, "0 B  ?                4\n2       n2 "));
    assert_non_null (strstr (text, "0 B  ?                -\n3       n2 "));
    assert_non_null (strstr (
        text, "0 B  ?                4\n(each node's probe: at most 0 ms of CPU)\nverdict"));
    free (text);
    hang_sample_free (&s);
}

static void test_bad_lines (void **state)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    const char *bad[] = {
        "rank rank=1",
        "rank rank=-1 world=2 node=a pid=1 state=S syscall=x wchan=y cpu_ms=0 io=0 window_ms=1 "
        "nproc=1",
        "rank rank=99999999 world=2 node=a pid=1 state=S syscall=x wchan=y cpu_ms=0 io=0 "
        "window_ms=1 nproc=1",
        "sock rank=1 local=a remote=b txq=x rxq=0 retr=0",
        "node",
        "srun: error: something",
    };

    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
        assert_int_equal (hang_sample_parse_line (&s, bad[i]), -1);
    assert_int_equal (hang_sample_parse_line (&s, "   "), 0);
    /* a value longer than its field is cut, not overrun */
    assert_int_equal (
        hang_sample_parse_line (
            &s,
            "rank rank=1 world=2 "
            "node=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
            "pid=1 state=S syscall=futex wchan=w cpu_ms=0 io=0 window_ms=0 "
            "nproc=1"),
        0);
    assert_int_equal (strlen (s.rank[0].node), DOCTOR_NAME_MAX - 1);
    assert_int_equal (s.rank[0].window_ms, 1);
    hang_sample_free (&s);
}

/* A task of the made-up step: prog with the step's environment. */
static pid_t start_task (unsigned long job, long rank, const char *prog, char *const argv[],
                         int *in)
{
    char jobv[64], rankv[32];
    char *envp[] = {jobv,
                    "SLURM_STEP_ID=3",
                    rankv,
                    "WORLD_SIZE=3",
                    "SLURMD_NODENAME=n1",
                    "SLURM_CONF=/a/slurm.conf",
                    NULL};
    int fds[2];
    pid_t pid;

    assert_int_equal (pipe (fds), 0);
    snprintf (jobv, sizeof (jobv), "SLURM_JOB_ID=%lu", job);
    snprintf (rankv, sizeof (rankv), "RANK=%ld", rank);
    pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0) {
        dup2 (fds[0], 0);
        close (fds[1]);
        execve (prog, argv, envp);
        _exit (127);
    }
    close (fds[0]);
    *in = fds[1];
    return pid;
}

/* The probe on real processes: ranks 0 and 1 read a pipe (cat), rank 2
 * sleeps; then rank 1 is stopped. */
static void test_probe_real (void **state)
{
    unsigned long job = 3000000000UL + (unsigned long) getpid ();
    char *cat[] = {"cat", NULL}, *sleep_argv[] = {"sleep", "60", NULL};
    struct hang_sample s = HANG_SAMPLE_INIT;
    char out[DOCTOR_LINE_MAX], *text = NULL, *line, *save = NULL;
    pid_t pid[3];
    int in[3];
    size_t len;
    FILE *f;

    pid[0] = start_task (job, 0, "/bin/cat", cat, &in[0]);
    pid[1] = start_task (job, 1, "/bin/cat", cat, &in[1]);
    pid[2] = start_task (job, 2, "/bin/sleep", sleep_argv, &in[2]);
    nanosleep (&(struct timespec){0, 300 * 1000 * 1000}, NULL);

    for (int round = 0; round < 2; round++) {
        if (round == 1)
            kill (pid[1], SIGSTOP);
        assert_non_null (f = open_memstream (&text, &len));
        assert_int_equal (hang_probe (f, "/proc", job, 3, 300), 0);
        fclose (f);
        print_message ("%s", text);
        for (line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
            assert_int_equal (hang_sample_parse_line (&s, line), 0);
        free (text);
        text = NULL;
        assert_int_equal (s.nranks, 3);
        assert_int_equal (verdict (&s, out, sizeof (out)), 1);
        if (round == 0) {
            assert_string_equal (s.rank[0].syscall, "read");
            assert_non_null (strstr (out, "rank 2 on "));
            assert_non_null (strstr (out, "waits in clock_nanosleep"));
        } else {
            assert_int_equal (s.rank[1].state, 'T');
            assert_non_null (strstr (out, "rank 1 on "));
            assert_non_null (strstr (out, "is stopped (SIGSTOP"));
        }
        hang_sample_free (&s);
    }
    for (int i = 0; i < 3; i++) {
        kill (pid[i], SIGKILL);
        close (in[i]);
        waitpid (pid[i], NULL, 0);
    }
}

/* hang=: the step is quiet since the latest of its nodes' idle times; a
 * node never heard from counts from the decider's start. */
static void test_watch_quiet_since (void **state)
{
    struct hang_watch_node node[3] = {{true, 5000}, {true, 2000}, {false, 0}};

    (void) state;
    assert_int_equal (hang_watch_quiet_since (node, 3, 1000), 5000);
    assert_int_equal (hang_watch_quiet_since (node, 3, 9000), 9000);
    node[2] = (struct hang_watch_node){true, 7000};
    assert_int_equal (hang_watch_quiet_since (node, 3, 9000), 7000);
    /* a node that is busy now holds the whole step */
    node[1].idle_since_ms = 12000;
    assert_int_equal (hang_watch_quiet_since (node, 3, 0), 12000);
    assert_int_equal (hang_watch_quiet_since (node, 1, 0), 5000);
    assert_int_equal (hang_watch_heartbeat_ms (10), 2500);
    assert_int_equal (hang_watch_heartbeat_ms (20), 5000);
    assert_int_equal (hang_watch_heartbeat_ms (3600), 15000);
}

/* A watcher's line passes with its key and the connection's nonce only,
 * unchanged. */
static void test_watch_lines (void **state)
{
    struct doctor_key key, other;
    struct doctor_watch m = {.node_id = 7, .seq = 3, .idle_ms = 21000, .name = "node8"}, got;
    char nonce[] = "0123456789abcdef0123456789abcdef",
         nonce2[] = "f123456789abcdef0123456789abcdef";
    char line[DOCTOR_AUTH_LINE_MAX], bad[DOCTOR_AUTH_LINE_MAX];
    int n;

    (void) state;
    memset (&key, 0x5a, sizeof (key));
    memset (&other, 0x5b, sizeof (other));
    n = doctor_watch_format (&key, nonce, &m, line, sizeof (line));
    assert_true (n > 0);
    assert_int_equal (doctor_watch_check (&key, nonce, line, (size_t) n, &got), 0);
    assert_int_equal (got.node_id, 7);
    assert_int_equal (got.seq, 3);
    assert_int_equal (got.idle_ms, 21000);
    assert_string_equal (got.name, "node8");
    assert_int_equal (doctor_watch_check (&other, nonce, line, (size_t) n, &got), -1);
    assert_int_equal (doctor_watch_check (&key, nonce2, line, (size_t) n, &got), -1);
    /* a changed idle time, node or sequence number breaks the MAC */
    for (size_t i = strlen ("watch "); i < strlen ("watch 7 3 21000"); i++) {
        if (line[i] == ' ')
            continue;
        memcpy (bad, line, (size_t) n + 1);
        bad[i] = bad[i] == '9' ? '8' : '9';
        assert_int_equal (doctor_watch_check (&key, nonce, bad, (size_t) n, &got), -1);
    }
    assert_int_equal (doctor_watch_check (&key, nonce, "watch -1 3 5 n x\n", 17, &got), -1);
    assert_int_equal (doctor_watch_check (&key, nonce, line, 10, &got), -1);
    snprintf (m.name, sizeof (m.name), "two words");
    assert_int_equal (doctor_watch_format (&key, nonce, &m, line, sizeof (line)), -1);
}

static pid_t start_child (const char *what)
{
    pid_t pid = fork ();

    if (pid == 0) {
        /* (bytes, not CPU: a unit test run at a low priority beside busy lanes may not get
         * 5% of a CPU, but writes 64 KiB to /dev/null in any window) */
        if (strcmp (what, "write") == 0) {
            static char block[1 << 20];
            int null = open ("/dev/null", O_WRONLY);
            for (;;)
                if (write (null, block, sizeof (block)) < 0)
                    _exit (1);
        }
        execl ("/bin/sleep", "sleep", "60", (char *) NULL);
        _exit (127);
    }
    return pid;
}

static bool tick_after (struct hang_sampler *sm, long ms)
{
    nanosleep (&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
    return hang_sampler_tick (sm);
}

/* The watcher's sampler on real children of this process: sleeping
 * children make no progress, a writing one does, and their ends are seen
 * through the sampler's descriptor. */
static void test_sampler_real (void **state)
{
    struct hang_sampler *sm;
    pid_t sleeper[2], spinner;
    bool progress = false;

    (void) state;
    sleeper[0] = start_child ("sleep");
    sleeper[1] = start_child ("sleep");
    nanosleep (&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    /* (three tasks expected: the tree is walked at each tick until the third comes) */
    assert_non_null (sm = hang_sampler_new (getpid (), 3));
    assert_int_equal (hang_sampler_tasks (sm), 2);
    assert_false (tick_after (sm, 300));
    assert_false (tick_after (sm, 300));
    spinner = start_child ("write");
    /* the new task is found by the tick after it starts, and counted from then */
    (void) tick_after (sm, 300);
    assert_int_equal (hang_sampler_tasks (sm), 3);
    for (int i = 0; i < 10 && !progress; i++)
        progress = tick_after (sm, 300);
    assert_true (progress);
    kill (spinner, SIGSTOP);
    (void) tick_after (sm, 100);
    assert_false (tick_after (sm, 300));
    kill (spinner, SIGKILL);
    waitpid (spinner, NULL, 0);
    assert_int_equal (hang_sampler_ended (sm), 2);
    for (int i = 0; i < 2; i++) {
        kill (sleeper[i], SIGKILL);
        waitpid (sleeper[i], NULL, 0);
    }
    assert_int_equal (hang_sampler_ended (sm), 0);
    hang_sampler_free (sm);
}

/* A process that spins on CPU cpu, at scheduling class policy. */
static pid_t start_spinner (int cpu, int policy)
{
    pid_t pid = fork ();

    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO (&one);
        CPU_SET (cpu, &one);
        if (sched_setaffinity (0, sizeof (one), &one) != 0
            || sched_setscheduler (0, policy, &(struct sched_param){0}) != 0)
            _exit (1);
        for (;;)
            ;
    }
    return pid;
}

/* A rank that wants a CPU but gets almost none (SCHED_IDLE, behind two
 * spinners on its only CPU) is slow, not hung: being runnable counts as
 * progress, though its CPU time stays far under HANG_ACTIVE_PERCENT. */
static void test_sampler_starved (void **state)
{
    struct hang_sampler *sm;
    pid_t task, starved = 0, hog[2];
    bool progress = false;
    cpu_set_t mine;
    int fd[2], cpu = 0;

    (void) state;
    assert_int_equal (sched_getaffinity (0, sizeof (mine), &mine), 0);
    while (!CPU_ISSET (cpu, &mine))
        cpu++;
    assert_int_equal (pipe (fd), 0);
    /* the sampler's task: a process whose only child is the starved rank */
    if ((task = fork ()) == 0) {
        pid_t rank = start_spinner (cpu, SCHED_IDLE);
        if (write (fd[1], &rank, sizeof (rank)) != (ssize_t) sizeof (rank))
            _exit (1);
        pause ();
        _exit (0);
    }
    assert_int_equal (read (fd[0], &starved, sizeof (starved)), (ssize_t) sizeof (starved));
    close (fd[0]);
    close (fd[1]);
    for (int i = 0; i < 2; i++)
        hog[i] = start_spinner (cpu, SCHED_OTHER);
    assert_non_null (sm = hang_sampler_new (task, 1));
    assert_int_equal (hang_sampler_tasks (sm), 1);
    for (int i = 0; i < 10 && !progress; i++)
        progress = tick_after (sm, 300);
    kill (starved, SIGKILL);
    kill (task, SIGKILL);
    waitpid (task, NULL, 0);
    for (int i = 0; i < 2; i++) {
        kill (hog[i], SIGKILL);
        waitpid (hog[i], NULL, 0);
    }
    hang_sampler_free (sm);
    assert_true (progress);
}

/* How many ranks a probe that runs as on node n1 of the cluster of conf finds. */
static size_t ranks_found (unsigned long job, const char *conf)
{
    struct hang_sample s = HANG_SAMPLE_INIT;
    char *text = NULL, *line, *save = NULL;
    size_t len, n;
    FILE *f;

    setenv ("SLURMD_NODENAME", "n1", 1);
    setenv ("SLURM_CONF", conf, 1);
    assert_non_null (f = open_memstream (&text, &len));
    assert_int_equal (hang_probe (f, "/proc", job, 3, 100), 0);
    fclose (f);
    unsetenv ("SLURMD_NODENAME");
    unsetenv ("SLURM_CONF");
    for (line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
        assert_int_equal (hang_sample_parse_line (&s, line), 0);
    free (text);
    n = s.nranks;
    hang_sample_free (&s);
    return n;
}

/* Test clusters beside each other on one machine have a node n1 each, and steps of the
 * same ids: a probe takes only its own cluster's ranks. */
static void test_probe_other_cluster (void **state)
{
    unsigned long job = 3100000000UL + (unsigned long) getpid ();
    char *sleep_argv[] = {"sleep", "60", NULL};
    pid_t pid;
    int in;

    (void) state;
    pid = start_task (job, 0, "/bin/sleep", sleep_argv, &in);
    nanosleep (&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    assert_int_equal (ranks_found (job, "/a/slurm.conf"), 1);
    assert_int_equal (ranks_found (job, "/b/slurm.conf"), 0);
    kill (pid, SIGKILL);
    close (in);
    waitpid (pid, NULL, 0);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_watch_quiet_since),
        cmocka_unit_test (test_watch_lines),
        cmocka_unit_test (test_sampler_real),
        cmocka_unit_test (test_sampler_starved),
        cmocka_unit_test (test_stopped),
        cmocka_unit_test (test_missing_rank),
        cmocka_unit_test (test_odd_wait),
        cmocka_unit_test (test_cut_node),
        cmocka_unit_test (test_cut_node_one_connection),
        cmocka_unit_test (test_held_data),
        cmocka_unit_test (test_reach),
        cmocka_unit_test (test_bad_link),
        cmocka_unit_test (test_working_rank),
        cmocka_unit_test (test_no_hang),
        cmocka_unit_test (test_busy_in_d_state),
        cmocka_unit_test (test_all_alike),
        cmocka_unit_test (test_odd_collective),
        cmocka_unit_test (test_collective_symbol),
        cmocka_unit_test (test_stack_real),
        cmocka_unit_test (test_unread),
        cmocka_unit_test (test_bad_lines),
        cmocka_unit_test (test_probe_real),
        cmocka_unit_test (test_probe_other_cluster),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
