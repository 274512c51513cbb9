/* fuzz_port.c - MASTER_PORT from the admin's port_range and the step
 * (libdist/port.c, through libdist/config.c's port_range=).  Input: one
 * line "LO-HI JOB.STEP"; a range that does not parse is fed to the port
 * function as raw numbers. */
#include "libdist/config.h"
#include "libdist/port.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size), *space = strchr (text, ' ');
    char *arg, *err = malloc (DIST_ERR_MAX), *dot = NULL;
    struct dist_config cfg;
    unsigned long job = 0, step = 0;
    uint16_t port;

    if (space != NULL) {
        *space = '\0';
        job = strtoul (space + 1, &dot, 10);
        if (*dot == '.')
            step = strtoul (dot + 1, NULL, 10);
    }
    arg = malloc (strlen (text) + sizeof ("port_range="));
    sprintf (arg, "port_range=%s", text);
    dist_config_init (&cfg);
    if (dist_config_parse_arg (&cfg, arg, err, DIST_ERR_MAX) < 0) {
        /* not a range the admin could give: the numbers as they are */
        cfg.port_lo = (uint16_t) strtoul (text, &dot, 10);
        cfg.port_hi = *dot == '-' ? (uint16_t) strtoul (dot + 1, NULL, 10) : cfg.port_lo;
    }
    port = dist_port_for_step (cfg.port_lo, cfg.port_hi, (uint32_t) job, (uint32_t) step);
    if (cfg.port_lo <= cfg.port_hi) {
        uint32_t span = (uint32_t) cfg.port_hi - cfg.port_lo + 1;
        FUZZ_CHECK (port >= cfg.port_lo && port <= cfg.port_hi);
        /* the same on every node */
        FUZZ_CHECK (
            port == dist_port_for_step (cfg.port_lo, cfg.port_hi, (uint32_t) job, (uint32_t) step));
        uint16_t ras =
            dist_ras_port_for_step (cfg.port_lo, cfg.port_hi, (uint32_t) job, (uint32_t) step);
        /* NCCL's RAS port: in the range and not MASTER_PORT, or none in a range of one */
        FUZZ_CHECK (span == 1 ? ras == 0 : ras >= cfg.port_lo && ras <= cfg.port_hi && ras != port);
        /* the steps of one job get distinct ports while the range holds them */
        if (span >= DIST_PORT_BLOCK && step % DIST_PORT_STEPS_PER_JOB != 0)
            FUZZ_CHECK (port
                        != dist_port_for_step (cfg.port_lo, cfg.port_hi, (uint32_t) job,
                                               (uint32_t) (step - step % DIST_PORT_STEPS_PER_JOB)));
    } else {
        FUZZ_CHECK (port == cfg.port_lo);
    }
    free (arg);
    free (err);
    free (text);
    return 0;
}
