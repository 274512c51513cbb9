/* stack.h - the collective stack a node gives a step, judged: Slurm's MPI
 * plugins and the PMIx library mpi/pmix opens, the PMIx versions, the port
 * ranges, the interfaces NCCL and gloo use.
 *
 * Pure: the facts probe.c gathered go in, a verdict and one line come out
 * that names the problem and the fix; so each bad case is a unit test. */
#ifndef DOCTOR_STACK_H
#define DOCTOR_STACK_H

#include <stdbool.h>
#include <stddef.h>

enum doctor_verdict {
    DOCTOR_FINE,
    DOCTOR_WARN, /* a risk, or a step that does not use it: the step goes on */
    DOCTOR_FAIL, /* this step will fail or hang on it: the doctor fails */
};

/* A release "5.0.8", "22.05.8", or the first one in "OpenPMIx 5.0.8rc1 (...)". */
struct doctor_version {
    int major, minor, micro;
};

/* 0, or -1 when text names no MAJOR.MINOR[.MICRO]. */
int doctor_version_parse (const char *text, struct doctor_version *v);

/* Strings are "" when unknown or absent, never NULL. */
struct doctor_pmix_facts {
    const char *step_mpi; /* SLURM_MPI_TYPE: the step's MPI plugin, "" when srun named none */
    const char *plugin; /* the file mpi/pmix loads, "mpi_pmix_v4.so"; "" when Slurm has none */
    int plugin_pmix; /* the N of mpi_pmix_vN.so: the PMIx it was built for; 0 unknown */
    const char *lib; /* the library that plugin opens */
    const char *lib_error; /* why it cannot be opened; "" when it can */
    const char *server; /* the PMIx of Slurm's server: PMIX_VERSION, else lib's */
    const char *client; /* the PMIx a task loads (libpmix.so.2) */
    const char *slurm; /* Slurm's release */
};

/* Can mpi/pmix load its library here?  A step that names mpi/pmix could not
 * have started without it, so the verdict is at most DOCTOR_WARN. */
enum doctor_verdict doctor_check_pmix_lib (const struct doctor_pmix_facts *f, char *msg,
                                           size_t size);

/* Does this Slurm's mpi/pmix with this PMIx server hang every client in
 * PMIx_Init?  DOCTOR_FAIL when the step uses mpi/pmix, else DOCTOR_WARN. */
enum doctor_verdict doctor_check_pmix_hang (const struct doctor_pmix_facts *f, char *msg,
                                            size_t size);

/* Whether PMIx server release pmix hangs its clients under Slurm release
 * slurm, whose mpi/pmix was built for PMIx plugin_pmix (0: unknown). */
bool doctor_pmix_hangs (const struct doctor_version *slurm, int plugin_pmix,
                        const struct doctor_version *pmix);

/* An inclusive range of ports; lo < 0 when unknown or unset. */
struct doctor_range {
    long lo, hi;
};

/* "20000-32767" (or "32768\t60999", as /proc writes it) into r; -1 when
 * text is not such a range, r then unknown. */
int doctor_range_parse (const char *text, struct doctor_range *r);

struct doctor_port_facts {
    struct doctor_range plugin; /* the plugin's port_range (DIST_TRAIN_PORT_RANGE) */
    struct doctor_range srun; /* slurm.conf's SrunPortRange */
    struct doctor_range ephemeral; /* net.ipv4.ip_local_port_range */
    const char *reserved; /* net.ipv4.ip_local_reserved_ports, "8080,9000-9100" */
    long master_port; /* this step's, -1 unknown */
};

/* The plugin's range against SrunPortRange, and against the kernel's
 * ephemeral ports that ip_local_reserved_ports does not keep out: at most
 * DOCTOR_WARN, since a collision depends on what else runs. */
enum doctor_verdict doctor_check_srun_ports (const struct doctor_port_facts *f, char *msg,
                                             size_t size);
enum doctor_verdict doctor_check_ephemeral_ports (const struct doctor_port_facts *f, char *msg,
                                                  size_t size);

struct doctor_ifname_facts {
    const char *nccl; /* NCCL_SOCKET_IFNAME as set */
    const char *nccl_found; /* the interface it names here, "" unknown */
    const char *gloo; /* GLOO_SOCKET_IFNAME as set */
    const char *gloo_missing; /* a name in it without an address of rank 0's family */
    const char *plugin; /* DIST_TRAIN_IFNAME: the interface the plugin chose */
    const char *family; /* "IPv4" or "IPv6", rank 0's */
};

/* gloo on an interface without an address fails (DOCTOR_FAIL); NCCL, gloo
 * and the plugin on different interfaces is DOCTOR_WARN. */
enum doctor_verdict doctor_check_ifnames (const struct doctor_ifname_facts *f, char *msg,
                                          size_t size);

#endif /* DOCTOR_STACK_H */
