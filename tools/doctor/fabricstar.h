/* fabricstar.h - the fabric check (fabric.h) on the doctor's star. */
#ifndef DOCTOR_FABRICSTAR_H
#define DOCTOR_FABRICSTAR_H

#include <stdbool.h>
#include <stddef.h>

#include "doctor.h"
#include "fabric.h"

struct doctor_key;

/* The longest the check may take for nodes, and for any step: a rank
 * waiting for rank 0's verdict waits this much more. */
long fabric_budget_ms (size_t nodes);
#define FABRIC_BUDGET_MAX_MS (FABRIC_ROUNDS_MAX * FABRIC_PAIR_MS + 1000 + 3000)

/* Whether MASTER_ADDR is an address of this node: there rank 0 leads. */
bool fabric_on_master_node (const struct doctor_rank *self);

/* This node's listener, on MASTER_PORT at the address its collectives
 * use; self's fabric fields say where, or in fabric_note why not (-1). */
int fabric_open (struct doctor_rank *self, int *tfd, int *ufd);

/* A leader's part once rank 0 took its record: line (*got bytes, size
 * room) is what rank 0 sent next.  While it is a plan, run it, send the
 * results and read the next line into line; 0 when there was no plan, 1
 * when plans ran (line holds what came after them: the verdict), -1 (said
 * on stderr) when one failed. */
int fabric_follow (int fd, const struct doctor_key *key, const char *pn, const char *sn, char *line,
                   size_t size, size_t *got, const struct doctor_rank *self, int tfd, int ufd);

/* A rank whose record rank 0 took, and the connection it waits on. */
struct fabric_peer {
    int fd;
    const char *pn, *sn;
    const struct doctor_rank *rec;
};

/* Rank 0's part, once every record is in and the star is healthy: plan,
 * hand out, run its own node's part on MASTER_PORT (which the caller
 * closed), gather and judge into res.  0, or -1 when out of memory. */
int fabric_lead (const struct doctor_key *key, const struct doctor_rank *self,
                 const struct fabric_peer *peers, size_t npeers, enum fabric_mode mode,
                 struct doctor_result *res);

#endif /* DOCTOR_FABRICSTAR_H */
