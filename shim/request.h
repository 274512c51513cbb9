/* request.h - PMIx requests in flight, shared by their caller and their callbacks (not
 * installed).
 *
 * A request is counted by reference, as openpmix counts its own: the caller holds one
 * reference while it waits, each PMIx callback still to come holds one, and whoever drops
 * the last frees the request. A caller that gives up at its deadline drops its reference
 * and leaves the request to the callbacks. */
#ifndef DTSHIM_REQUEST_H
#define DTSHIM_REQUEST_H

#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One get of a request: its key and what its callback brought.
 *
 * PMIx_Get_nb keeps the key and info pointers it is given, not copies, until its callback:
 * PMIx 5 sends a get it cannot answer from its cache to the server later, from its progress
 * thread, and answers every get of a rank in flight from that one reply by looking up each
 * get's key then. So each get's key lives in its slot, and the directives in the request,
 * as long as the callbacks can come (one key buffer reused for several gets in flight made
 * them all read the last key: "chunk 1 has 24 bytes"). */
struct shim_request;
struct shim_slot {
    struct shim_request *owner;
    char key[PMIX_MAX_KEYLEN + 1];
    pmix_status_t status;
    uint8_t *bytes; /* malloc'd, freed with the request */
    size_t len;
    uint64_t u64;
};

struct shim_request {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int refs; /* the caller's while it holds one, and one per callback to come */
    bool want_u64; /* the gets look for a PMIX_UINT64, not a chunk */
    pmix_status_t status; /* of the fence */
    pmix_info_t *info; /* the gets' directives, or NULL */
    size_t ninfo;
    size_t n;
    struct shim_slot slots[];
};

/* A request of n slots that holds the caller's reference; NULL when out of memory. */
struct shim_request *shim_request_new (size_t n);

/* One more reference, for the callback of a PMIx call about to be made. */
void shim_request_retain (struct shim_request *r);

/* Drop one reference: the caller's when it is done with r, or a callback's that will never
 * come because its call failed. The last one frees r, its slots' bytes and its info. */
void shim_request_release (struct shim_request *r);

/* The same from a callback, which holds r->lock: wakes the waiting caller, unlocks r->lock,
 * and frees r when this was the last reference. */
void shim_request_release_locked (struct shim_request *r);

/* Whether anyone but the callback that holds r->lock still holds r. The shim has one call in
 * flight per request at a time, so false means the caller gave up at its deadline and reads
 * nothing the callback would leave. */
bool shim_request_shared_locked (const struct shim_request *r);

/* Wait until every callback has come, up to the collective's deadline. DTSHIM_OK, or
 * DTSHIM_ERR_TIMEOUT from shim_timed_out(seq, what), which leaves the step broken; either
 * way the caller still holds its reference and releases it. */
int shim_request_wait (struct shim_request *r, uint64_t seq, const char *what);

#endif
