/* stack.c - the verdicts on a node's collective stack (stack.h): each check
 * takes the facts and says, in one line, what is wrong and what to do. */
#include <stdio.h>
#include <string.h>

#include "stack.h"
#include "libdist/ranges.h"

#define PORT_MAX 65535

int doctor_version_parse (const char *text, struct doctor_version *v)
{
    const char *p = text;
    int n, used;

    v->major = v->minor = v->micro = -1;
    while (*p != '\0' && (*p < '0' || *p > '9'))
        p++;
    /* (%n: a bounded scan of a few digits, not of the caller's whole text) */
    n = sscanf (p, "%4d.%4d%n", &v->major, &v->minor, &used);
    if (n < 2 || v->major < 0 || v->minor < 0) {
        v->major = v->minor = -1;
        return -1;
    }
    p += used;
    if (*p == '.' && sscanf (p + 1, "%4d", &v->micro) != 1)
        v->micro = -1;
    if (v->micro < 0)
        v->micro = 0;
    return 0;
}

/* a against major.minor.micro: <0, 0, >0 */
static int version_cmp (const struct doctor_version *a, int major, int minor, int micro)
{
    if (a->major != major)
        return a->major - major;
    if (a->minor != minor)
        return a->minor - minor;
    return a->micro - micro;
}

/* From PMIx 5.0.8 on (and in 6.x), the server library hands Slurm's
 * client_connected a callback and waits for it (PMIx's
 * ptl_base_connection_hdlr.c); 5.0.7 and before passed NULL.  Slurm's
 * mpi/pmix calls it: never before 25.05.2, always in 25.05.2 and 25.05.3,
 * only when built for PMIx 6 from 25.05.4 to 25.11.1, for PMIx 5 or later
 * from 25.11.2 (pmixp_client_v2.c, _client_connected). */
bool doctor_pmix_hangs (const struct doctor_version *slurm, int plugin_pmix,
                        const struct doctor_version *pmix)
{
    int built = plugin_pmix > 0 ? plugin_pmix : pmix->major;

    if (version_cmp (pmix, 5, 0, 8) < 0)
        return false;
    if (version_cmp (slurm, 25, 5, 2) < 0)
        return true;
    if (version_cmp (slurm, 25, 5, 4) < 0)
        return false;
    if (version_cmp (slurm, 25, 11, 2) < 0)
        return built < 6;
    return built < 5;
}

static bool uses_pmix (const struct doctor_pmix_facts *f)
{
    return strncmp (f->step_mpi, "pmix", 4) == 0;
}

enum doctor_verdict doctor_check_pmix_hang (const struct doctor_pmix_facts *f, char *msg,
                                            size_t size)
{
    struct doctor_version slurm, server;

    msg[0] = '\0';
    if (f->plugin[0] == '\0' || doctor_version_parse (f->slurm, &slurm) < 0
        || doctor_version_parse (f->server, &server) < 0
        || !doctor_pmix_hangs (&slurm, f->plugin_pmix, &server))
        return DOCTOR_FINE;
    snprintf (msg, size,
              "PMIx %d.%d.%d (Slurm's PMIx server) under Slurm %.16s's mpi/pmix (%.32s): "
              "PMIx 5.0.8 and later wait for a call this mpi/pmix never makes, so every "
              "PMIx client %s in PMIx_Init; upgrade Slurm to 25.11.2 or later, or install a "
              "PMIx older than 5.0.8 on this node",
              server.major, server.minor, server.micro, f->slurm, f->plugin,
              uses_pmix (f) ? "of this step hangs" : "(srun --mpi=pmix) hangs");
    return uses_pmix (f) ? DOCTOR_FAIL : DOCTOR_WARN;
}

/* The Debian package that ships the name mpi/pmix opens: Debian 12's Slurm
 * opens the unversioned name, which only the -dev package has. */
static const char *package_of (const char *lib)
{
    size_t n = strlen (lib);

    if (n >= 11 && strcmp (lib + n - 11, "/libpmix.so") == 0)
        return "libpmix-dev (on Debian 12 only it has the unversioned libpmix.so)";
    if (n >= 13 && strcmp (lib + n - 13, "/libpmix.so.2") == 0)
        return "libpmix2 (Debian 13: libpmix2t64)";
    return "the PMIx release this Slurm was built for";
}

enum doctor_verdict doctor_check_pmix_lib (const struct doctor_pmix_facts *f, char *msg,
                                           size_t size)
{
    msg[0] = '\0';
    if (f->plugin[0] == '\0' || f->lib_error[0] == '\0')
        return DOCTOR_FINE;
    snprintf (msg, size,
              "mpi/pmix (%.32s) cannot open %.120s (%.100s): srun --mpi=pmix fails here with "
              "\"can not load PMIx library\"; install %s",
              f->plugin, f->lib[0] ? f->lib : "its PMIx library", f->lib_error,
              package_of (f->lib));
    return DOCTOR_WARN;
}

int doctor_range_parse (const char *text, struct doctor_range *r)
{
    long lo, hi;
    int used = 0;

    r->lo = r->hi = -1;
    if (text == NULL || sscanf (text, "%6ld%*[- \t]%6ld%n", &lo, &hi, &used) != 2
        || text[used + strspn (text + used, " \t\n")] != '\0' || lo < 0 || hi < lo || hi > PORT_MAX)
        return -1;
    r->lo = lo;
    r->hi = hi;
    return 0;
}

