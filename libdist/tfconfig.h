/* tfconfig.h - TF_CONFIG for TensorFlow's MultiWorkerMirroredStrategy:
 * every task as a worker "host:port", and this task's index. */
#ifndef DIST_TFCONFIG_H
#define DIST_TFCONFIG_H

#include <stddef.h>
#include <stdint.h>

/* The JSON text of TF_CONFIG up to this task's index, which the caller
 * appends followed by "}}".  Ports are port_base + rank, wrapped within
 * [lo, hi], so they are unique while ntasks <= hi - lo + 1.  Returns
 * malloc'ed memory, or NULL when the ports would repeat or a name is not a
 * plain host name. */
char *dist_tf_config_prefix (const char *const *host_of_rank, size_t ntasks,
                             uint16_t port_base, uint16_t lo, uint16_t hi);

#endif /* DIST_TFCONFIG_H */
