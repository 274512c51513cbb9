/* doctor.h - dist-train-doctor's pure parts: a rank's facts on the wire, the
 * step's expected layout, the checks over every rank's facts, the report.
 *
 * Rank 0 gathers one struct doctor_rank per task (its own and one per peer
 * message), computes where each rank should run from Slurm's layout, and
 * checks them against each other; nothing here does I/O but the report's
 * FILE *, so the checks are unit-tested from plain structs.
 */
#ifndef DOCTOR_H
#define DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DOCTOR_PROGRAM "dist-train-doctor"
#define DOCTOR_MSG_MAX 12288 /* one rank's message, bytes */
#define DOCTOR_NAME_MAX 64 /* node names, addresses, interface names */
#define DOCTOR_LIST_MAX 1024 /* CPU and GPU lists */
#define DOCTOR_RANKS_MAX 1048576 /* WORLD_SIZE the doctor accepts */
#define DOCTOR_NODES_MAX 65536
#define DOCTOR_CPUS_MAX 65536 /* CPU numbers in affinity lists */
#define DOCTOR_NODE_RANKS_MAX 1024 /* ranks of one node checked pairwise, without a layout */
#define DOCTOR_STR_(x) #x
#define DOCTOR_STR(x) DOCTOR_STR_ (x)
#define DOCTOR_PROBLEMS_MAX 64 /* problem lines kept; the rest are counted */
#define DOCTOR_LINE_MAX 512
#define DOCTOR_FINDINGS_MAX 5 /* a rank's lines on its node's collective stack */
#define DOCTOR_WARNINGS_MAX 32 /* warning lines kept; the rest are counted */

/* What one task says about itself.  Numbers are -1 when unset or not a
 * number; strings are printable and bounded (they came from the network). */
struct doctor_rank {
    long procid; /* SLURM_PROCID: who the task really is */
    long rank, local_rank, world_size, local_world_size, group_rank;
    long connect_ms;
    char node[DOCTOR_NAME_MAX];
    char ifname[DOCTOR_NAME_MAX];
    char source[DOCTOR_NAME_MAX]; /* the address it connected from */
    char master_addr[DOCTOR_NAME_MAX];
    char master_port[DOCTOR_NAME_MAX];
    char visible[DOCTOR_LIST_MAX]; /* CUDA_VISIBLE_DEVICES */
    char gpus[DOCTOR_LIST_MAX]; /* DIST_TRAIN_GPUS: the plugin's plan */
    char device[DOCTOR_NAME_MAX]; /* DIST_TRAIN_DEVICE */
    char cpus[DOCTOR_LIST_MAX]; /* real affinity, as a list */
    char plan_cpus[DOCTOR_LIST_MAX]; /* DIST_TRAIN_CPUS */
    char stack[DOCTOR_LINE_MAX]; /* its node's collective stack, one line (probe.c) */
    /* the fabric check (fabric.h), from the one task per node that takes
     * part: where it listens (port 0: it does not, fabric_note says why) */
    long fabric_port, fabric_mtu;
    char fabric_addr[DOCTOR_NAME_MAX];
    char fabric_if[DOCTOR_NAME_MAX];
    char fabric_note[DOCTOR_NAME_MAX * 2];
    /* what is wrong with it: "problem: ..." or "warning: ...", "" past the last */
    char finding[DOCTOR_FINDINGS_MAX][DOCTOR_LINE_MAX];
};

/* Where the ranks should run: node names, and the node index of each rank. */
struct doctor_layout {
    size_t nnodes;
    char (*node)[DOCTOR_NAME_MAX];
    size_t nranks;
    uint32_t *node_of_rank;
};

