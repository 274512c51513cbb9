/* Unit tests for libdtshim in a world of one (no PMIx server): settings, argument checks,
 * the v forms' buffers, and the signal handling with its chaining and SIGTERM semantics. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/dtshim.h"

/* What the resolver answers for rank 0's host while fake_resolve() has set a list: the
 * shim's getaddrinfo and freeaddrinfo are wrapped (-Wl,--wrap in shim/local.mk). */
static struct {
    bool on;
    struct addrinfo ai[4];
    struct sockaddr_storage ss[4];
} fake;

int __real_getaddrinfo (const char *node, const char *service, const struct addrinfo *hints,
                        struct addrinfo **res);
void __real_freeaddrinfo (struct addrinfo *res);
int __wrap_getaddrinfo (const char *node, const char *service, const struct addrinfo *hints,
                        struct addrinfo **res);
void __wrap_freeaddrinfo (struct addrinfo *res);

int __wrap_getaddrinfo (const char *node, const char *service, const struct addrinfo *hints,
                        struct addrinfo **res)
{
    if (!fake.on)
        return __real_getaddrinfo (node, service, hints, res);
    *res = &fake.ai[0];
    return 0;
}

void __wrap_freeaddrinfo (struct addrinfo *res)
{
    if (res != &fake.ai[0])
        __real_freeaddrinfo (res);
}

/* Numeric addresses (at most 4, NULL-terminated) as getaddrinfo's list; NULL: the real one. */
static void fake_resolve (const char **addrs)
{
    size_t n = 0;

    memset (&fake, 0, sizeof (fake));
    for (; addrs != NULL && addrs[n] != NULL; n++) {
        struct sockaddr_in *in = (struct sockaddr_in *) &fake.ss[n];
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &fake.ss[n];

        assert_true (n < 4);
        if (inet_pton (AF_INET, addrs[n], &in->sin_addr) == 1) {
            in->sin_family = fake.ai[n].ai_family = AF_INET;
            fake.ai[n].ai_addrlen = sizeof (*in);
        } else {
            assert_int_equal (inet_pton (AF_INET6, addrs[n], &in6->sin6_addr), 1);
            in6->sin6_family = fake.ai[n].ai_family = AF_INET6;
            fake.ai[n].ai_addrlen = sizeof (*in6);
        }
        fake.ai[n].ai_socktype = SOCK_STREAM;
        fake.ai[n].ai_addr = (struct sockaddr *) &fake.ss[n];
        if (n > 0)
            fake.ai[n - 1].ai_next = &fake.ai[n];
    }
    fake.on = n > 0;
}

static int setup (void **state)
{
    unsetenv ("PMIX_NAMESPACE");
    unsetenv ("PMI_FD");
    unsetenv ("PMI_RANK");
    unsetenv ("PMI_JOBID");
    unsetenv ("SLURM_STEP_NUM_TASKS");
    unsetenv ("DTSHIM_TIMEOUT");
    unsetenv ("DTSHIM_PREEMPT_SIGNAL");
    unsetenv ("DIST_TRAIN_WATCHDOG");
    unsetenv ("MASTER_ADDR");
    unsetenv ("DIST_TRAIN_RANK_ORDER");
    unsetenv ("RANK");
    unsetenv ("GROUP_RANK");
    fake_resolve (NULL);
    return 0;
}

static int teardown (void **state)
{
    dtshim_finalize ();
    return setup (state);
}

static void watchdog_settings (void **state)
{
    assert_int_equal (dtshim_progress (), DTSHIM_ERR_NOT_INITIALIZED);
    setenv ("DIST_TRAIN_WATCHDOG", "ten", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_INVALID);
    assert_non_null (strstr (dtshim_last_error (), "DIST_TRAIN_WATCHDOG=ten"));
    setenv ("DIST_TRAIN_WATCHDOG", "-1", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_INVALID);
    setenv ("DIST_TRAIN_WATCHDOG", "0", 1);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_true (dtshim_watchdog_limit () == 0);
    assert_int_equal (dtshim_progress (), DTSHIM_OK);
    assert_int_equal (dtshim_finalize (), DTSHIM_OK);
    setenv ("DIST_TRAIN_WATCHDOG", "600", 1);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_true (dtshim_watchdog_limit () == 600);
    /* finalize stops the thread at once, not after a period */
    assert_int_equal (dtshim_finalize (), DTSHIM_OK);
}

