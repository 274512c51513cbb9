/* port.c - spread steps over the port range so neighbours never collide.
 *
 * Jobs get a block of DIST_PORT_STEPS_PER_JOB ports each, laid out in job-id
 * order, so the jobs that run at the same time (close job ids) and the
 * concurrent steps of one job all differ. */
#include "port.h"

uint16_t dist_port_for_step (uint16_t lo, uint16_t hi, uint32_t job_id, uint32_t step_id)
{
    uint64_t span, slot;

    if (hi < lo)
        return lo;
    span = (uint64_t) hi - lo + 1;
    slot = (uint64_t) job_id * DIST_PORT_STEPS_PER_JOB + step_id % DIST_PORT_STEPS_PER_JOB;
    return (uint16_t) (lo + slot % span);
}
