/* topologies.c - the recorded hwloc XMLs that the unit tests read (see topologies.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "topologies.h"

void topology_path (const char *file, char *buf, size_t size)
{
    const char *dir = getenv ("TOPOLOGY_DIR");
    snprintf (buf, size, "%s/%s", dir != NULL && dir[0] != '\0' ? dir : "tests/topologies", file);
}

void topology_load (const char *file, struct dist_topo *t)
{
    char path[1024], err[256] = "";
    topology_path (file, path, sizeof (path));
    if (dist_topo_load (t, path, DIST_TOPO_IO, err, sizeof (err)) < 0)
        fail_msg ("%s: %s", path, err);
}

void assert_cpus (hwloc_const_bitmap_t got, const char *want)
{
    char buf[256];
    hwloc_bitmap_list_snprintf (buf, sizeof (buf), got);
    assert_string_equal (buf, want);
}
