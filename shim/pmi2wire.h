/* pmi2wire.h - the text of Slurm's PMI-2 wire protocol, as pure functions: requests, the
 * fields of a response, values and the process mapping (the step's host list, which
 * names a mapping's nodes, is libdist/hostlist.h's).
 *
 * A PMI-2 message is a 6-character decimal length, left-justified and padded with blanks,
 * then that many bytes of "key=value;" fields, the first being "cmd=NAME;". Values end at
 * the next ';': Slurm's mpi/pmi2 server (src/plugins/mpi/pmi2) splits on it and has no
 * escape, so nothing of ours it carries ever holds one. A KVS value is text of at most
 * 1024 bytes (PMI2_MAX_VALLEN); the shim's frames are binary, so each chunk is put as
 * base64 (SHIM_PMI2_CHUNK bytes make SHIM_PMI2_VALLEN characters). */
#ifndef DTSHIM_PMI2WIRE_H
#define DTSHIM_PMI2WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest message either side may send: the length field has 6 digits. */
#define SHIM_PMI2_MAX_MSG 999999
/* A KVS key and value as PMI-2 bounds them (PMI2_MAX_KEYLEN, PMI2_MAX_VALLEN). */
#define SHIM_PMI2_KEYLEN 64
#define SHIM_PMI2_VALLEN 1024
/* The bytes of a frame carried by one value: 768 bytes are 1024 characters of base64. */
#define SHIM_PMI2_CHUNK 768
/* The largest payload of one rank in one collective over PMI-2, 1 MiB. Slurm's server keeps
 * every value in a hash of ROUNDUP(tasks, 8) buckets, searched one key after another, and
 * every fence carries each node's values through srun: a frame of 1 MiB is 1,366 values per
 * rank. Larger payloads are refused (DTSHIM_ERR_TOO_LARGE); PMIx carries up to 1 GiB. */
#define SHIM_PMI2_MAX_PAYLOAD ((size_t) 1 << 20)
/* The most ranks a server may say a job has: 16 Mi, far past any Slurm step, and 64 MiB
 * for the node of each. */
#define SHIM_PMI2_SIZE_MAX (1 << 24)

/* The KVS key of chunk i of rank's frames: "dtshim.<rank>" for the first, "dtshim.<rank>.<i>"
 * for the others. Every collective puts its frame under the same keys again: Slurm's KVS
 * replaces a value put again, and a frame names its collective and sequence number, so a
 * value left from an earlier call is never taken for this one. DTSHIM_ERR_INVALID when it
 * does not fit. */
int shim_pmi2_key (char *buf, size_t len, int rank, size_t chunk);

/* Base64 without padding (so no '=' and no ';' in a value): encoded length of n bytes, and
 * the encoding into out (shim_pmi2_encoded_len(n) + 1 bytes, NUL-terminated). */
size_t shim_pmi2_encoded_len (size_t n);
void shim_pmi2_encode (const uint8_t *in, size_t n, char *out);
/* Decode len characters into out (at most outlen bytes); the decoded length, or -1 when the
 * text is not canonical base64 without padding or does not fit. */
long shim_pmi2_decode (const char *text, size_t len, uint8_t *out, size_t outlen);

/* A request "cmd=CMD;" then each fields[i] = "key", fields[i+1] = "value" pair (nfields
 * strings, a NULL value ends them early), framed with its length, into buf (len bytes).
 * The message's length, or -1 when it does not fit or a key or value holds ';', '=' in a
 * key, a newline or a NUL. */
long shim_pmi2_request (char *buf, size_t len, const char *cmd, const char *const *fields,
                        size_t nfields);

/* The length a message's 6-character header declares, or -1 when it is not one. */
long shim_pmi2_msg_len (const char header[6]);

/* The value of field key in a response body (len bytes, not NUL-terminated): *value points
 * into body, *vlen its length. false when the key is absent or the body is not a sequence of
 * "key=value;" fields beginning with "cmd=". */
bool shim_pmi2_field (const char *body, size_t len, const char *key, const char **value,
                      size_t *vlen);
/* Whether the body is the response cmd with rc=0. */
bool shim_pmi2_ok (const char *body, size_t len, const char *cmd);

/* The node of every rank from PMI_process_mapping, "(vector,(start,nodes,depth),...)":
 * each triple gives depth consecutive ranks to each of nodes nodes from start; the vector
 * repeats until size ranks are placed (MPICH's rule; Slurm's covers them all at once).
 * node_of has size entries. -1 for anything else: not this form, a node id beyond max_node,
 * a vector that places nothing. */
int shim_pmi2_mapping (const char *text, size_t len, int size, int max_node, int *node_of);

/* Field key of a response body as a decimal number from lo to hi (no sign, at most 10
 * digits); false for anything else. */
bool shim_pmi2_int_field (const char *body, size_t len, const char *key, int lo, int hi, int *out);

/* Server text (len bytes) for a message: at most size - 1 bytes, each one that is not
 * printable as '?'. */
void shim_pmi2_shown (const char *text, size_t len, char *out, size_t size);

#endif
