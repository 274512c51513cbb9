/* serve.h - rank 0's part of dist-train-doctor. */
#ifndef DOCTOR_SERVE_H
#define DOCTOR_SERVE_H

#include <stdbool.h>

#include "doctor.h"
#include "auth.h"
#include "fabric.h"

struct serve_options {
    double timeout_s;
    bool json;
    enum fabric_mode fabric; /* the paths between nodes: checked unless FABRIC_OFF */
};

/* Gather the other ranks' facts, each signed with key, on the listening
 * socket lfd until all came or deadline_ms, print the report on stdout
 * (JSON with o->json), answer every rank, and close every socket, lfd too.
 * 0 when the step is healthy, 1 otherwise. */
int doctor_serve (int lfd, const struct doctor_key *key, const struct doctor_rank *self,
                  const struct doctor_layout *layout, long deadline_ms,
                  const struct serve_options *o);

#endif /* DOCTOR_SERVE_H */