/* In a child: a 2 s watchdog, with progress every 0.1 s for `busy` seconds, then none.
 * (2 s, not less: beside busy lanes a child can wait most of a second for a CPU, and
 * that is no missing progress) */
static int run_watched (double busy, double idle)
{
    pid_t pid = fork ();
    int status;

    assert_true (pid >= 0);
    if (pid == 0) {
        struct timespec tick = {0, 100000000};
        double t;
        setenv ("DIST_TRAIN_WATCHDOG", "2", 1);
        if (dtshim_init () != DTSHIM_OK)
            _exit (3);
        for (t = 0; t < busy; t += 0.1) {
            dtshim_progress ();
            nanosleep (&tick, NULL);
        }
        for (t = 0; t < idle; t += 0.1)
            nanosleep (&tick, NULL);
        dtshim_finalize ();
        _exit (0);
    }
    assert_int_equal (waitpid (pid, &status, 0), pid);
    assert_true (WIFEXITED (status));
    return WEXITSTATUS (status);
}

static void watchdog_fires_without_progress (void **state)
{
    /* progress keeps it quiet well past the limit */
    assert_int_equal (run_watched (4, 0), 0);
    /* then 6 s without: it ends the process with 124 (like timeout(1)) */
    assert_int_equal (run_watched (0.5, 6), 124);
}

/* A thread wedged inside stdio with stderr locked must not keep the watchdog from ending
 * the process: the watchdog once wrote its message with fprintf, which waited for that lock
 * for ever; shim/watchdog.c now writes it with write(2). */
static void watchdog_fires_with_stderr_locked (void **state)
{
    pid_t pid = fork ();
    int status;

    assert_true (pid >= 0);
    if (pid == 0) {
        struct timespec tick = {0, 100000000};
        setenv ("DIST_TRAIN_WATCHDOG", "2", 1);
        if (dtshim_init () != DTSHIM_OK)
            _exit (3);
        flockfile (stderr);
        for (int i = 0; i < 50; i++) /* 5 s, then give up: the watchdog did not fire */
            nanosleep (&tick, NULL);
        _exit (0);
    }
    assert_int_equal (waitpid (pid, &status, 0), pid);
    assert_true (WIFEXITED (status));
    assert_int_equal (WEXITSTATUS (status), 124);
}

static void facts_before_init_are_minus_one (void **state)
{
    assert_int_equal (dtshim_rank (), -1);
    assert_int_equal (dtshim_size (), -1);
    assert_null (dtshim_chief_host ());
    assert_int_equal (dtshim_barrier (), DTSHIM_ERR_NOT_INITIALIZED);
    assert_int_equal (dtshim_should_preempt (), DTSHIM_ERR_NOT_INITIALIZED);
}

static void world_of_one (void **state)
{
    char addr[64];

    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_has_pmix (), 0);
    assert_int_equal (dtshim_rank (), 0);
    assert_int_equal (dtshim_size (), 1);
    assert_int_equal (dtshim_node_count (), 1);
    assert_int_equal (dtshim_chief_addr (addr, sizeof (addr)), DTSHIM_OK);
    assert_int_equal (dtshim_chief_addr (addr, 2), DTSHIM_ERR_INVALID);
    assert_int_equal (dtshim_barrier (), DTSHIM_OK);
}

/* The SPANK plugin's policy: a link-local address is never rank 0's, since the other nodes
 * cannot reach it; without another one, MASTER_ADDR, then loopback in a world of one. */
static void chief_addr_is_never_link_local (void **state)
{
    char addr[64];

    assert_int_equal (dtshim_init (), DTSHIM_OK);
    fake_resolve ((const char *[]){"fe80::1", "::1", "127.0.1.1", NULL});
    setenv ("MASTER_ADDR", "10.1.2.3", 1);
    assert_int_equal (dtshim_chief_addr (addr, sizeof (addr)), DTSHIM_OK);
    assert_string_equal (addr, "10.1.2.3");
    unsetenv ("MASTER_ADDR");
    assert_int_equal (dtshim_chief_addr (addr, sizeof (addr)), DTSHIM_OK);
    assert_string_equal (addr, "127.0.0.1");
    fake_resolve ((const char *[]){"fe80::1", "2001:db8::5", "::ffff:127.0.0.1", NULL});
    assert_int_equal (dtshim_chief_addr (addr, sizeof (addr)), DTSHIM_OK);
    assert_string_equal (addr, "2001:db8::5");
    fake_resolve ((const char *[]){"2001:db8::5", "192.0.2.7", NULL});
    assert_int_equal (dtshim_chief_addr (addr, sizeof (addr)), DTSHIM_OK);
    assert_string_equal (addr, "192.0.2.7");
    assert_int_equal (dtshim_chief_addr (addr, 9), DTSHIM_ERR_INVALID);
}

