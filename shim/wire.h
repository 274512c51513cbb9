/* wire.h - what the shim puts into PMIx and reads back, as pure functions: key names, the
 * frame around every contribution, the preemption vote, and the parsing of its settings. */
#ifndef DTSHIM_WIRE_H
#define DTSHIM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pmix_common.h>

/* Every contribution is a frame: a 24-byte header, then the payload. The header names the
 * collective and its sequence number, so ranks that call different collectives at the same
 * step find out, and a value left from an earlier call is never taken for this one; it
 * carries the payload's size, so a 0-byte contribution is still a non-empty PMIx value.
 *
 * Keys are never reused: PMIx 4.2's shared-memory store fails (UNPACK-PAST-END in the
 * fence) when a key is put again with a new value. The price: PMIx keeps every value for
 * the life of the step, and a fence with data collection sends again every value the
 * ranks of a node ever put. The shim is for bootstrap and control messages, not bulk data. */
#define SHIM_FRAME_HEADER 24

enum shim_op {
    SHIM_OP_BROADCAST = 1,
    SHIM_OP_ALLGATHER = 2,
    SHIM_OP_ALLGATHERV = 3,
    SHIM_OP_GATHER = 4,
    SHIM_OP_GATHERV = 5,
    SHIM_OP_PREEMPT = 6,
    SHIM_OP_UNIQUE_ID = 7,
    SHIM_OP_BROADCASTV = 8,
    SHIM_OP_RANK_ORDER = 9, /* the tasks' claims at init (rankorder.c) */
};

/* A frame larger than SHIM_CHUNK is put as several PMIx values: Slurm's PMIx server keeps
 * each value in one shared-memory segment, which holds 4 MiB by default. */
#define SHIM_CHUNK ((size_t) 1 << 20)
/* The largest payload of one rank in one collective, 1 GiB: a frame that declares more is
 * refused before anything is allocated for it (the shim is for small data). */
#define SHIM_MAX_PAYLOAD ((size_t) 1 << 30)

/* Chunks of chunk bytes (SHIM_CHUNK for PMIx, SHIM_PMI2_CHUNK for PMI-2) of a frame of
 * frame_len bytes, and the length of chunk i. */
size_t shim_chunk_count (size_t frame_len, size_t chunk);
size_t shim_chunk_len (size_t frame_len, size_t chunk, size_t i);

/* v in its low bytes (at most 8), little-endian, at out / read back from in. */
void shim_put_le (uint8_t *out, uint64_t v, int bytes);
uint64_t shim_get_le (const uint8_t *in, int bytes);

/* The PMIx key of chunk i of collective seq: "dtshim.<seq>" for the first chunk,
 * "dtshim.<seq>.<i>" for the others. */
int shim_key (char *buf, size_t len, uint64_t seq, size_t chunk);

/* Write the header of collective seq, op, with a payload of size bytes into out
 * (SHIM_FRAME_HEADER bytes). */
void shim_frame_header (uint8_t *out, enum shim_op op, uint64_t seq, uint64_t size);

/* Check the first chunk (len bytes) of a peer's frame against collective seq and op; on
 * success set *size to the payload's size. DTSHIM_ERR_MISMATCH when the peer called another
 * collective or has not contributed to this one, DTSHIM_ERR_PMIX when the chunk is not one
 * of ours or has the wrong length. */
int shim_frame_parse (const uint8_t *chunk, size_t len, enum shim_op op, uint64_t seq,
                      uint64_t *size);
/* The same checks of the SHIM_FRAME_HEADER bytes at header alone, but for the chunk's length
 * (PMI-2 cuts frames into smaller chunks). */
int shim_frame_header_parse (const uint8_t *header, enum shim_op op, uint64_t seq, uint64_t *size);

/* "300", "2.5", "0": seconds, 0 means forever. -1 for anything else (negative, not a number,
 * trailing text). */
int shim_parse_timeout (const char *text, double *seconds);
/* The longest deadline, a year (longer ones overflowed the deadline's arithmetic). */
#define SHIM_TIMEOUT_MAX (365.0 * 24 * 3600)

/* "USR2", "SIGUSR2", "12", "none" (0). -1 for an unknown name or a signal that cannot be
 * caught (KILL, STOP), that the shim handles already (TERM), or that shim_signal_allowed()
 * refuses. */
int shim_parse_signal (const char *text, int *signo);
/* Whether signo may be the preemption signal: not KILL, STOP, TERM, nor a fault (SEGV, BUS,
 * FPE, ILL, TRAP, SYS), nor one the kernel or runtime sends for other reasons (CONT, PIPE,
 * CHLD, URG, ALRM). */
bool shim_signal_allowed (int signo);

/* An integer fact as Slurm's PMIx gives it (uint16, uint32, int, ...), as a non-negative
 * int; -1 when v is not an integer type or out of range. */
int shim_value_int (const pmix_value_t *v, int *out);

#endif
