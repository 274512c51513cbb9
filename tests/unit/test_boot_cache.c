/* test_boot_cache.c - the node's topology cache as libdist keeps it: a key per boot,
 * hwloc and format, a seal that catches any change to the cached XML, and a site's
 * topology file read by hwloc in a child that may crash on it.  The XMLs are read from
 * $TOPOLOGY_DIR (tests/topologies by default). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "libdist/topo.h"
#include "topologies.h"

/* hwloc 2.9's libxml import crashes on a corrupt copy of this one (write_corrupt_copy). */
#define AMD_LIKE "amd-like.xml"
#define CTS1_PASCAL "cts1-pascal.xml"

#define BOOT_A "0e1c7b5a-3f2d-4c1e-9a8b-7d6e5f4a3b2c"
#define BOOT_B "9f8e7d6c-5b4a-4321-8765-fedcba987654"

/* A cache is good for one boot, one hwloc and our format; one without I/O
 * devices serves only steps that place no GPUs or NICs. */
static void test_cache_key (void **state)
{
    char with_io[DIST_TOPO_CACHE_KEY_MAX], without[DIST_TOPO_CACHE_KEY_MAX];

    assert_int_equal (dist_topo_cache_key (with_io, sizeof (with_io), BOOT_A, 0x20900, true), 0);
    assert_int_equal (dist_topo_cache_key (without, sizeof (without), BOOT_A, 0x20900, false), 0);
    assert_string_not_equal (with_io, without);
    assert_true (dist_topo_cache_usable (with_io, BOOT_A, 0x20900, true));
    assert_true (dist_topo_cache_usable (with_io, BOOT_A, 0x20900, false));
    assert_true (dist_topo_cache_usable (without, BOOT_A, 0x20900, false));
    assert_false (dist_topo_cache_usable (without, BOOT_A, 0x20900, true));
    assert_false (dist_topo_cache_usable (with_io, BOOT_B, 0x20900, true)); /* rebooted */
    assert_false (dist_topo_cache_usable (with_io, BOOT_A, 0x20a00, true)); /* new hwloc */
    assert_false (dist_topo_cache_usable (NULL, BOOT_A, 0x20900, false));
    assert_false (dist_topo_cache_usable ("", BOOT_A, 0x20900, false));
    /* a boot id that is not one gives no key, and so no usable cache */
    assert_int_equal (dist_topo_cache_key (with_io, sizeof (with_io), "", 0x20900, true), -1);
    assert_int_equal (dist_topo_cache_key (with_io, sizeof (with_io), BOOT_A "0", 0x20900, true),
                      -1);
    assert_int_equal (dist_topo_cache_key (with_io, sizeof (with_io),
                                           "0e1c7b5a/3f2d-4c1e-9a8b-7d6e5f4a3b2c", 0x20900, true),
                      -1);
    assert_int_equal (dist_topo_cache_key (with_io, 20, BOOT_A, 0x20900, true), -1);
}

/* The checked copy of a site's file: keyed by the file's identity too, so an edited file
 * (another size or time) or a replaced one (another inode) is checked again. */
static void test_site_key (void **state)
{
    char a[DIST_TOPO_CACHE_KEY_MAX], b[DIST_TOPO_CACHE_KEY_MAX];

    assert_int_equal (
        dist_topo_site_key (a, sizeof (a), BOOT_A, 0x20900, 0x803, 1234, 5000, 1700000000, 5), 0);
    assert_string_equal (a, "format=3 hwloc=0x20900 boot=" BOOT_A
                            " site=803:4d2:5000:1700000000.000000005");
    assert_int_equal (
        dist_topo_site_key (b, sizeof (b), BOOT_A, 0x20900, 0x803, 1234, 5000, 1700000000, 6), 0);
    assert_string_not_equal (a, b);
    assert_int_equal (
        dist_topo_site_key (b, sizeof (b), BOOT_A, 0x20900, 0x803, 1235, 5000, 1700000000, 5), 0);
    assert_string_not_equal (a, b);
    /* never the key of a live cache */
    assert_false (dist_topo_cache_usable (a, BOOT_A, 0x20900, false));
    /* the largest identities fit */
    assert_int_equal (dist_topo_site_key (a, sizeof (a), BOOT_A, 0xffffffff, ~0ULL, ~0ULL,
                                          -1 - 0x7fffffffffffffffLL, -1 - 0x7fffffffffffffffLL,
                                          999999999),
                      0);
    assert_int_equal (dist_topo_site_key (a, sizeof (a), "boot", 0x20900, 1, 1, 1, 1, 1), -1);
    assert_int_equal (dist_topo_site_key (a, 40, BOOT_A, 0x20900, 1, 1, 1, 1, 1), -1);
}