static void several_tasks_without_pmix_is_an_error (void **state)
{
    setenv ("SLURM_STEP_NUM_TASKS", "4", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_NO_PMIX);
    assert_non_null (strstr (dtshim_strerror (DTSHIM_ERR_NO_PMIX), "srun --mpi=pmix"));
    assert_non_null (strstr (dtshim_strerror (DTSHIM_ERR_NO_PMIX), "srun --mpi=pmi2"));
    assert_non_null (strstr (dtshim_strerror (DTSHIM_ERR_NO_PMIX), "MpiDefault=pmix"));
    assert_non_null (strstr (dtshim_last_error (), "4 tasks"));
    setenv ("SLURM_STEP_NUM_TASKS", "1", 1);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
}

/* The plugin's order in a world of one: RANK must be 0 (the only rank), checked as in a
 * step, with the same error; an order the shim does not know is refused. */
static void rank_order_in_a_world_of_one (void **state)
{
    setenv ("DIST_TRAIN_RANK_ORDER", "topology", 1);
    setenv ("RANK", "0", 1);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_rank (), 0);
    assert_int_equal (dtshim_node_rank (), 0);
    assert_int_equal (dtshim_finalize (), DTSHIM_OK);
    setenv ("RANK", "1", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_RANK_ORDER);
    assert_string_equal (dtshim_last_error (),
                         "task 0 (SLURM_PROCID) has a RANK that is not a number in 0..0");
    assert_non_null (
        strstr (dtshim_strerror (DTSHIM_ERR_RANK_ORDER), "srun --dist-train=rank_order=topology"));
    assert_int_equal (dtshim_rank (), -1);
    unsetenv ("RANK");
    assert_int_equal (dtshim_init (), DTSHIM_ERR_RANK_ORDER);
    assert_string_equal (dtshim_last_error (), "task 0 (SLURM_PROCID) has no RANK");
    setenv ("RANK", "0", 1);
    setenv ("GROUP_RANK", "0x0", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_RANK_ORDER);
    unsetenv ("GROUP_RANK");
    setenv ("DIST_TRAIN_RANK_ORDER", "block", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_INVALID);
    assert_non_null (strstr (dtshim_last_error (), "DIST_TRAIN_RANK_ORDER=block"));
    setenv ("DIST_TRAIN_RANK_ORDER", "", 1);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
}

