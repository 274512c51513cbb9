/* config.h - what a user (SPEC) and an admin (plugstack.conf) can ask of dist-train.
 *
 * Pure parsing: no Slurm, no I/O.  Every error message names the bad token
 * and says what is valid, so the front ends can pass it on unchanged.
 */
#ifndef DIST_CONFIG_H
#define DIST_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIST_IFNAME_MAX 16 /* IFNAMSIZ, including the NUL */
/* The room for a message: the longest, for an unknown SPEC token, lists every SPEC word,
 * and new words must still fit (test_config checks that it ends whole). */
#define DIST_ERR_MAX 512

/* Default port range: below Linux's ephemeral range (32768-60999), so
 * ports the kernel hands out to outgoing connections never collide. */
#define DIST_PORT_LO_DEFAULT 20000
#define DIST_PORT_HI_DEFAULT 32767

enum dist_profile {
    DIST_PROFILE_OFF = 0,
    DIST_PROFILE_TORCH,
    DIST_PROFILE_JAX,
    DIST_PROFILE_TF,
    DIST_PROFILE_LAUNCHER, /* one task per node runs torchrun/accelerate/composer */
    DIST_PROFILE_LIGHTNING, /* torch without TORCHELASTIC_*: Lightning stays on Slurm */
    DIST_PROFILE_SUBMITIT, /* torch without what submitit's export() writes */
};

/* The largest nproc= (processes a launcher starts on one node). */
#define DIST_NPROC_MAX 1024

/* What binding applies: GPUs (CUDA_VISIBLE_DEVICES order) and
 * CPUs (affinity), both, or neither. */
enum dist_bind {
    DIST_BIND_UNSET = 0, /* SPEC did not say: the site's choice */
    DIST_BIND_AUTO, /* GPUs and CPUs (the default) */
    DIST_BIND_NONE,
    DIST_BIND_GPU,
    DIST_BIND_CPU,
};

/* What preflight's checks of the paths between nodes do with what they find
 * (fabric=): the doctor's --fabric takes the same words. */
enum dist_fabric {
    DIST_FABRIC_UNSET = 0, /* SPEC did not say: the site's choice */
    DIST_FABRIC_FAIL, /* a blocked port or an MTU mismatch fails the step (the default) */
    DIST_FABRIC_WARN, /* everything the checks find is only a warning */
    DIST_FABRIC_OFF, /* the paths are not checked */
};

#define DIST_PATH_MAX 512

/* hang=: shorter than this, a slow collective or a pause for I/O would stop
 * a healthy step; longer than a time limit is pointless. */
#define DIST_HANG_MIN_S 10
#define DIST_HANG_MAX_S 10000000

struct dist_config {
    enum dist_profile profile;
    bool verbose;
    bool help; /* SPEC asked for the help text */
    uint16_t port_lo; /* MASTER_PORT range, inclusive */
    uint16_t port_hi;
    char ifname[DIST_IFNAME_MAX]; /* admin-forced interface, "" = find it */
    enum dist_bind bind_site; /* plugstack bind=, AUTO by default */
    enum dist_bind bind_user; /* SPEC bind=, UNSET if not given */
    bool visible_own; /* CUDA_VISIBLE_DEVICES: only the rank's own GPUs */
    bool nic_auto; /* export NCCL_IB_HCA/UCX_NET_DEVICES (plugstack nic=auto) */
    char topology[DIST_PATH_MAX]; /* plugstack topology=FILE, "" = hwloc's sources */
    bool fail_fast_site; /* plugstack fail_fast=, on by default */
    int fail_fast_user; /* SPEC fail_fast=: -1 not given, 0 off, 1 on */
    uint32_t watchdog_s; /* SPEC watchdog=: DIST_TRAIN_WATCHDOG, 0 = off */
    uint32_t hang_site; /* plugstack hang=: seconds, 0 = off (the default) */
    int hang_user; /* SPEC hang=: seconds, 0 = off, -1 not given */
    bool preflight_site; /* plugstack preflight=, off by default */
    int preflight_user; /* SPEC preflight / preflight=: -1 not given, 0, 1 */
    enum dist_fabric fabric_site; /* plugstack fabric=, FAIL by default */
    enum dist_fabric fabric_user; /* SPEC fabric=, UNSET if not given */
    char doctor[DIST_PATH_MAX]; /* plugstack doctor=PATH: dist-train-doctor */
    uint32_t nproc; /* SPEC nproc=: launcher's processes per node, 0 = find */
    bool rank_order_topology; /* SPEC rank_order=topology: ranks follow the network */
};

/* The profile's name as SPEC spells it ("torch", "launcher" ...). */
const char *dist_profile_name (enum dist_profile profile);

/* Whether each step starts with dist-train-doctor's check: the user's choice, else the
 * site's default; never for the launcher profile, whose one task per node is not a rank. */
bool dist_config_preflight (const struct dist_config *cfg);

/* The seconds without progress on any rank after which the step is stopped
 * (hang=): the user's choice, else the site's default; 0 for off, and for the
 * launcher profile, whose one task per node is not a rank. */
uint32_t dist_config_hang (const struct dist_config *cfg);

/* What preflight's checks of the paths between nodes do (fabric=): the user's
 * choice, else the site's; never DIST_FABRIC_UNSET.  Only preflight reads it. */
enum dist_fabric dist_config_fabric (const struct dist_config *cfg);

/* Whether one failed task stops the whole step: the site's "off" cannot be
 * overridden; else the user's choice, else on. */
bool dist_config_fail_fast (const struct dist_config *cfg);

/* The binding that applies: the site's "none" cannot be overridden; else
 * the user's choice, else the site's. */
enum dist_bind dist_config_bind (const struct dist_config *cfg);

/* Fill in the defaults: profile off, no verbose, the default port range. */
void dist_config_init (struct dist_config *cfg);

/* Apply a user SPEC ("torch", "off", "torch,verbose", "" = torch) to cfg.
 * On error returns -1 with a message in err; cfg may be partly changed. */
int dist_config_parse_spec (struct dist_config *cfg, const char *spec, char *err, size_t errsz);

/* Apply one plugstack.conf argument ("key=value") to cfg.
 * Unknown keys and bad values return -1 with a message in err. */
int dist_config_parse_arg (struct dist_config *cfg, const char *arg, char *err, size_t errsz);

/* Make a message safe for a log line: every byte below 0x20 and 0x7f (a
 * newline that would forge a line of slurmd's log, an escape sequence)
 * becomes '?'.  Applied to every message that repeats what a user gave. */
void dist_printable (char *text);

/* The words the parsers accept, from their one table: SPEC tokens (torch, verbose ...),
 * SPEC settings (bind= ...) and plugstack keys (port_range= ...). Entry i, or NULL past the
 * last; *kind says which. The documentation's test checks each is documented. */
enum dist_config_word_kind {
    DIST_WORD_SPEC,
    DIST_WORD_SPEC_SETTING,
    DIST_WORD_PLUGSTACK,
};
const char *dist_config_word (size_t i, enum dist_config_word_kind *kind);

/* Entry i's value syntax in buf ("auto|gpu|cpu|none", "SECONDS"; "" for a SPEC token),
 * or NULL past the last entry. */
const char *dist_config_word_syntax (size_t i, char *buf, size_t size);

/* Texts made from the same table, each built once: what --dist-train=help prints, the
 * one paragraph for srun --help (struct spank_option's usage), and the plugstack.conf
 * arguments with what each does. */
const char *dist_config_help (void);
const char *dist_config_usage (void);
const char *dist_config_plugstack_help (void);

#endif /* DIST_CONFIG_H */
