/* shim.h - the state of libdtshim shared by its files (not installed). */
#ifndef DTSHIM_SHIM_H
#define DTSHIM_SHIM_H

#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/wire.h"

struct shim_world {
	bool initialized;
	bool pmix;          /* false: a world of one without PMIx */
	bool broken;        /* a fence timed out: its callback may still come, keys are lost */
	pmix_proc_t self;
	int rank, size, local_rank, local_size, node_rank, node_count;
	char chief_host[256];
	uint64_t seq;       /* number of the next collective, the same on every rank */
	double timeout_s;   /* 0: forever */
	bool abort_on_timeout;
	pthread_mutex_t lock; /* serializes the collectives */
};

extern struct shim_world shim_world;

/* Record the detail of a failure for dtshim_last_error(); returns status. */
int shim_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Preemption handlers (preempt.c). */
int shim_preempt_install(void);
void shim_preempt_restore(void);

/* Start a collective: check the state, take the lock, number the call (*seq). On success
 * the caller ends with shim_end(). */
int shim_begin(uint64_t *seq);
void shim_end(void);

/* Contribute size bytes of payload framed for op when contribute is true (else nothing),
 * then fence with data collection before the deadline. */
int shim_exchange(enum shim_op op, const void *payload, size_t size, bool contribute,
                  uint64_t seq);

/* Rank's contribution to collective seq, checked against op. *value keeps *payload alive:
 * release it with PMIX_VALUE_RELEASE. */
int shim_read(int rank, enum shim_op op, uint64_t seq, pmix_value_t **value,
              const uint8_t **payload, uint64_t *size);

#endif
