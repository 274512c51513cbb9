/* probe.h - this node's collective stack, probed by each task. */
#ifndef DOCTOR_PROBE_H
#define DOCTOR_PROBE_H

#include "doctor.h"

/* Fill self->stack (one line on the node's MPI plugins, PMIx, ports and
 * interfaces) and self->finding[] (stack.c's verdicts that are not fine);
 * needs self's MASTER_ADDR and MASTER_PORT.  Never fails: what cannot be
 * read is unknown, and its check passes. */
void doctor_probe_stack (struct doctor_rank *self);

#endif /* DOCTOR_PROBE_H */
