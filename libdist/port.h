/* port.h - a step's ports as a deterministic function of job id and step id:
 * MASTER_PORT, and the port of NCCL's RAS client socket beside it. */
#ifndef DIST_PORT_H
#define DIST_PORT_H

#include <stdint.h>

/* Each job has a block of DIST_PORT_BLOCK ports, two per step: steps of one
 * job get consecutive, distinct pairs.  Step N and step N +
 * DIST_PORT_STEPS_PER_JOB of one job share a pair, as do jobs that are
 * (range size / DIST_PORT_BLOCK) apart; rank 0's node checks that
 * MASTER_PORT is free, so a collision fails fast instead of hanging. */
#define DIST_PORT_BLOCK 16
#define DIST_PORT_STEPS_PER_JOB (DIST_PORT_BLOCK / 2)

/* The step's MASTER_PORT within [lo, hi]; the same on every node. */
uint16_t dist_port_for_step (uint16_t lo, uint16_t hi, uint32_t job_id, uint32_t step_id);

/* The port after it, for NCCL_RAS_ADDR (NCCL's default, 28028, is one per
 * node for every step); 0 when the range has a single port. */
uint16_t dist_ras_port_for_step (uint16_t lo, uint16_t hi, uint32_t job_id, uint32_t step_id);

#endif /* DIST_PORT_H */
