/* pmi2.h - what pmi2kvs.c, the PMI-2 transport, asks of the connection in pmi2.c (not
 * installed). */
#ifndef DTSHIM_PMI2_H
#define DTSHIM_PMI2_H

#include <stddef.h>
#include <stdint.h>

/* Requests in flight at once: the server reads a task's requests one after the other and
 * answers each in order, so a window of them saves a round trip each (a value's answer is
 * about 1.1 KB: 32 of them stay well inside a socket's buffer, and the server never waits
 * to write one while the shim still writes). */
#define SHIM_PMI2_WINDOW 32

/* Request i of a pipeline: the key of a kvs-put or kvs-get, and for a put its value. */
typedef int (*shim_pmi2_request_fn) (size_t i, const char **key, const char **value, void *arg);
/* The answer to request i, read and checked (rc=0): shim_pmi2_found_value() has it. */
typedef int (*shim_pmi2_answer_fn) (size_t i, void *arg);

/* n puts or gets (cmd "kvs-put" or "kvs-get"), SHIM_PMI2_WINDOW at a time, before the
 * collective's deadline. After a refused request or answer, every answer still due is
 * read, so that the socket stays in step, and the first failure returned. */
int shim_pmi2_pipeline (const char *cmd, size_t n, shim_pmi2_request_fn request,
                        shim_pmi2_answer_fn answer, void *arg, uint64_t seq);

/* The value of a found key in the last answer: *value (NUL-terminated in place, valid
 * until the next request), or NULL when the server has none. */
int shim_pmi2_found_value (const char *cmd, char **value);

/* One get or put, answered; a fence. */
int shim_pmi2_get (const char *key, uint64_t seq, char **value);
int shim_pmi2_put (const char *key, const char *value, uint64_t seq);
int shim_pmi2_fence (uint64_t seq);

/* The transport's connect (the facts of shim_world from fullinit, PMI_process_mapping and
 * SLURM_STEP_NODELIST), disconnect (finalize, but not after a timeout) and abort (no answer
 * comes: Slurm cancels the step). */
int shim_pmi2_connect (void);
int shim_pmi2_disconnect (void);
int shim_pmi2_abort (int status, const char *msg);
/* The host of the chief, the task of rank on node chief_node, into shim_world.chief_host. */
int shim_pmi2_name_chief (int rank, int chief_node);

#endif
