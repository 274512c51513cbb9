/* auth.h - the doctor's handshake: every message proves that its
 * sender knows the step's key, which only the step's tasks can read.
 *
 * srun draws 32 random bytes per step; the plugin hands them to every task
 * as DIST_TRAIN_STEP_KEY (64 hex digits).  A task's environment is readable
 * by its user and root only, so a listener or a sender of another user, who
 * can compute MASTER_PORT from squeue, cannot take part.  The exchange, on
 * one TCP connection from a rank to rank 0 (PN and SN: 16 random bytes each
 * side draws, as 32 hex digits; MAC: HMAC-SHA256 with the key, as 64 hex
 * digits over the text shown):
 *
 *   rank:   "dist-train-doctor 3 hello PN MAC\n"   MAC over "dist-train-doctor hello PN"
 *   rank 0: "dist-train-doctor 3 rank0 SN MAC\n"   MAC over "dist-train-doctor rank0 PN SN"
 *           or "dist-train-doctor 3 refused\n"      when the hello is not this step's
 *   rank:   "record LEN MAC\n" then LEN bytes       MAC over "dist-train-doctor record SN PN\n"
 *                                                    and the LEN bytes (doctor_wire_encode's)
 *   rank 0: "taken MAC\n"                           MAC over "dist-train-doctor taken PN SN"
 *   rank 0: "ok MAC\n" or "problem MAC\n"           MAC over "dist-train-doctor WORD PN SN"
 *
 * The hello shows the key before rank 0 gives the connection anything but
 * a place among the unproven ones, which strangers' connections can take
 * from each other: a connection that showed the key keeps its place until
 * its record is in or its handshake time is up.  (A hello seen on the wire
 * and replayed gets no further than such a place, of which there are a
 * bounded number: the record's MAC covers rank 0's fresh nonce.)  Rank 0
 * proves itself before a rank sends its facts, so an impostor on the port
 * learns nothing about the rank; "taken" tells the rank its record counts,
 * and a rank whose connection closes before it comes connects again until
 * its deadline.  Both nonces enter every later MAC, so nothing seen on one
 * connection is worth replaying on another.
 */
#ifndef DOCTOR_AUTH_H
#define DOCTOR_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "doctor.h"
#include "libdist/handover.h"

#define DOCTOR_KEY_VAR DIST_STEP_KEY_VAR
#define DOCTOR_KEY_BYTES 32
#define DOCTOR_NONCE_HEX 32
#define DOCTOR_MAC_HEX 64
#define DOCTOR_AUTH_LINE_MAX 160 /* the longest handshake line, with its '\n' */
#define DOCTOR_HANDSHAKE_MS 3000 /* from accept to a rank's valid record */
/* rank 0's answer to a hello it cannot check: it tells a stranger nothing but that, and a
 * rank with another step's key that it need not try again */
#define DOCTOR_REFUSED_LINE DOCTOR_PROGRAM " 3 refused\n"

struct doctor_key {
    unsigned char bytes[DOCTOR_KEY_BYTES];
};

/* The key from its 64 hex digits; 0, or -1 for anything else. */
int doctor_key_parse (const char *hex, struct doctor_key *key);

/* A fresh nonce from the kernel's random source; 0, or -1. */
int doctor_nonce (char out[DOCTOR_NONCE_HEX + 1]);

/* The lines above, each into buf (size bytes) with its '\n'; the length,
 * or -1 when it does not fit.  record_header is followed by the record. */
int doctor_hello_format (const struct doctor_key *key, const char *pn, char *buf, size_t size);
int doctor_proof_format (const struct doctor_key *key, const char *pn, const char *sn, char *buf,
                         size_t size);
int doctor_record_header (const struct doctor_key *key, const char *sn, const char *pn,
                          const char *rec, size_t reclen, char *buf, size_t size);
int doctor_taken_format (const struct doctor_key *key, const char *pn, const char *sn, char *buf,
                         size_t size);
int doctor_verdict_format (const struct doctor_key *key, const char *pn, const char *sn, bool ok,
                           char *buf, size_t size);

