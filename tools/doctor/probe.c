/* probe.c - this node's collective stack as a task sees it: Slurm's MPI
 * plugins, the PMIx library mpi/pmix opens and the one a task loads, the
 * port ranges of the plugin, of Slurm and of the kernel, the interfaces
 * NCCL and gloo are told to use; then stack.c's verdicts, into the rank's
 * record.  Nothing here is linked against Slurm or PMIx: the libraries are
 * opened as Slurm's own plugin opens them, so that a missing one is a
 * finding instead of a doctor that cannot start. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <slurm/slurm_version.h>

#include "doctor.h"
#include "facts.h"
#include "net.h"
#include "probe.h"
#include "stack.h"
#include "libdist/io.h"
#include "libdist/slurmconf.h"

#define CONF_MAX (4 << 20) /* slurm.conf, bytes */
#define PLUGIN_FILE_MAX (64 << 20) /* mpi_pmix.so, bytes */
#define SMALL 64
#define PLUGINS_MAX 16 /* MPI plugins named */

/* The facts, with room for their text. */
struct probe {
    char step_mpi[SMALL], plugins[DOCTOR_LINE_MAX / 4], plugin[SMALL], lib[PATH_MAX];
    char lib_error[DOCTOR_LINE_MAX / 2], server[SMALL], client[SMALL], slurm[SMALL];
    int plugin_pmix;
    char *conf; /* slurm.conf's text, NULL when unreadable */
    size_t conf_len;
    char port_range[SMALL], srun_ports[SMALL], ephemeral[SMALL], reserved[DOCTOR_LINE_MAX / 2];
    struct doctor_port_facts ports;
    char nccl[SMALL], nccl_found[SMALL], gloo[SMALL], gloo_missing[SMALL], chosen[SMALL];
    int family;
};

static void env_text (const char *name, char *out, size_t size)
{
    const char *v = getenv (name);
    doctor_printable (out, size, v != NULL ? v : "");
}

/* The step's slurm.conf: SLURM_CONF (slurmd sets it, configless too), else
 * where this Slurm keeps it. */
static void conf_load (struct probe *p)
{
    const char *path = getenv ("SLURM_CONF");

    if (path == NULL || path[0] != '/')
        path = SLURM_SYSCONFDIR "/slurm.conf";
    p->conf = dist_read_file (path, CONF_MAX, DIST_FILE_ANYONE, &p->conf_len);
}

static bool conf_value (const struct probe *p, const char *key, char *out, size_t size)
{
    char raw[PATH_MAX];

    out[0] = '\0';
    if (p->conf == NULL || !dist_slurm_conf_value (p->conf, p->conf_len, key, raw, sizeof (raw)))
        return false;
    doctor_printable (out, size, raw);
    return true;
}

/* The version PMIx_Get_version of the library at path (a name: the loader's
 * search) reports, as "5.0.8"; else why it did not open, in err. */
static void pmix_version_of (const char *path, char *version, size_t vsize, char *err, size_t esize)
{
    const char *(*get) (void);
    struct doctor_version v;
    const char *why;
    void *h;

    version[0] = '\0';
    if (doctor_linked_static) {
        snprintf (err, esize, "not probed: this doctor is linked statically, for containers");
        return;
    }
    if ((h = dlopen (path, RTLD_LAZY | RTLD_LOCAL)) == NULL) {
        why = dlerror ();
        why = why != NULL ? why : "dlopen failed";
        /* (dlerror starts with the path, which the message names already) */
        if (strncmp (why, path, strlen (path)) == 0 && why[strlen (path)] == ':')
            why += strlen (path) + 1 + strspn (why + strlen (path) + 1, " ");
        doctor_printable (err, esize, why);
        return;
    }
    *(void **) (&get) = dlsym (h, "PMIx_Get_version");
    if (get != NULL && doctor_version_parse (get (), &v) == 0)
        snprintf (version, vsize, "%d.%d.%d", v.major, v.minor, v.micro);
    dlclose (h);
}

