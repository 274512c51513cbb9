/* port.c - spread steps over the port range so neighbours never collide.
 *
 * Jobs get a block of DIST_PORT_BLOCK ports each, laid out in job-id order,
 * and each step a pair in its job's block (MASTER_PORT, then NCCL's RAS
 * port), so the jobs that run at the same time (close job ids) and the
 * concurrent steps of one job all differ. */
#include "port.h"

static uint16_t port_at (uint16_t lo, uint16_t hi, uint32_t job_id, uint32_t step_id,
                         unsigned which)
{
    uint64_t span, slot;

    if (hi < lo)
        return lo;
    span = (uint64_t) hi - lo + 1;
    slot = (uint64_t) job_id * DIST_PORT_BLOCK + (step_id % DIST_PORT_STEPS_PER_JOB) * 2 + which;
    return (uint16_t) (lo + slot % span);
}

uint16_t dist_port_for_step (uint16_t lo, uint16_t hi, uint32_t job_id, uint32_t step_id)
{
    return port_at (lo, hi, job_id, step_id, 0);
}

uint16_t dist_ras_port_for_step (uint16_t lo, uint16_t hi, uint32_t job_id, uint32_t step_id)
{
    return hi > lo ? port_at (lo, hi, job_id, step_id, 1) : 0;
}