/* Write to bad (a mkstemp template) the AMD machine's file with one Group's
 * complete_cpuset attribute renamed: hwloc 2.9's libxml import crashes on it. */
static void write_corrupt_copy (char *bad)
{
    char path[1024], *text, *at;
    size_t len;
    FILE *f;
    int fd;

    topology_path (AMD_LIKE, path, sizeof (path));
    f = fopen (path, "r");
    assert_non_null (f);
    text = calloc (1, 1 << 20);
    assert_non_null (text);
    len = fread (text, 1, (1 << 20) - 1, f);
    fclose (f);
    at = strstr (text, "<object type=\"Group\"");
    assert_non_null (at);
    at = strstr (at, "complete_cpuset=");
    assert_non_null (at);
    memcpy (at, "complete_xxxxxx=", 16);
    fd = mkstemp (bad);
    assert_true (fd >= 0);
    assert_int_equal (write (fd, text, len), (ssize_t) len);
    close (fd);
    free (text);
}

/* A site's file read by hwloc in a child, as dist-train-plan reads it: the export, or NULL. */
static char *read_in_child (const char *path, size_t *len, char *err, size_t errsz)
{
    char *xml = NULL;

    if (dist_topo_read_file ("topology", path, DIST_TOPO_IO, NULL, NULL, &xml, len, err, errsz)
        != 1)
        return NULL;
    return xml;
}

/* A site's file read in a child: a good one comes back as hwloc's export, which loads; a
 * corrupt one or a missing one is an error naming the file, and this process goes on. */
static void test_site_file_checked_in_a_child (void **state)
{
    char path[1024], bad[] = "/tmp/test_boot_cache_site_XXXXXX", err[512], *xml;
    struct dist_topo t;
    size_t len = 0;

    topology_path (AMD_LIKE, path, sizeof (path));
    xml = read_in_child (path, &len, err, sizeof (err));
    assert_non_null (xml);
    assert_int_equal (strlen (xml), len);
    assert_int_equal (dist_topo_load_xml (&t, xml, len + 1, DIST_TOPO_IO, err, sizeof (err)), 0);
    assert_int_equal (t.ngpus, 4);
    dist_topo_destroy (&t);
    free (xml);

    write_corrupt_copy (bad);
    xml = read_in_child (bad, &len, err, sizeof (err));
    if (xml != NULL) {
        /* an hwloc that takes it: what it made of it loads */
        assert_int_equal (dist_topo_load_xml (&t, xml, len + 1, DIST_TOPO_IO, err, sizeof (err)),
                          0);
        dist_topo_destroy (&t);
        free (xml);
    } else {
        assert_non_null (strstr (err, bad));
    }
    unlink (bad);

    assert_null (read_in_child ("/nonexistent/topology.xml", &len, err, sizeof (err)));
    assert_non_null (strstr (err, "/nonexistent/topology.xml"));
}

/* The child that crashes on the corrupt file leaves no core behind: that would be a copy
 * of slurmstepd's memory, root's, in the user's working directory.  Run in a directory of
 * its own, with core files allowed as far as the hard limit goes (ASan sets the soft
 * limit to 0). */
static void test_site_file_crash_leaves_no_core (void **state)
{
    char bad[] = "/tmp/test_boot_cache_site_XXXXXX", dir[] = "/tmp/test_boot_cache_core_XXXXXX";
    char saved_cwd[1024], err[512], *xml;
    struct rlimit lim;
    struct dirent *de;
    size_t len = 0;
    int left = 0;
    DIR *d;

    write_corrupt_copy (bad);
    assert_non_null (getcwd (saved_cwd, sizeof (saved_cwd)));
    assert_non_null (mkdtemp (dir));
    assert_int_equal (chdir (dir), 0);
    assert_int_equal (getrlimit (RLIMIT_CORE, &lim), 0);
    lim.rlim_cur = lim.rlim_max;
    assert_int_equal (setrlimit (RLIMIT_CORE, &lim), 0);
    xml = read_in_child (bad, &len, err, sizeof (err));
    assert_int_equal (chdir (saved_cwd), 0);
    free (xml);
    unlink (bad);

    d = opendir (dir);
    assert_non_null (d);
    while ((de = readdir (d)) != NULL) {
        if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
            continue;
        fprintf (stderr, "left in the working directory: %s/%s\n", dir, de->d_name);
        left++;
        assert_int_equal (unlinkat (dirfd (d), de->d_name, 0), 0);
    }
    closedir (d);
    assert_int_equal (rmdir (dir), 0);
    assert_int_equal (left, 0);
}