/* The same lines, read back (line: len bytes, with or without its '\n').
 * Each is 0 only when the line is well formed and, where it carries a MAC,
 * the MAC is right (compared in constant time); else -1. */
int doctor_hello_check (const struct doctor_key *key, const char *line, size_t len,
                        char pn[DOCTOR_NONCE_HEX + 1]);
int doctor_proof_check (const struct doctor_key *key, const char *pn, const char *line, size_t len,
                        char sn[DOCTOR_NONCE_HEX + 1]);
/* The header's length (1..DOCTOR_MSG_MAX) and MAC; the MAC is checked
 * with doctor_record_check once the record is in. */
int doctor_record_header_parse (const char *line, size_t len, size_t *reclen,
                                char mac[DOCTOR_MAC_HEX + 1]);
int doctor_record_check (const struct doctor_key *key, const char *sn, const char *pn,
                         const char *rec, size_t reclen, const char *mac);
int doctor_taken_check (const struct doctor_key *key, const char *pn, const char *sn,
                        const char *line, size_t len);
int doctor_verdict_check (const struct doctor_key *key, const char *pn, const char *sn,
                          const char *line, size_t len, bool *ok);

/* The fabric check's handshake on a path (fabric.h), the same shape as the
 * rank's with rank 0 under its own words: the sender's hello, FN its
 * nonce, MAC over "dist-train-doctor fabric FN"; the receiver's proof, RN
 * its nonce, MAC over "dist-train-doctor fabric-ok FN RN". */
int doctor_fabric_hello_format (const struct doctor_key *key, const char *fn, char *buf,
                                size_t size);
int doctor_fabric_hello_check (const struct doctor_key *key, const char *line, size_t len,
                               char fn[DOCTOR_NONCE_HEX + 1]);
int doctor_fabric_proof_format (const struct doctor_key *key, const char *fn, const char *rn,
                                char *buf, size_t size);
int doctor_fabric_proof_check (const struct doctor_key *key, const char *fn, const char *line,
                               size_t len, char rn[DOCTOR_NONCE_HEX + 1]);

/* Any block: "WORD LEN MAC\n" then LEN bytes (1..DOCTOR_MSG_MAX), the MAC
 * over "dist-train-doctor WORD A B\n" and the bytes.  The record is the
 * block "record" (A: SN, B: PN); the fabric check's plan to a node is
 * "fabric-plan" (PN, SN), its results "fabric-result" (SN, PN). */
int doctor_block_header (const struct doctor_key *key, const char *word, const char *a,
                         const char *b, const char *body, size_t len, char *buf, size_t size);
int doctor_block_header_parse (const char *word, const char *line, size_t len, size_t *bodylen,
                               char mac[DOCTOR_MAC_HEX + 1]);
int doctor_block_check (const struct doctor_key *key, const char *word, const char *a,
                        const char *b, const char *body, size_t len, const char *mac);

/* The hang watchers' line (hangwatch.c): a node's watcher tells the
 * decider, on rank 0's node, how long its ranks have made no progress.
 * The decider greets each connection with DOCTOR_WATCH_GREETING and a fresh
 * nonce (NONCE); every later line of the connection carries a MAC over it,
 * and a sequence number that only grows, so no line is worth replaying:
 *
 *   decider: "dist-train-doctor 3 watch NONCE\n"
 *   watcher: "watch NODEID SEQ IDLE_MS NAME MAC\n"   MAC over
 *            "dist-train-doctor watch NONCE NODEID SEQ IDLE_MS NAME"
 */
#define DOCTOR_WATCH_GREETING DOCTOR_PROGRAM " 3 watch "

struct doctor_watch {
    unsigned long node_id; /* the node's index in the step (SLURM_NODEID) */
    unsigned long seq;
    long idle_ms; /* how long its ranks have made no progress, 0 for busy */
    char name[DOCTOR_NAME_MAX]; /* its name, for messages; no space */
};

int doctor_watch_format (const struct doctor_key *key, const char *nonce,
                         const struct doctor_watch *w, char *buf, size_t size);
int doctor_watch_check (const struct doctor_key *key, const char *nonce, const char *line,
                        size_t len, struct doctor_watch *w);

#endif /* DOCTOR_AUTH_H */