static double now_s (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A PMI-2 socket whose other end is ours: the shim must give up on it in time, and say so. */
static void pmi2_server_that_never_answers (void **state)
{
    char fd_text[16], hello[64] = "";
    int sv[2];
    double t0;

    assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    snprintf (fd_text, sizeof (fd_text), "%d", sv[0]);
    setenv ("PMI_FD", fd_text, 1);
    setenv ("PMI_RANK", "0", 1);
    setenv ("PMI_JOBID", "12.0", 1);
    setenv ("DTSHIM_TIMEOUT", "0.3", 1);
    t0 = now_s ();
    assert_int_equal (dtshim_init (), DTSHIM_ERR_PMIX);
    assert_true (now_s () - t0 < 2.0);
    assert_non_null (strstr (dtshim_last_error (), "did not answer within 0.3 s"));
    assert_int_equal (dtshim_rank (), -1);
    /* It asked for PMI-2, as MPICH's clients do, and closed its end when it gave up. */
    assert_true (read (sv[1], hello, sizeof (hello) - 1) > 0);
    assert_string_equal (hello, "cmd=init pmi_version=2 pmi_subversion=0\n");
    assert_int_equal (read (sv[1], hello, sizeof (hello)), 0);
    close (sv[1]);
}

static void pmi2_server_gone_or_bad_settings (void **state)
{
    char fd_text[16];
    int sv[2];

    setenv ("PMI_FD", "x", 1);
    setenv ("PMI_RANK", "0", 1);
    setenv ("PMI_JOBID", "12.0", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_PMIX);
    assert_non_null (strstr (dtshim_last_error (), "PMI_FD=x"));
    assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    close (sv[1]);
    snprintf (fd_text, sizeof (fd_text), "%d", sv[0]);
    setenv ("PMI_FD", fd_text, 1);
    setenv ("PMI_JOBID", "12;cmd=abort", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_PMIX);
    assert_non_null (strstr (dtshim_last_error (), "PMI_JOBID"));
    setenv ("PMI_JOBID", "12.0", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_PMIX);
    assert_non_null (strstr (dtshim_last_error (), "PMI-2: "));
    assert_null (dtshim_backend ());
}

static void bad_settings_are_errors (void **state)
{
    setenv ("DTSHIM_TIMEOUT", "soon", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_INVALID);
    assert_non_null (strstr (dtshim_last_error (), "DTSHIM_TIMEOUT=soon"));
    setenv ("DTSHIM_TIMEOUT", "2.5", 1);
    setenv ("DTSHIM_PREEMPT_SIGNAL", "KILL", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_SIGNAL);
    setenv ("DTSHIM_PREEMPT_SIGNAL", "USR1", 1);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_true (dtshim_get_timeout () == 2.5);
    assert_int_equal (dtshim_set_timeout (-1), DTSHIM_ERR_INVALID);
    assert_int_equal (dtshim_set_timeout (1e19), DTSHIM_ERR_INVALID);
    assert_true (dtshim_get_timeout () == 2.5);
    setenv ("DTSHIM_TIMEOUT", "1e19", 1);
    dtshim_finalize ();
    assert_int_equal (dtshim_init (), DTSHIM_ERR_INVALID);
    setenv ("DTSHIM_TIMEOUT", "2.5", 1);
    setenv ("DTSHIM_PREEMPT_SIGNAL", "SEGV", 1);
    assert_int_equal (dtshim_init (), DTSHIM_ERR_SIGNAL);
    setenv ("DTSHIM_PREEMPT_SIGNAL", "14", 1); /* SIGALRM */
    assert_int_equal (dtshim_init (), DTSHIM_ERR_SIGNAL);
    setenv ("DTSHIM_PREEMPT_SIGNAL", "USR1", 1);
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_set_preempt_signal (SIGSEGV), DTSHIM_ERR_INVALID);
    assert_int_equal (dtshim_set_preempt_signal (SIGCHLD), DTSHIM_ERR_INVALID);
    assert_int_equal (dtshim_set_preempt_signal (SIGCONT), DTSHIM_ERR_INVALID);
}

static void collectives_copy_in_a_world_of_one (void **state)
{
    uint8_t in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
    size_t sizes[1] = {99}, n = 0;
    void *v = NULL;

    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_broadcast (in, sizeof (in), 0), DTSHIM_OK);
    assert_int_equal (dtshim_broadcast (in, sizeof (in), 1), DTSHIM_ERR_INVALID);
    assert_int_equal (dtshim_broadcast (NULL, 3, 0), DTSHIM_ERR_INVALID);
    assert_int_equal (dtshim_allgather (in, sizeof (in), out), DTSHIM_OK);
    assert_memory_equal (in, out, sizeof (in));
    memset (out, 0, sizeof (out));
    assert_int_equal (dtshim_gather (in, sizeof (in), out, 0), DTSHIM_OK);
    assert_memory_equal (in, out, sizeof (in));
    assert_int_equal (dtshim_allgatherv (in, 3, &v, sizes), DTSHIM_OK);
    assert_int_equal (sizes[0], 3);
    assert_memory_equal (v, in, 3);
    dtshim_free (v);
    assert_int_equal (dtshim_gatherv (in, 0, &v, sizes, 0), DTSHIM_OK);
    assert_int_equal (sizes[0], 0);
    dtshim_free (v);
    assert_int_equal (dtshim_broadcastv (in, 4, &v, &n, 0), DTSHIM_OK);
    assert_int_equal (n, 4);
    assert_memory_equal (v, in, 4);
    dtshim_free (v);
    assert_int_equal (dtshim_allgather (NULL, 0, NULL), DTSHIM_OK);
    assert_int_equal (dtshim_share_unique_id (in, sizeof (in), 1), DTSHIM_OK);
    assert_int_equal (dtshim_share_unique_id (in, sizeof (in), 0), DTSHIM_ERR_NO_ID);
}

