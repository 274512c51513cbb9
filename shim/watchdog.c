/* watchdog.c - end the step when this rank stops making progress.
 *
 * A wedged collective never returns and never fails: the step would hold
 * its nodes until the time limit.  With DIST_TRAIN_WATCHDOG=SECONDS (or
 * --dist-train=watchdog=SECONDS), dtshim_init() starts a thread that ends
 * the step when dtshim_progress() has not been called for that long.  The
 * clock starts at dtshim_init(); a stall anywhere stops every rank's
 * progress, so every rank's watchdog fires, and PMIx_Abort or PMI-2's abort
 * (or, without either, exit status 124 and the plugin's fail-fast) ends the
 * rest.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

#define WATCHDOG_EXIT 124 /* like timeout(1) */

static struct {
    pthread_t thread;
    bool running;
    bool stopping;
    bool clock_set; /* wake waits on CLOCK_MONOTONIC */
    double limit_s;
    _Atomic int64_t last_ns; /* CLOCK_MONOTONIC of the last progress */
    pthread_mutex_t lock;
    pthread_cond_t wake;
} wd = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static int64_t now_ns (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int dtshim_progress (void)
{
    if (!shim_world.initialized)
        return DTSHIM_ERR_NOT_INITIALIZED;
    atomic_store_explicit (&wd.last_ns, now_ns (), memory_order_relaxed);
    return DTSHIM_OK;
}

/* How long PMIx_Abort may take before the watchdog exits anyway. */
#define ABORT_DEADLINE_S 10

static void *exit_later (void *arg)
{
    struct timespec left = {ABORT_DEADLINE_S, 0};

    (void) arg;
    while (nanosleep (&left, &left) != 0 && errno == EINTR)
        ;
    _exit (WATCHDOG_EXIT);
}

/* Nothing here may wait for what the wedged threads hold: the message goes out with
 * write(2), not stdio (its stderr lock may be held by a stuck thread), and PMIx_Abort,
 * which waits for the server, gets ABORT_DEADLINE_S before the process exits anyway. */
static void fire (double idle_s)
{
    char msg[256];
    pthread_attr_t attr;
    pthread_t t;
    int n;

    n = snprintf (msg, sizeof (msg) - 1,
                  "dtshim: rank %d made no progress for %.1f s "
                  "(DIST_TRAIN_WATCHDOG=%g): ending the step",
                  shim_world.rank, idle_s, wd.limit_s);
    if (n < 0)
        n = 0;
    if ((size_t) n > sizeof (msg) - 2)
        n = (int) sizeof (msg) - 2;
    msg[n] = '\n';
    (void) !write (STDERR_FILENO, msg, (size_t) n + 1);
    msg[n] = '\0';
    if (shim_world.transport != NULL) {
        pthread_attr_init (&attr);
        pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create (&t, &attr, exit_later, NULL) == 0)
            shim_world.transport->abort (WATCHDOG_EXIT, msg);
        pthread_attr_destroy (&attr);
    }
    _exit (WATCHDOG_EXIT);
}

static void *watch (void *arg)
{
    /* look often enough to fire within a quarter of the limit, at most each second */
    double period = fmin (1.0, wd.limit_s / 4);
    struct timespec until;

    (void) arg;
    pthread_mutex_lock (&wd.lock);
    while (!wd.stopping) {
        int64_t idle = now_ns () - atomic_load_explicit (&wd.last_ns, memory_order_relaxed);
        if ((double) idle / 1e9 > wd.limit_s) {
            pthread_mutex_unlock (&wd.lock);
            fire ((double) idle / 1e9);
        }
        clock_gettime (CLOCK_MONOTONIC, &until); /* wd.wake waits on CLOCK_MONOTONIC */
        until.tv_sec += (time_t) period;
        until.tv_nsec += (long) ((period - floor (period)) * 1e9);
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        (void) pthread_cond_timedwait (&wd.wake, &wd.lock, &until);
    }
    pthread_mutex_unlock (&wd.lock);
    return NULL;
}

int shim_watchdog_start (void)
{
    const char *text = getenv ("DIST_TRAIN_WATCHDOG");
    char *end;
    double limit;
    int rc;

    if (text == NULL || text[0] == '\0')
        return DTSHIM_OK;
    errno = 0;
    limit = strtod (text, &end);
    if (errno != 0 || *end != '\0' || !(limit >= 0) || limit > 1e7)
        return shim_fail (DTSHIM_ERR_INVALID,
                          "DIST_TRAIN_WATCHDOG=%.32s: want seconds "
                          "without progress (0 = off)",
                          text);
    if (limit == 0)
        return DTSHIM_OK;
    wd.limit_s = limit;
    wd.stopping = false;
    /* A wait on the monotonic clock: a step of the wall clock neither delays nor hurries
     * the watchdog. */
    if (!wd.clock_set) {
        pthread_condattr_t attr;
        pthread_condattr_init (&attr);
        pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
        pthread_cond_destroy (&wd.wake);
        pthread_cond_init (&wd.wake, &attr);
        pthread_condattr_destroy (&attr);
        wd.clock_set = true;
    }
    atomic_store (&wd.last_ns, now_ns ());
    rc = pthread_create (&wd.thread, NULL, watch, NULL);
    if (rc != 0)
        return shim_fail (DTSHIM_ERR_NO_MEMORY, "cannot start the watchdog thread: %s",
                          strerror (rc));
    wd.running = true;
    return DTSHIM_OK;
}

void shim_watchdog_stop (void)
{
    if (!wd.running)
        return;
    pthread_mutex_lock (&wd.lock);
    wd.stopping = true;
    pthread_cond_signal (&wd.wake);
    pthread_mutex_unlock (&wd.lock);
    pthread_join (wd.thread, NULL);
    wd.running = false;
}

double dtshim_watchdog_limit (void)
{
    return wd.running ? wd.limit_s : 0;
}
