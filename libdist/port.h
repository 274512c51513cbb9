/* port.h - MASTER_PORT as a deterministic function of job id and step id. */
#ifndef DIST_PORT_H
#define DIST_PORT_H

#include <stdint.h>

/* Steps of one job that get consecutive, distinct ports.  Step N and step
 * N + DIST_PORT_STEPS_PER_JOB of one job share a port, as do jobs that are
 * (range size / DIST_PORT_STEPS_PER_JOB) apart; rank 0's node checks that the
 * port is free, so a collision fails fast instead of hanging. */
#define DIST_PORT_STEPS_PER_JOB 16

/* The port for a step within [lo, hi]; the same on every node. */
uint16_t dist_port_for_step (uint16_t lo, uint16_t hi, uint32_t job_id, uint32_t step_id);

#endif /* DIST_PORT_H */