/* The ports a and b share into out; false when none. */
static bool overlap (const struct doctor_range *a, const struct doctor_range *b,
                     struct doctor_range *out)
{
    if (a->lo < 0 || b->lo < 0)
        return false;
    out->lo = a->lo > b->lo ? a->lo : b->lo;
    out->hi = a->hi < b->hi ? a->hi : b->hi;
    return out->lo <= out->hi;
}

enum doctor_verdict doctor_check_srun_ports (const struct doctor_port_facts *f, char *msg,
                                             size_t size)
{
    struct doctor_range both;

    msg[0] = '\0';
    if (!overlap (&f->plugin, &f->srun, &both))
        return DOCTOR_FINE;
    snprintf (msg, size,
              "port_range %ld-%ld overlaps SrunPortRange %ld-%ld (slurm.conf): srun listens on "
              "those ports where it runs, often rank 0's node, and can hold MASTER_PORT; ask "
              "the admin to move port_range (plugstack.conf) or SrunPortRange apart",
              f->plugin.lo, f->plugin.hi, f->srun.lo, f->srun.hi);
    return DOCTOR_WARN;
}

/* The ports of a range that ip_local_reserved_ports keeps out. */
struct reserved_count {
    struct doctor_range within;
    long count;
};

static int count_reserved (long lo, long hi, void *arg)
{
    struct reserved_count *rc = arg;
    struct doctor_range r = {lo, hi}, both;

    if (overlap (&r, &rc->within, &both))
        rc->count += both.hi - both.lo + 1;
    return 0;
}

static bool reserved (const char *list, const struct doctor_range *r)
{
    struct reserved_count rc = {*r, 0};

    if (list[0] == '\0' || dist_ranges_parse (list, PORT_MAX, count_reserved, &rc) < 0)
        return false;
    return rc.count >= r->hi - r->lo + 1;
}

enum doctor_verdict doctor_check_ephemeral_ports (const struct doctor_port_facts *f, char *msg,
                                                  size_t size)
{
    struct doctor_range both, mine = {f->master_port, f->master_port}, none = {0, -1};
    char step[64] = "";
    /* (the sysctl line keeps the ports already reserved, only when they are a list) */
    const char *kept = reserved (f->reserved, &none) ? f->reserved : "";

    msg[0] = '\0';
    if (!overlap (&f->plugin, &f->ephemeral, &both) || reserved (f->reserved, &both))
        return DOCTOR_FINE;
    if (f->master_port >= both.lo && f->master_port <= both.hi && !reserved (f->reserved, &mine))
        snprintf (step, sizeof (step), ", this step's MASTER_PORT %ld among them", f->master_port);
    snprintf (msg, size,
              "port_range %ld-%ld overlaps the kernel's ephemeral ports %ld-%ld "
              "(net.ipv4.ip_local_port_range)%s: any outgoing connection on this node can take "
              "MASTER_PORT before rank 0 binds it; keep port_range below %ld, or reserve the "
              "ports: sysctl -w net.ipv4.ip_local_reserved_ports=%.100s%s%ld-%ld",
              f->plugin.lo, f->plugin.hi, f->ephemeral.lo, f->ephemeral.hi, step, f->ephemeral.lo,
              kept, kept[0] ? "," : "", both.lo, both.hi);
    return DOCTOR_WARN;
}

/* The first name of a comma list, into out. */
static void first_name (const char *list, char *out, size_t size)
{
    snprintf (out, size, "%.*s", (int) strcspn (list, ","), list);
}

/* Two interface names, both known, that are not the same. */
static bool differs (const char *value, const char *ref)
{
    return value[0] != '\0' && ref[0] != '\0' && strcmp (value, ref) != 0;
}

enum doctor_verdict doctor_check_ifnames (const struct doctor_ifname_facts *f, char *msg,
                                          size_t size)
{
    char nccl[64], gloo[64];

    msg[0] = '\0';
    if (f->gloo[0] != '\0' && f->gloo_missing[0] != '\0') {
        snprintf (msg, size,
                  "GLOO_SOCKET_IFNAME=%.64s: %.32s has no %s address here, so gloo cannot start "
                  "on it; unset GLOO_SOCKET_IFNAME%s%.32s%s, or name an interface that reaches "
                  "rank 0 (ip -br addr)",
                  f->gloo, f->gloo_missing, f->family, f->plugin[0] ? " (the plugin chose " : "",
                  f->plugin, f->plugin[0] ? ")" : "");
        return DOCTOR_FAIL;
    }
    /* NCCL's "^name" excludes and lets the routes choose: nothing to compare */
    snprintf (nccl, sizeof (nccl), "%.63s",
              f->nccl_found[0]    ? f->nccl_found
              : f->nccl[0] != '^' ? f->nccl
                                  : "");
    first_name (f->gloo, gloo, sizeof (gloo));
    if (!differs (nccl, gloo) && !differs (nccl, f->plugin) && !differs (gloo, f->plugin))
        return DOCTOR_FINE;
    snprintf (msg, size,
              "NCCL_SOCKET_IFNAME=%.64s (%.32s), GLOO_SOCKET_IFNAME=%.64s and the plugin's "
              "choice %.32s disagree: NCCL and gloo then take other ways than the one the plugin "
              "found towards rank 0, and the doctor tried only NCCL's; unset both, or set both "
              "to one interface that reaches rank 0",
              f->nccl[0] ? f->nccl : "(unset)", nccl[0] ? nccl : "?",
              f->gloo[0] ? f->gloo : "(unset)", f->plugin[0] ? f->plugin : "(unknown)");
    return DOCTOR_WARN;
}
