/* tfconfig.h - TF_CONFIG for TensorFlow's MultiWorkerMirroredStrategy:
 * every task as a worker "host:port", and this task's index. */
#ifndef DIST_TFCONFIG_H
#define DIST_TFCONFIG_H

#include <stddef.h>
#include <stdint.h>

/* Linux takes at most 128 KiB for one string of a program's environment
 * (MAX_ARG_STRLEN): "TF_CONFIG=", the text, the index, "}}" and the NUL. */
#define DIST_TF_CONFIG_MAX (128 * 1024 - sizeof ("TF_CONFIG=") - 16)

/* The JSON text of TF_CONFIG up to this task's index, which the caller
 * appends followed by "}}"; NULL when it would be longer than
 * DIST_TF_CONFIG_MAX (some 7,000 ranks: execve would fail in every task).  Ports are port_base + rank, wrapped within
 * [lo, hi], so they are unique while ntasks <= hi - lo + 1.  Returns
 * malloc'ed memory, or NULL when the ports would repeat or a name is not a
 * plain host name. */
/* Whether TF_CONFIG for these hosts fits in DIST_TF_CONFIG_MAX (counted with
 * five-digit ports). */
int dist_tf_config_fits (const char *const *host_of_rank, size_t ntasks);

char *dist_tf_config_prefix (const char *const *host_of_rank, size_t ntasks, uint16_t port_base,
                             uint16_t lo, uint16_t hi);

#endif /* DIST_TFCONFIG_H */
