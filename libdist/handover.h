/* handover.h - what srun works out once per step and hands to every node.
 *
 * srun (the local context) asks slurmctld, once per step, which node runs
 * rank 0 and what Slurm's NodeAddr for it is, and whether it armed fail
 * fast.  It passes that in one variable of the step's environment, so that
 * no slurmstepd has to call slurmctld (a call that deadlocks on Slurm's
 * auth lock inside slurmstepd since 23.11, and costs O(nodes) RPCs).
 *
 * The text is "step=JOB.STEP rank0=NODE addr=NODEADDR fail_fast=0|1
 * key=HEX": it is tied to one step, so a stale copy in a nested environment
 * is ignored.  key is 32 random bytes srun drew for the step: every task
 * gets it (DIST_TRAIN_STEP_KEY), and only the step's tasks can read it, so
 * dist-train-doctor's ranks sign their messages with it.
 *
 * srun also hands over which node runs each rank, from the same answer of
 * slurmctld, in a second variable, whatever the distribution: under -m
 * arbitrary the nodes never read SLURM_HOSTFILE, a path the user names,
 * themselves.
 * Both names begin with SLURM, which srun passes to the step whatever
 * --export says (--export=NONE included).
 */
#ifndef DIST_HANDOVER_H
#define DIST_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIST_HANDOVER_VAR "SLURM_DIST_TRAIN_SRUN"
#define DIST_LAYOUT_VAR "SLURM_DIST_TRAIN_LAYOUT"
#define DIST_LAYOUT_TEXT_MAX (64 << 10) /* below Linux's 128 KiB for one variable */
#define DIST_STEP_KEY_VAR "DIST_TRAIN_STEP_KEY" /* the key, as each task gets it */
#define DIST_NODE_MAX 256 /* a node name or a NodeAddr (a name or an address) */
#define DIST_STEP_KEY_HEX 64 /* 32 bytes as lowercase hex digits */
#define DIST_HANDOVER_MAX (2 * DIST_NODE_MAX + DIST_STEP_KEY_HEX + 90)

struct dist_handover {
    uint32_t job_id;
    uint32_t step_id;
    char rank0_node[DIST_NODE_MAX]; /* "" when srun could not tell */
    char rank0_addr[DIST_NODE_MAX]; /* Slurm's NodeAddr of it, "" = none */
    bool fail_fast; /* srun stops the step on a bad exit */
    char key[DIST_STEP_KEY_HEX + 1]; /* "" when srun could not draw one */
};

/* Write h as text; -1 when a name has a character outside [A-Za-z0-9._:-],
 * the key is not "" or 64 lowercase hex digits, or the text does not fit. */
int dist_handover_format (const struct dist_handover *h, char *buf, size_t size);

/* Read text into h; -1 (h cleared) for anything malformed: unknown keys,
 * bad numbers, bad characters, overlong names, a missing step. */
int dist_handover_parse (const char *text, struct dist_handover *h);

/* The node of every rank (its index in the step's node list) as text:
 * "step=JOB.STEP nodes=N ranks=R layout=RUNS", RUNS as dist_runs_append writes
 * them: block, cyclic and plane take one to a few runs per rank of a node, whatever
 * the node count.  Malloc'ed; NULL when a node index is out of range or the text is
 * longer than DIST_LAYOUT_TEXT_MAX. */
char *dist_layout_text (uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                        const uint32_t *node_of_rank, uint32_t nranks);

/* Read such text, for step job_id.step_id of nnodes nodes and nranks ranks,
 * into node_of_rank (nranks entries); -1 for anything malformed, another
 * step, another shape, or runs that do not add up to nranks. */
int dist_layout_text_parse (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                            uint32_t nranks, uint32_t *node_of_rank);

/* values[count] (each below bound) as runs, comma-separated: "V", "V*K" (K of V), "V..W"
 * (V, V+1, ... W, or down to W) and "V..W*K" (K of each): a block layout is "0..N-1*K",
 * a cyclic one K times "0..N-1".  Appended at text + *len (size bytes in all), *len moved
 * on: 0, or -1 when a value is out of range or the text does not fit.  The layout's text
 * and the topology's are made of them. */
int dist_runs_append (char *text, size_t size, size_t *len, const uint32_t *values, uint32_t count,
                      uint32_t bound);

/* The number at *p up to one of the characters in stop (or the end), *p moved past it:
 * 0, or -1 for anything but a decimal uint32_t. */
int dist_take_u32 (const char **p, const char *stop, uint32_t *out);
/* Whether *p begins with word; if so *p is moved past it. */
bool dist_take_word (const char **p, const char *word);

/* Such runs kept as they are: what a node works out from them costs it the runs, not the
 * values (a step's ranks).  Run k holds values start .. start + length - 1. */
struct dist_run {
    uint32_t first, last, each; /* "first..last*each" */
    uint32_t start; /* the index of its first value */
};
struct dist_runs {
    uint32_t n; /* runs */
    uint32_t count, bound; /* values, each below bound */
    struct dist_run *run;
};

/* The runs that make up the rest of the text at p, into out (malloc'ed; free with
 * dist_runs_free): 0, or -1 (none held) for a value not below bound, runs that do not add
 * up to count, anything after them, or anything malformed. */
int dist_runs_read (const char *p, uint32_t bound, uint32_t count, struct dist_runs *out);
void dist_runs_free (struct dist_runs *r);
/* Every value of the runs, into values[r->count]. */
void dist_runs_expand (const struct dist_runs *r, uint32_t *values);
/* The values a run holds, and the one at offset (below that) into it. */
uint32_t dist_run_length (const struct dist_run *run);
uint32_t dist_run_value (const struct dist_run *run, uint32_t offset);
/* The run that holds value i (below r->count), and that value. */
uint32_t dist_runs_find (const struct dist_runs *r, uint32_t i);
uint32_t dist_runs_value (const struct dist_runs *r, uint32_t i);

/* A layout's text as its runs, checked as dist_layout_text_parse checks it. */
int dist_layout_text_runs (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                           uint32_t nranks, struct dist_runs *runs);

/* The header of such text, "step=J.S nodes=N ranks=R layout=", at *p into its four
 * numbers, *p moved past it: 0, or -1 when it is not one. */
int dist_layout_text_header (const char **p, uint32_t *job, uint32_t *step, uint32_t *nodes,
                             uint32_t *ranks);

/* nbytes from the kernel's random source, as 2 * nbytes lowercase hex
 * digits and a NUL into out (a step's key, a nonce); 0, or -1 (out ""). */
int dist_random_hex (char *out, size_t nbytes);

/* n bytes as 2 * n lowercase hex digits and a NUL into out. */
void dist_hex_text (const unsigned char *bytes, size_t n, char *out);

/* Whether s holds exactly len lowercase hex digits (the one spelling
 * keys, nonces and MACs are written in). */
bool dist_lower_hex (const char *s, size_t len);

#endif /* DIST_HANDOVER_H */
