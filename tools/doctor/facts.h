/* facts.h - this task's own facts, from its environment and kernel. */
#ifndef DOCTOR_FACTS_H
#define DOCTOR_FACTS_H

#include "doctor.h"

/* Everything but the network part (interface, source, connect time). */
void doctor_facts_gather (struct doctor_rank *r);

/* NCCL_SOCKET_IFNAME, else GLOO_SOCKET_IFNAME; NULL when neither is set. */
const char *doctor_facts_ifname (void);

#endif /* DOCTOR_FACTS_H */