/* What the cache holds loads back from memory as this machine's; a text
 * that is cut or not NUL-terminated is refused. */
static void test_cache_round_trip (void **state)
{
    char path[1024], err[256];
    struct dist_topo t, back;
    char *xml = NULL;
    int len = 0;

    topology_path (CTS1_PASCAL, path, sizeof (path));
    assert_int_equal (dist_topo_load (&t, path, DIST_TOPO_IO, err, sizeof (err)), 0);
    assert_int_equal (hwloc_topology_export_xmlbuffer (t.topo, &xml, &len, 0), 0);
    assert_int_equal (dist_topo_load_xml (&back, xml, (size_t) len,
                                          DIST_TOPO_IO | DIST_TOPO_THIS_SYSTEM, err, sizeof (err)),
                      0);
    assert_true (back.this_system);
    assert_int_equal (back.ngpus, t.ngpus);
    assert_int_equal (back.nnics, t.nnics);
    assert_string_equal (back.gpu[0].busid, t.gpu[0].busid);
    dist_topo_destroy (&back);
    /* without I/O devices: no GPUs */
    assert_int_equal (dist_topo_load_xml (&back, xml, (size_t) len, 0, err, sizeof (err)), 0);
    assert_int_equal (back.ngpus, 0);
    dist_topo_destroy (&back);
    /* cut in half (NUL-terminated there), then not NUL-terminated at all */
    xml[len / 2] = '\0';
    assert_int_equal (
        dist_topo_load_xml (&back, xml, (size_t) len / 2 + 1, DIST_TOPO_IO, err, sizeof (err)), -1);
    assert_null (back.topo);
    assert_int_equal (
        dist_topo_load_xml (&back, xml, (size_t) len / 2, DIST_TOPO_IO, err, sizeof (err)), -1);
    assert_int_equal (dist_topo_load_xml (&back, xml, 0, DIST_TOPO_IO, err, sizeof (err)), -1);
    hwloc_free_xmlbuffer (t.topo, xml);
    dist_topo_destroy (&t);
}

/* A sealed cache gives back its XML's length and key; any change to the
 * XML, the seal or the length is caught before hwloc sees the file. */
static void test_cache_seal (void **state)
{
    static const char xml[] = "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n</topology>\n";
    char key[DIST_TOPO_CACHE_KEY_MAX], back[DIST_TOPO_CACHE_KEY_MAX], seal[256];
    char file[sizeof (xml) + sizeof (seal)];
    size_t xlen = sizeof (xml) - 1, flen, i;

    assert_int_equal (dist_topo_cache_key (key, sizeof (key), BOOT_A, 0x20900, true), 0);
    assert_int_equal (dist_topo_cache_seal (xml, xlen, key, seal, sizeof (seal)), 0);
    memcpy (file, xml, xlen);
    memcpy (file + xlen, seal, strlen (seal));
    flen = xlen + strlen (seal);
    assert_int_equal (dist_topo_cache_unseal (file, flen, back, sizeof (back)), (long) xlen);
    assert_string_equal (back, key);
    /* every single changed byte, in the XML or in the seal, is refused
     * (except the key's own text, which is then a different key) */
    for (i = 0; i < flen - 1; i++) {
        char saved = file[i];
        long got;
        file[i] = saved == 'x' ? 'y' : 'x';
        got = dist_topo_cache_unseal (file, flen, back, sizeof (back));
        if (got >= 0)
            assert_string_not_equal (back, key);
        file[i] = saved;
    }
    /* cut anywhere */
    for (i = 0; i < flen; i++)
        assert_int_equal (dist_topo_cache_unseal (file, i, back, sizeof (back)), -1);
    /* no seal at all, a key too long for the caller */
    assert_int_equal (dist_topo_cache_unseal (xml, xlen, back, sizeof (back)), -1);
    assert_int_equal (dist_topo_cache_unseal (file, flen, back, 8), -1);
    /* a seal that does not fit */
    assert_int_equal (dist_topo_cache_seal (xml, xlen, key, seal, 40), -1);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_cache_key),
        cmocka_unit_test (test_cache_round_trip),
        cmocka_unit_test (test_cache_seal),
        cmocka_unit_test (test_site_key),
        cmocka_unit_test (test_site_file_checked_in_a_child),
        cmocka_unit_test (test_site_file_crash_leaves_no_core),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