struct doctor_node_summary {
    char name[DOCTOR_NAME_MAX];
    char ranks[DOCTOR_LINE_MAX / 2]; /* those that checked in, "0-7" */
    char missing[DOCTOR_LINE_MAX / 2]; /* expected here, never checked in */
    char ifnames[DOCTOR_NAME_MAX * 2];
    char sources[DOCTOR_NAME_MAX * 2];
    long max_connect_ms;
    char note[DOCTOR_LINE_MAX / 2]; /* planned sharing, unbound CPUs */
    char stack[DOCTOR_LINE_MAX]; /* its collective stack, as its first rank saw it */
};

struct doctor_result {
    long world_size; /* rank 0's */
    size_t checked_in;
    size_t nnodes;
    struct doctor_node_summary *node;
    size_t unauthenticated; /* connections closed before a valid record */
    char unauthenticated_from[DOCTOR_LINE_MAX / 2]; /* their addresses, a few */
    size_t nproblems; /* all of them; only the first DOCTOR_PROBLEMS_MAX kept */
    char problem[DOCTOR_PROBLEMS_MAX][DOCTOR_LINE_MAX];
    size_t nwarnings; /* risks that do not fail the step; the first DOCTOR_WARNINGS_MAX kept */
    char warning[DOCTOR_WARNINGS_MAX][DOCTOR_LINE_MAX];
    char fabric[DOCTOR_LINE_MAX]; /* the fabric check's figures, "" when it did not run */
};

/* The message a rank sends: "key=value" lines, then "end".  Returns its
 * length, or -1 when it does not fit in size. */
int doctor_wire_encode (const struct doctor_rank *r, char *buf, size_t size);

/* Parse a message (len bytes, not necessarily terminated).  0, or -1 when
 * it is not a doctor's message. */
int doctor_wire_decode (const char *buf, size_t len, struct doctor_rank *r);

/* Copy src into dst (size bytes), replacing what is not printable ASCII. */
void doctor_printable (char *dst, size_t size, const char *src);

/* Expand a Slurm hostlist ("node[1-3,07],login1", libdist/hostlist.h) into
 * names[max]; returns the count, or -1 when it does not parse, a name is too
 * long, or there are more than max (or DOCTOR_RANKS_MAX: a node holds a rank). */
int doctor_hostlist_expand (const char *text, char (*names)[DOCTOR_NAME_MAX], size_t max);

/* The layout from SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE,
 * SLURM_DISTRIBUTION and SLURM_DIST_PLANESIZE (values, NULL if unset).
 * 0, or -1 with out empty when they do not give one. */
int doctor_layout_build (const char *nodelist, const char *tasks_per_node, const char *distribution,
                         const char *plane_size, struct doctor_layout *out);
/* The layout the plugin gives rank 0's task (DIST_TRAIN_LAYOUT: the node of every RANK, in
 * whatever order the plugin numbered the ranks), for the step's nodes (nodelist) and
 * step job_id.step_id.  0, or -1 with out empty when it is not that step's. */
int doctor_layout_from_plugin (const char *nodelist, const char *text, unsigned long job_id,
                               unsigned long step_id, struct doctor_layout *out);
void doctor_layout_free (struct doctor_layout *l);

/* Check n ranks' facts (recs[0] is rank 0's own) against each other and
 * the layout (nranks 0: unknown).  0, or -1 when out of memory. */
int doctor_check (const struct doctor_rank *recs, size_t n, const struct doctor_layout *layout,
                  struct doctor_result *out);
void doctor_result_free (struct doctor_result *res);

/* true when the step is healthy: every rank in, no problem (warnings do
 * not count). */
bool doctor_result_ok (const struct doctor_result *res);

void doctor_report_text (FILE *f, const struct doctor_result *res, double timeout_s);
void doctor_report_json (FILE *f, const struct doctor_result *res, double timeout_s);

/* linked.c: true in dist-train-doctor-static, which runs in any container
 * image: it loads no library (the image's are not its C library's) and takes
 * addresses, not names (names would need the image's NSS modules). */
extern const bool doctor_linked_static;

#endif /* DOCTOR_H */
