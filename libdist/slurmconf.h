/* slurmconf.h - one key of a Slurm configuration file's text. */
#ifndef DIST_SLURMCONF_H
#define DIST_SLURMCONF_H

#include <stdbool.h>
#include <stddef.h>

/* The value of key in a Slurm configuration file's text (len bytes, "Key=Value" lines, keys
 * matched without regard to case, '#' starts a comment, the last line wins), into out
 * (outlen bytes, NUL-terminated, surrounding quotes removed). false when the key is absent
 * or its value does not fit. */
bool dist_slurm_conf_value (const char *text, size_t len, const char *key, char *out,
                            size_t outlen);

#endif /* DIST_SLURMCONF_H */