/* Where mpi/pmix dlopens its library: the directory and name Slurm's build
 * wrote into it (PMIXP_LIBPATH and "libpmix.so" or, from 23.11, "libpmix.so.2";
 * src/plugins/mpi/pmix/mpi_pmix.c, _libpmix_open).  Found among the plugin's
 * strings: the name, and an absolute directory ending in lib or lib64. */
static void plugin_lib (const char *plugin_path, char *lib, size_t size)
{
    char *text, name[SMALL] = "", dir[PATH_MAX] = "";
    size_t len, i, n;

    lib[0] = '\0';
    if ((text = dist_read_file (plugin_path, PLUGIN_FILE_MAX, DIST_FILE_ANYONE, &len)) == NULL)
        return;
    for (i = 0; i < len; i += n + 1) {
        const char *s = text + i;
        n = strnlen (s, len - i);
        if (name[0] == '\0' && (strcmp (s, "libpmix.so") == 0 || strcmp (s, "libpmix.so.2") == 0))
            snprintf (name, sizeof (name), "%s", s);
        else if (dir[0] == '\0' && s[0] == '/' && n < sizeof (dir) && strchr (s, '%') == NULL
                 && ((n > 4 && strcmp (s + n - 4, "/lib") == 0)
                     || (n > 6 && strcmp (s + n - 6, "/lib64") == 0)))
            memcpy (dir, s, n + 1);
    }
    free (text);
    if (name[0] != '\0')
        snprintf (lib, size, "%s%s%s", dir, dir[0] ? "/" : "", name);
}

static int by_name (const void *a, const void *b)
{
    return strcmp (*(char *const *) a, *(char *const *) b);
}

/* One plugin directory: its MPI plugins into p->plugins, and mpi/pmix's
 * file (mpi_pmix.so's target, else the newest mpi_pmix_vN.so). */
static bool scan_plugin_dir (struct probe *p, const char *dir)
{
    char *names[PLUGINS_MAX], path[PATH_MAX], real[PATH_MAX], pmix[SMALL] = "";
    size_t n = 0, i;
    struct dirent *d;
    DIR *dp = opendir (dir);

    if (dp == NULL)
        return false;
    while ((d = readdir (dp)) != NULL && n < PLUGINS_MAX) {
        size_t len = strlen (d->d_name);
        if (len < 8 || strncmp (d->d_name, "mpi_", 4) != 0 || strcmp (d->d_name + len - 3, ".so"))
            continue;
        if ((names[n] = strndup (d->d_name + 4, len - 7)) != NULL)
            n++;
        if (strncmp (d->d_name, "mpi_pmix_v", 10) == 0 && strcmp (d->d_name, pmix) > 0)
            snprintf (pmix, sizeof (pmix), "%s", d->d_name);
    }
    closedir (dp);
    qsort (names, n, sizeof (names[0]), by_name);
    for (i = 0; i < n; i++) {
        if (strlen (p->plugins) + strlen (names[i]) + 2 < sizeof (p->plugins))
            snprintf (p->plugins + strlen (p->plugins), sizeof (p->plugins) - strlen (p->plugins),
                      "%s%s", p->plugins[0] ? "," : "", names[i]);
        free (names[i]);
    }
    /* --mpi=pmix loads mpi_pmix.so, in Debian a link to the versioned one */
    snprintf (path, sizeof (path), "%s/mpi_pmix.so", dir);
    if (realpath (path, real) != NULL)
        snprintf (pmix, sizeof (pmix), "%.60s", strrchr (real, '/') + 1);
    if (pmix[0] != '\0' && p->plugin[0] == '\0') {
        snprintf (p->plugin, sizeof (p->plugin), "%s", pmix);
        p->plugin_pmix = atoi (pmix + strlen ("mpi_pmix_v"));
        snprintf (path, sizeof (path), "%s/%s", dir, pmix);
        plugin_lib (path, p->lib, sizeof (p->lib));
    }
    return n > 0;
}

/* Slurm's PluginDir (a colon list), else the directory this Slurm's
 * plugins were installed in. */