static volatile sig_atomic_t program_saw;

static void program_handler (int sig)
{
    program_saw = sig;
}

static void preemption_signal_is_recorded_and_chained (void **state)
{
    struct sigaction sa, now;

    memset (&sa, 0, sizeof (sa));
    sa.sa_handler = program_handler;
    sigaction (SIGUSR2, &sa, NULL);
    program_saw = 0;
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_preempt_requested (), 0);
    assert_int_equal (dtshim_should_preempt (), 0);
    raise (SIGUSR2);
    assert_int_equal (dtshim_preempt_requested (), 1);
    assert_int_equal (program_saw, SIGUSR2);
    assert_int_equal (dtshim_should_preempt (), 1);
    assert_int_equal (dtshim_should_preempt (), 1); /* it stays */
    assert_int_equal (dtshim_finalize (), DTSHIM_OK);
    /* finalize gives the program its handler back */
    sigaction (SIGUSR2, NULL, &now);
    assert_ptr_equal (now.sa_handler, program_handler);
    signal (SIGUSR2, SIG_DFL);
}

static void first_sigterm_is_recorded_only (void **state)
{
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    raise (SIGTERM); /* with SIG_DFL before init, a second one would end this test */
    assert_int_equal (dtshim_preempt_requested (), 1);
    assert_int_equal (dtshim_should_preempt (), 1);
}

static void preempt_signal_can_change (void **state)
{
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_set_preempt_signal (SIGTERM), DTSHIM_ERR_INVALID);
    assert_int_equal (dtshim_set_preempt_signal (SIGUSR1), DTSHIM_OK);
    raise (SIGUSR1);
    assert_int_equal (dtshim_should_preempt (), 1);
    assert_int_equal (dtshim_set_preempt_signal (0), DTSHIM_OK);
}

static void request_preempt_by_hand (void **state)
{
    assert_int_equal (dtshim_init (), DTSHIM_OK);
    assert_int_equal (dtshim_should_preempt (), 0);
    dtshim_request_preempt ();
    assert_int_equal (dtshim_should_preempt (), 1);
}

static void every_status_has_a_message (void **state)
{
    for (int rc = DTSHIM_OK; rc >= DTSHIM_ERR_RANK_ORDER; rc--)
        assert_string_not_equal (dtshim_strerror (rc), "unknown dtshim status");
    assert_string_equal (dtshim_strerror (-100), "unknown dtshim status");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (facts_before_init_are_minus_one, setup, teardown),
        cmocka_unit_test_setup_teardown (world_of_one, setup, teardown),
        cmocka_unit_test_setup_teardown (chief_addr_is_never_link_local, setup, teardown),
        cmocka_unit_test_setup_teardown (several_tasks_without_pmix_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown (rank_order_in_a_world_of_one, setup, teardown),
        cmocka_unit_test_setup_teardown (bad_settings_are_errors, setup, teardown),
        cmocka_unit_test_setup_teardown (pmi2_server_that_never_answers, setup, teardown),
        cmocka_unit_test_setup_teardown (pmi2_server_gone_or_bad_settings, setup, teardown),
        cmocka_unit_test_setup_teardown (collectives_copy_in_a_world_of_one, setup, teardown),
        cmocka_unit_test_setup_teardown (preemption_signal_is_recorded_and_chained, setup,
                                         teardown),
        cmocka_unit_test_setup_teardown (first_sigterm_is_recorded_only, setup, teardown),
        cmocka_unit_test_setup_teardown (preempt_signal_can_change, setup, teardown),
        cmocka_unit_test_setup_teardown (request_preempt_by_hand, setup, teardown),
        cmocka_unit_test (every_status_has_a_message),
        cmocka_unit_test_setup_teardown (watchdog_settings, setup, teardown),
        cmocka_unit_test_setup_teardown (watchdog_fires_without_progress, setup, teardown),
        cmocka_unit_test_setup_teardown (watchdog_fires_with_stderr_locked, setup, teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
