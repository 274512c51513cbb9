/* Unit tests for the shim's PMIx requests (shim/request.c): whoever drops the last
 * reference frees the request, a caller that gives up at its deadline leaves it to a late
 * callback, and a call that failed gives its reference back.  The callbacks run on threads
 * of their own, as PMIx's progress thread runs them; ASan reports a leak or a use after
 * free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/dtshim.h"
#include "shim/request.h"
#include "shim/shim.h"

/* What a callback saw, written under the request's lock and read after the join. */
struct late_get {
    struct shim_slot *slot;
    int delay_ms;
    bool shared; /* the caller still held the request when the callback came */
};

/* A get's callback: fills its slot when the caller still waits, then drops its reference. */
static void *get_callback (void *arg)
{
    struct late_get *g = arg;
    struct shim_request *r = g->slot->owner;

    usleep ((useconds_t) g->delay_ms * 1000);
    pthread_mutex_lock (&r->lock);
    g->shared = shim_request_shared_locked (r);
    if (g->shared) {
        g->slot->bytes = malloc (16);
        assert_non_null (g->slot->bytes);
        g->slot->len = 16;
    }
    g->slot->status = PMIX_SUCCESS;
    shim_request_release_locked (r);
    return NULL;
}

/* One get whose callback comes after delay_ms, awaited for timeout_s (0: forever). Returns
 * what the wait returned; *shared says whether the callback found the caller there. */
static int one_get (int delay_ms, double timeout_s, bool *shared)
{
    struct shim_request *r = shim_request_new (1);
    struct late_get g = {.delay_ms = delay_ms};
    pthread_t t;
    int rv;

    assert_non_null (r);
    g.slot = &r->slots[0];
    shim_world.timeout_s = timeout_s;
    shim_begin_deadline ();
    shim_request_retain (r);
    assert_int_equal (pthread_create (&t, NULL, get_callback, &g), 0);
    rv = shim_request_wait (r, 1, "get");
    if (rv == DTSHIM_OK) {
        assert_int_equal (r->slots[0].status, PMIX_SUCCESS);
        assert_int_equal (r->slots[0].len, 16);
    }
    shim_request_release (r);
    assert_int_equal (pthread_join (t, NULL), 0);
    *shared = g.shared;
    return rv;
}

static void test_callback_in_time (void **state)
{
    bool shared;

    (void) state;
    shim_world.broken = false;
    assert_int_equal (one_get (10, 5.0, &shared), DTSHIM_OK);
    assert_true (shared);
    assert_false (shim_world.broken);
}

static void test_no_deadline_waits (void **state)
{
    bool shared;

    (void) state;
    shim_world.broken = false;
    assert_int_equal (one_get (50, 0, &shared), DTSHIM_OK);
    assert_true (shared);
}

/* The caller gives up first: the step is broken, and the late callback, alone with the
 * request, copies nothing and frees it (ASan's leak check sees it freed). */
static void test_late_callback_frees (void **state)
{
    bool shared;

    (void) state;
    shim_world.broken = false;
    assert_int_equal (one_get (300, 0.05, &shared), DTSHIM_ERR_TIMEOUT);
    assert_false (shared);
    assert_true (shim_world.broken);
    assert_non_null (strstr (dtshim_last_error (), "get"));
}

/* A PMIx call that failed has no callback to come: its reference is given back at once,
 * the wait does not block, and the caller's release frees the slots' bytes. */
static void test_failed_call_gives_back (void **state)
{
    struct shim_request *r = shim_request_new (2);

    (void) state;
    assert_non_null (r);
    shim_world.broken = false;
    shim_world.timeout_s = 5.0;
    shim_begin_deadline ();
    shim_request_retain (r);
    shim_request_release (r);
    assert_int_equal (shim_request_wait (r, 1, "get"), DTSHIM_OK);
    r->slots[1].bytes = malloc (3);
    assert_non_null (r->slots[1].bytes);
    shim_request_release (r);
    assert_false (shim_world.broken);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_callback_in_time),
        cmocka_unit_test (test_no_deadline_waits),
        cmocka_unit_test (test_late_callback_frees),
        cmocka_unit_test (test_failed_call_gives_back),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