static void probe_mpi (struct probe *p)
{
    char dirs[PATH_MAX], *dir, *save = NULL;

    env_text ("SLURM_MPI_TYPE", p->step_mpi, sizeof (p->step_mpi));
    /* (srun without --mpi: slurm.conf's default, which Slurm names "none" too) */
    if (p->step_mpi[0] == '\0' && conf_value (p, "MpiDefault", dirs, sizeof (dirs)))
        snprintf (p->step_mpi, sizeof (p->step_mpi), "%.32s", dirs);
    snprintf (p->slurm, sizeof (p->slurm), "%d.%02d.%d", SLURM_VERSION_MAJOR (SLURM_VERSION_NUMBER),
              SLURM_VERSION_MINOR (SLURM_VERSION_NUMBER),
              SLURM_VERSION_MICRO (SLURM_VERSION_NUMBER));
    if (!conf_value (p, "PluginDir", dirs, sizeof (dirs)))
        snprintf (dirs, sizeof (dirs), "%s", DOCTOR_SLURM_PLUGINDIR);
    for (dir = strtok_r (dirs, ":", &save); dir != NULL; dir = strtok_r (NULL, ":", &save))
        if (scan_plugin_dir (p, dir))
            break;
    if (p->plugin[0] != '\0' && p->lib[0] != '\0')
        pmix_version_of (p->lib, p->server, sizeof (p->server), p->lib_error,
                         sizeof (p->lib_error));
    /* the server's own version, when this step runs under mpi/pmix */
    if (getenv ("PMIX_VERSION") != NULL) {
        struct doctor_version v;
        if (doctor_version_parse (getenv ("PMIX_VERSION"), &v) == 0)
            snprintf (p->server, sizeof (p->server), "%d.%d.%d", v.major, v.minor, v.micro);
    }
    {
        char ignored[DOCTOR_LINE_MAX / 2];
        pmix_version_of ("libpmix.so.2", p->client, sizeof (p->client), ignored, sizeof (ignored));
    }
}

/* A one-line /proc/sys file, its blanks made spaces. */
static void sysctl_text (const char *path, char *out, size_t size)
{
    size_t len;
    char *text = dist_read_file (path, 4096, DIST_FILE_ANYONE, &len);

    out[0] = '\0';
    if (text == NULL)
        return;
    text[strcspn (text, "\n")] = '\0';
    for (char *c = text; *c; c++)
        if (*c == '\t')
            *c = ' ';
    doctor_printable (out, size, text);
    free (text);
}

static void probe_ports (struct probe *p)
{
    env_text ("DIST_TRAIN_PORT_RANGE", p->port_range, sizeof (p->port_range));
    (void) doctor_range_parse (p->port_range, &p->ports.plugin);
    (void) conf_value (p, "SrunPortRange", p->srun_ports, sizeof (p->srun_ports));
    (void) doctor_range_parse (p->srun_ports, &p->ports.srun);
    sysctl_text ("/proc/sys/net/ipv4/ip_local_port_range", p->ephemeral, sizeof (p->ephemeral));
    if (doctor_range_parse (p->ephemeral, &p->ports.ephemeral) == 0)
        snprintf (p->ephemeral, sizeof (p->ephemeral), "%ld-%ld", p->ports.ephemeral.lo,
                  p->ports.ephemeral.hi);
    sysctl_text ("/proc/sys/net/ipv4/ip_local_reserved_ports", p->reserved, sizeof (p->reserved));
    p->ports.reserved = p->reserved;
    p->ports.master_port = -1;
    if (getenv ("MASTER_PORT") != NULL)
        p->ports.master_port = strtol (getenv ("MASTER_PORT"), NULL, 10);
}

/* The interfaces NCCL and gloo are told to use, and whether gloo's exist
 * here with an address of rank 0's family. */
