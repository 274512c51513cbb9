/* topologies.h - the recorded hwloc XMLs that the unit tests read, from $TOPOLOGY_DIR
 * (tests/topologies by default), and how the tests compare cpusets with them. */
#ifndef TESTS_UNIT_TOPOLOGIES_H
#define TESTS_UNIT_TOPOLOGIES_H

#include <stddef.h>

#include "libdist/topo.h"

/* The path of a recorded topology file, into buf. */
void topology_path (const char *file, char *buf, size_t size);

/* The recorded topology file loaded with its I/O devices into t; the test fails
 * (naming the file and hwloc's error) when it does not load. */
void topology_load (const char *file, struct dist_topo *t);

/* A cpuset or nodeset is want, written as a list ("0-3,8"). */
void assert_cpus (hwloc_const_bitmap_t got, const char *want);

#endif
