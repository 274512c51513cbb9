/* request.c - the life of a PMIx request in flight, shared by its caller and its callbacks
 * through a reference count (request.h). */
#include "shim/request.h"

#include <errno.h>
#include <stdlib.h>

#include "shim/dtshim.h"
#include "shim/shim.h"

struct shim_request *shim_request_new (size_t n)
{
    struct shim_request *r = calloc (1, sizeof (*r) + n * sizeof (r->slots[0]));
    pthread_condattr_t attr;

    if (r == NULL)
        return NULL;
    pthread_mutex_init (&r->lock, NULL);
    pthread_condattr_init (&attr);
    pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
    pthread_cond_init (&r->done_cond, &attr);
    pthread_condattr_destroy (&attr);
    r->refs = 1;
    r->n = n;
    for (size_t i = 0; i < n; i++)
        r->slots[i].owner = r;
    return r;
}

static void request_free (struct shim_request *r)
{
    for (size_t i = 0; i < r->n; i++)
        free (r->slots[i].bytes);
    if (r->info != NULL)
        PMIX_INFO_FREE (r->info, r->ninfo);
    pthread_cond_destroy (&r->done_cond);
    pthread_mutex_destroy (&r->lock);
    free (r);
}

void shim_request_retain (struct shim_request *r)
{
    pthread_mutex_lock (&r->lock);
    r->refs++;
    pthread_mutex_unlock (&r->lock);
}

void shim_request_release_locked (struct shim_request *r)
{
    bool last = --r->refs == 0;

    pthread_cond_signal (&r->done_cond);
    pthread_mutex_unlock (&r->lock);
    if (last)
        request_free (r);
}

void shim_request_release (struct shim_request *r)
{
    pthread_mutex_lock (&r->lock);
    shim_request_release_locked (r);
}

bool shim_request_shared_locked (const struct shim_request *r)
{
    return r->refs > 1;
}

int shim_request_wait (struct shim_request *r, uint64_t seq, const char *what)
{
    int rc = 0;
    bool done;

    /* Every callback has come when only the caller's reference is left. */
    pthread_mutex_lock (&r->lock);
    while (r->refs > 1 && rc != ETIMEDOUT) {
        if (shim_world.timeout_s > 0)
            rc = pthread_cond_timedwait (&r->done_cond, &r->lock, &shim_world.deadline);
        else
            pthread_cond_wait (&r->done_cond, &r->lock);
    }
    done = r->refs == 1;
    pthread_mutex_unlock (&r->lock);
    return done ? DTSHIM_OK : shim_timed_out (seq, what);
}