static void probe_ifnames (struct probe *p, const struct doctor_rank *self)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char list[SMALL], exact[SMALL + 1], *name, *save = NULL;

    env_text ("NCCL_SOCKET_IFNAME", p->nccl, sizeof (p->nccl));
    env_text ("GLOO_SOCKET_IFNAME", p->gloo, sizeof (p->gloo));
    env_text ("DIST_TRAIN_IFNAME", p->chosen, sizeof (p->chosen));
    p->family = doctor_sockaddr (self->master_addr, self->master_port, &ss, &len) == 0
                    ? ss.ss_family
                    : AF_INET;
    if (p->nccl[0] != '\0' && p->nccl[0] != '^')
        (void) doctor_interface_address (p->nccl, p->family, &ss, p->nccl_found,
                                         sizeof (p->nccl_found));
    /* gloo takes exact names, a comma list */
    snprintf (list, sizeof (list), "%s", p->gloo);
    for (name = strtok_r (list, ",", &save); name != NULL; name = strtok_r (NULL, ",", &save)) {
        char found[SMALL];
        snprintf (exact, sizeof (exact), "=%s", name);
        if (doctor_interface_address (exact, p->family, &ss, found, sizeof (found)) < 0) {
            snprintf (p->gloo_missing, sizeof (p->gloo_missing), "%s", name);
            break;
        }
    }
}

/* The node's stack in one line, for its line in the report. */
static void summary (const struct probe *p, char *out, size_t size)
{
    char pmix[96];

    if (p->plugin[0] == '\0')
        snprintf (pmix, sizeof (pmix), "no mpi/pmix");
    else
        snprintf (pmix, sizeof (pmix), "PMIx %.16s (server), %.16s (client)",
                  p->server[0] ? p->server : "?", p->client[0] ? p->client : "none");
    snprintf (out, size,
              "MPI plugins %.100s (this step: %.16s); %s; ports %.16s (SrunPortRange %.16s, "
              "ephemeral %.16s); NCCL/gloo via %.32s/%.32s",
              p->plugins[0] ? p->plugins : "none found", p->step_mpi[0] ? p->step_mpi : "none",
              pmix, p->port_range[0] ? p->port_range : "?",
              p->srun_ports[0] ? p->srun_ports : "unset", p->ephemeral[0] ? p->ephemeral : "?",
              p->nccl_found[0] ? p->nccl_found
              : p->nccl[0]     ? p->nccl
                               : "-",
              p->gloo[0] ? p->gloo : "-");
}

/* Run one check; its line, when it found something, into the next finding. */
static void record (struct doctor_rank *self, size_t *n, enum doctor_verdict v, const char *msg)
{
    if (v == DOCTOR_FINE || *n >= DOCTOR_FINDINGS_MAX)
        return;
    snprintf (self->finding[(*n)++], DOCTOR_LINE_MAX, "%s: %s",
              v == DOCTOR_FAIL ? "problem" : "warning", msg);
}

void doctor_probe_stack (struct doctor_rank *self)
{
    struct probe p;
    char msg[DOCTOR_LINE_MAX - sizeof ("warning: ")];
    size_t n = 0;

    memset (&p, 0, sizeof (p));
    conf_load (&p);
    probe_mpi (&p);
    probe_ports (&p);
    probe_ifnames (&p, self);
    free (p.conf);
    struct doctor_pmix_facts pf = {p.step_mpi,  p.plugin, p.plugin_pmix, p.lib,
                                   p.lib_error, p.server, p.client,      p.slurm};
    struct doctor_ifname_facts inf = {p.nccl,   p.nccl_found,
                                      p.gloo,   p.gloo_missing,
                                      p.chosen, p.family == AF_INET6 ? "IPv6" : "IPv4"};
    record (self, &n, doctor_check_pmix_lib (&pf, msg, sizeof (msg)), msg);
    record (self, &n, doctor_check_pmix_hang (&pf, msg, sizeof (msg)), msg);
    record (self, &n, doctor_check_srun_ports (&p.ports, msg, sizeof (msg)), msg);
    record (self, &n, doctor_check_ephemeral_ports (&p.ports, msg, sizeof (msg)), msg);
    record (self, &n, doctor_check_ifnames (&inf, msg, sizeof (msg)), msg);
    summary (&p, self->stack, sizeof (self->stack));
}
