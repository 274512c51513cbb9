/* wire.h - what the shim puts into PMIx and reads back, as pure functions: key names, the
 * frame around every contribution, the preemption vote, and the parsing of its settings. */
#ifndef DTSHIM_WIRE_H
#define DTSHIM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <pmix_common.h>

/* Every contribution is a frame: a 16-byte header, then the payload. The header names the
 * collective, so ranks that call different collectives at the same step find out, and
 * carries the payload's size, so a 0-byte contribution is still a non-empty PMIx value. */
#define SHIM_FRAME_HEADER 16

enum shim_op {
	SHIM_OP_BROADCAST = 1,
	SHIM_OP_ALLGATHER = 2,
	SHIM_OP_ALLGATHERV = 3,
	SHIM_OP_GATHER = 4,
	SHIM_OP_GATHERV = 5,
	SHIM_OP_PREEMPT = 6,
	SHIM_OP_UNIQUE_ID = 7,
	SHIM_OP_BROADCASTV = 8,
};

/* The PMIx key of the collective numbered seq: "dtshim.<seq>". */
int shim_key(char *buf, size_t len, uint64_t seq);

/* Write the header for op and a payload of size bytes into out (SHIM_FRAME_HEADER bytes). */
void shim_frame_header(uint8_t *out, enum shim_op op, uint64_t size);

/* Check a frame of len bytes from a peer against op; on success set *payload and *size.
 * DTSHIM_ERR_MISMATCH when the peer called another collective, DTSHIM_ERR_PMIX when the frame
 * is not one of ours or is truncated. */
int shim_frame_parse(const uint8_t *frame, size_t len, enum shim_op op, const uint8_t **payload,
                     uint64_t *size);

/* The preemption vote: 1 when any of the n flags is set. */
int shim_preempt_combine(const uint8_t *flags, size_t n);

/* "300", "2.5", "0": seconds, 0 means forever. -1 for anything else (negative, not a number,
 * trailing text). */
int shim_parse_timeout(const char *text, double *seconds);

/* "USR2", "SIGUSR2", "12", "none" (0). -1 for an unknown name or a signal that cannot be
 * caught (KILL, STOP) or that the shim handles already (TERM). */
int shim_parse_signal(const char *text, int *signo);

/* An integer fact as Slurm's PMIx gives it (uint16, uint32, int, ...), as a non-negative
 * int; -1 when v is not an integer type or out of range. */
int shim_value_int(const pmix_value_t *v, int *out);

#endif
