/* config.c - parse SPEC (user) and plugstack arguments (admin). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define SPEC_MAX 1024 /* longer than any valid SPEC; bounds hostile input */
#define ARG_KEYS "port_range, ifname, bind, visible, nic, topology, fail_fast, preflight, doctor"

const char dist_spec_help[] =
    "--dist-train[=SPEC], SPEC a comma list of:\n"
    "  torch    set the torchrun environment (default)\n"
    "  jax      the generic variables plus JAX_COORDINATOR_ADDRESS,\n"
    "           JAX_NUM_PROCESSES, JAX_PROCESS_ID\n"
    "  tf       the generic variables plus TF_CONFIG (every task a worker)\n"
    "  launcher one task per node runs torchrun, accelerate or composer:\n"
    "           PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_MASTER_ADDR,\n"
    "           PET_MASTER_PORT, and WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK,\n"
    "           BASE_RANK for the processes the launcher starts\n"
    "  nproc=N  launcher: processes per node (default: the node's GPUs, else 1)\n"
    "  lightning\n"
    "           torch without TORCHELASTIC_*, so that Lightning keeps its\n"
    "           Slurm environment and auto-requeue\n"
    "  submitit torch without MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,\n"
    "           LOCAL_RANK, LOCAL_WORLD_SIZE, which submitit's export() sets;\n"
    "           rank 0's address and port in DIST_TRAIN_MASTER_ADDR/_PORT\n"
    "  off      do nothing for this step\n"
    "  verbose  print what each rank gets\n"
    "  bind=auto|gpu|cpu|none\n"
    "           bind each rank to its GPU(s) and nearby CPUs (auto, the\n"
    "           default), only order CUDA_VISIBLE_DEVICES (gpu), only set the\n"
    "           CPU affinity (cpu), or neither (none)\n"
    "  visible=all|own\n"
    "           CUDA_VISIBLE_DEVICES lists every GPU of the step with the\n"
    "           rank's own at index LOCAL_RANK (all, the default), or only\n"
    "           the rank's own GPUs (own)\n"
    "  fail_fast=on|off\n"
    "           when a task fails, stop every task of the step at once (on,\n"
    "           the default), or let the others run (off)\n"
    "  watchdog=SECONDS\n"
    "           end the step when a rank using the shim has not called\n"
    "           dtshim_progress() for SECONDS (off by default)\n"
    "  preflight\n"
    "           start each rank with dist-train-doctor's check of the step\n"
    "           (addresses, MASTER_PORT, binding); the step fails with its\n"
    "           report when a rank cannot reach rank 0 (Slurm 23.11 or later)\n"
    "  preflight=on|off\n"
    "           the same, or off when the site made it the default\n"
    "  help     print this text\n"
    "The environment variable DIST_TRAIN=SPEC is used when the flag is not given.";

void dist_config_init (struct dist_config *cfg)
{
    memset (cfg, 0, sizeof (*cfg));
    cfg->profile = DIST_PROFILE_OFF;
    cfg->port_lo = DIST_PORT_LO_DEFAULT;
    cfg->port_hi = DIST_PORT_HI_DEFAULT;
    cfg->bind_site = DIST_BIND_AUTO;
    cfg->fail_fast_site = true;
    cfg->fail_fast_user = -1;
    cfg->preflight_user = -1;
#ifdef DIST_TRAIN_DOCTOR
    snprintf (cfg->doctor, sizeof (cfg->doctor), "%s", DIST_TRAIN_DOCTOR);
#else
    snprintf (cfg->doctor, sizeof (cfg->doctor), "dist-train-doctor");
#endif
}

bool dist_config_preflight (const struct dist_config *cfg)
{
    if (cfg->profile == DIST_PROFILE_LAUNCHER)
        return false;
    return cfg->preflight_user < 0 ? cfg->preflight_site : cfg->preflight_user == 1;
}

bool dist_config_fail_fast (const struct dist_config *cfg)
{
    if (!cfg->fail_fast_site || cfg->fail_fast_user < 0)
        return cfg->fail_fast_site;
    return cfg->fail_fast_user == 1;
}

static int parse_on_off (const char *val, bool *on)
{
    if (strcmp (val, "on") == 0)
        *on = true;
    else if (strcmp (val, "off") == 0)
        *on = false;
    else
        return -1;
    return 0;
}

enum dist_bind dist_config_bind (const struct dist_config *cfg)
{
    if (cfg->bind_site == DIST_BIND_NONE || cfg->bind_user == DIST_BIND_UNSET)
        return cfg->bind_site;
    return cfg->bind_user;
}

static int parse_bind (const char *val, enum dist_bind *out)
{
    if (strcmp (val, "auto") == 0)
        *out = DIST_BIND_AUTO;
    else if (strcmp (val, "none") == 0)
        *out = DIST_BIND_NONE;
    else if (strcmp (val, "gpu") == 0)
        *out = DIST_BIND_GPU;
    else if (strcmp (val, "cpu") == 0)
        *out = DIST_BIND_CPU;
    else
        return -1;
    return 0;
}

static int parse_visible (const char *val, bool *own)
{
    if (strcmp (val, "all") == 0)
        *own = false;
    else if (strcmp (val, "own") == 0)
        *own = true;
    else
        return -1;
    return 0;
}

/* SPEC's key=value settings: each parses the value of tok (after the '='). */
static int spec_bind (struct dist_config *cfg, const char *tok, const char *val, char *err,
                      size_t errsz)
{
    if (parse_bind (val, &cfg->bind_user) == 0)
        return 0;
    snprintf (err, errsz, "--dist-train: '%.64s': bind= takes auto, gpu, cpu or none", tok);
    return -1;
}

static int spec_visible (struct dist_config *cfg, const char *tok, const char *val, char *err,
                         size_t errsz)
{
    if (parse_visible (val, &cfg->visible_own) == 0)
        return 0;
    snprintf (err, errsz, "--dist-train: '%.64s': visible= takes all or own", tok);
    return -1;
}

/* A decimal count from lo to hi, digits only; 0 on success. */
static int parse_count (const char *val, unsigned long lo, unsigned long hi, uint32_t *out)
{
    char *end;
    unsigned long n;

    if (val[0] < '0' || val[0] > '9')
        return -1;
    errno = 0;
    n = strtoul (val, &end, 10);
    if (*end != '\0' || errno != 0 || n < lo || n > hi)
        return -1;
    *out = (uint32_t) n;
    return 0;
}

static int spec_watchdog (struct dist_config *cfg, const char *tok, const char *val, char *err,
                          size_t errsz)
{
    if (parse_count (val, 0, 10000000, &cfg->watchdog_s) == 0)
        return 0;
    snprintf (err, errsz, "--dist-train: '%.64s': watchdog= takes seconds, e.g. "
                          "watchdog=600 (0 = off)", tok);
    return -1;
}

static int spec_fail_fast (struct dist_config *cfg, const char *tok, const char *val, char *err,
                           size_t errsz)
{
    bool on;

    if (parse_on_off (val, &on) == 0) {
        cfg->fail_fast_user = on;
        return 0;
    }
    snprintf (err, errsz, "--dist-train: '%.64s': fail_fast= takes on or off", tok);
    return -1;
}

static int spec_preflight (struct dist_config *cfg, const char *tok, const char *val, char *err,
                            size_t errsz)
{
    bool on;

    if (parse_on_off (val, &on) == 0) {
        cfg->preflight_user = on;
        return 0;
    }
    snprintf (err, errsz, "--dist-train: '%.64s': preflight= takes on or off", tok);
    return -1;
}

static int spec_nproc (struct dist_config *cfg, const char *tok, const char *val, char *err,
                       size_t errsz)
{
    if (parse_count (val, 1, DIST_NPROC_MAX, &cfg->nproc) == 0)
        return 0;
    snprintf (err, errsz, "--dist-train: '%.64s': nproc= takes the processes a launcher starts "
                          "on each node, 1 to %d", tok, DIST_NPROC_MAX);
    return -1;
}

/* Every word the parsers accept, in three tables that the parsers dispatch on: what is not
 * here is refused, and dist_config_word() lists them for the documentation's test. */
struct setting {
    const char *key;
    int (*parse) (struct dist_config *cfg, const char *tok, const char *val, char *err,
                  size_t errsz);
};

static const struct setting spec_settings[] = {
    { "bind", spec_bind },
    { "visible", spec_visible },
    { "fail_fast", spec_fail_fast },
    { "watchdog", spec_watchdog },
    { "preflight", spec_preflight },
    { "nproc", spec_nproc },
};

#define SPEC_VERBOSE (-1)
#define SPEC_HELP (-2)
#define SPEC_PREFLIGHT (-3)
static const struct {
    const char *word;
    int profile; /* an enum dist_profile, or SPEC_VERBOSE, SPEC_HELP */
} spec_words[] = {
    { "torch", DIST_PROFILE_TORCH }, { "jax", DIST_PROFILE_JAX }, { "tf", DIST_PROFILE_TF },
    { "off", DIST_PROFILE_OFF },     { "verbose", SPEC_VERBOSE }, { "help", SPEC_HELP },
    { "preflight", SPEC_PREFLIGHT }, { "launcher", DIST_PROFILE_LAUNCHER },
    { "lightning", DIST_PROFILE_LIGHTNING }, { "submitit", DIST_PROFILE_SUBMITIT },
};

const char *dist_profile_name (enum dist_profile profile)
{
    for (size_t i = 0; i < sizeof (spec_words) / sizeof (spec_words[0]); i++)
        if (spec_words[i].profile == (int) profile)
            return spec_words[i].word;
    return "?";
}

#define COUNT(a) (sizeof (a) / sizeof ((a)[0]))

/* The setting of table (n entries) whose key is the klen bytes at key, or NULL. */
static const struct setting *find_setting (const struct setting *table, size_t n,
                                           const char *key, size_t klen)
{
    for (size_t i = 0; i < n; i++)
        if (strlen (table[i].key) == klen && strncmp (table[i].key, key, klen) == 0)
            return &table[i];
    return NULL;
}

static int parse_spec_setting (struct dist_config *cfg, const char *tok,
                               char *err, size_t errsz)
{
    const char *eq = strchr (tok, '=');
    const struct setting *set =
        find_setting (spec_settings, COUNT (spec_settings), tok, (size_t) (eq - tok));

    if (set != NULL)
        return set->parse (cfg, tok, eq + 1, err, errsz);
    snprintf (err, errsz,
              "--dist-train: unknown SPEC setting '%.64s'; valid: bind=auto|gpu|cpu|none, "
              "visible=all|own, fail_fast=on|off, watchdog=SECONDS, preflight=on|off, "
              "nproc=N", tok);
    return -1;
}

int dist_config_parse_spec (struct dist_config *cfg, const char *spec,
                            char *err, size_t errsz)
{
    char buf[SPEC_MAX];
    char *tok, *save = NULL;
    bool profile_seen = false;

    if (spec == NULL)
        spec = "";
    if (strlen (spec) >= sizeof (buf)) {
        snprintf (err, errsz, "--dist-train SPEC is longer than %zu characters",
                  sizeof (buf) - 1);
        return -1;
    }
    strcpy (buf, spec);
    cfg->profile = DIST_PROFILE_TORCH;
    cfg->verbose = false;
    cfg->nproc = 0;
    cfg->help = false;
    for (tok = strtok_r (buf, ",", &save); tok != NULL;
         tok = strtok_r (NULL, ",", &save)) {
        int p = -100;
        if (strchr (tok, '=') != NULL) {
            if (parse_spec_setting (cfg, tok, err, errsz) < 0)
                return -1;
            continue;
        }
        for (size_t i = 0; i < COUNT (spec_words); i++)
            if (strcmp (tok, spec_words[i].word) == 0)
                p = spec_words[i].profile;
        if (p == SPEC_VERBOSE) {
            cfg->verbose = true;
            continue;
        }
        if (p == SPEC_HELP) {
            cfg->help = true;
            continue;
        }
        if (p == SPEC_PREFLIGHT) {
            cfg->preflight_user = 1;
            continue;
        }
        if (p < 0) {
            snprintf (err, errsz,
                      "--dist-train: unknown SPEC token '%.48s'; valid: "
                      "torch, jax, tf, off, launcher, lightning, submitit, verbose, preflight, "
                      "bind=..., visible=..., nproc=..., help (comma-separated)", tok);
            return -1;
        }
        if (profile_seen && (enum dist_profile) p != cfg->profile) {
            snprintf (err, errsz,
                      "--dist-train: SPEC '%.128s' names two profiles; give one of torch, jax, tf, "
                      "launcher, lightning, submitit, off",
                      spec);
            return -1;
        }
        profile_seen = true;
        cfg->profile = (enum dist_profile) p;
    }
    /* (checked once SPEC is read: its order is free) */
    if (cfg->nproc > 0 && cfg->profile != DIST_PROFILE_LAUNCHER) {
        snprintf (err, errsz, "--dist-train: nproc= is for the launcher profile "
                              "(--dist-train=launcher,nproc=N), where one task per node starts "
                              "the ranks; with one task per rank, srun's -n and "
                              "--ntasks-per-node set them");
        return -1;
    }
    if (cfg->preflight_user == 1 && cfg->profile == DIST_PROFILE_LAUNCHER) {
        snprintf (err, errsz, "--dist-train: preflight checks one task per rank, and the "
                              "launcher profile runs one task per node; drop preflight, or run "
                              "`srun --dist-train dist-train-doctor` with one task per rank");
        return -1;
    }
    return 0;
}

/* Parse a decimal port; 0 on success. */
static int parse_port (const char *s, const char *end, unsigned long *port)
{
    char *stop;
    if (s == end || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    *port = strtoul (s, &stop, 10);
    if (errno != 0 || stop != end || *port > 65535)
        return -1;
    return 0;
}

static int parse_port_range (struct dist_config *cfg, const char *val,
                             char *err, size_t errsz)
{
    const char *dash = strchr (val, '-');
    unsigned long lo, hi;

    if (dash == NULL || parse_port (val, dash, &lo) < 0
        || parse_port (dash + 1, dash + 1 + strlen (dash + 1), &hi) < 0) {
        snprintf (err, errsz,
                  "port_range=%.32s: expected LO-HI with ports 1024-65535, e.g. port_range=%d-%d",
                  val, DIST_PORT_LO_DEFAULT, DIST_PORT_HI_DEFAULT);
        return -1;
    }
    if (lo < 1024 || lo > hi) {
        snprintf (err, errsz,
                  "port_range=%.32s: the range is empty or below 1024 "
                  "(tasks cannot bind privileged ports); e.g. port_range=%d-%d",
                  val, DIST_PORT_LO_DEFAULT, DIST_PORT_HI_DEFAULT);
        return -1;
    }
    cfg->port_lo = (uint16_t) lo;
    cfg->port_hi = (uint16_t) hi;
    return 0;
}

static int parse_ifname (struct dist_config *cfg, const char *val,
                         char *err, size_t errsz)
{
    size_t len = strlen (val);
    size_t i;

    if (len == 0 || len >= sizeof (cfg->ifname)) {
        snprintf (err, errsz, "ifname=%.32s: an interface name has 1 to %zu characters",
                  val, sizeof (cfg->ifname) - 1);
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (val[i] == '/' || val[i] <= ' ' || val[i] > '~') {
            snprintf (err, errsz, "ifname=%.32s: not a valid interface name", val);
            return -1;
        }
    }
    memcpy (cfg->ifname, val, len + 1);
    return 0;
}

/* Plugstack keys: each parses its value. */
static int arg_port_range (struct dist_config *cfg, const char *arg, const char *val, char *err,
                           size_t errsz)
{
    (void) arg;
    return parse_port_range (cfg, val, err, errsz);
}

static int arg_ifname (struct dist_config *cfg, const char *arg, const char *val, char *err,
                       size_t errsz)
{
    (void) arg;
    return parse_ifname (cfg, val, err, errsz);
}

static int arg_bind (struct dist_config *cfg, const char *arg, const char *val, char *err,
                     size_t errsz)
{
    (void) arg;
    if (parse_bind (val, &cfg->bind_site) == 0)
        return 0;
    snprintf (err, errsz, "bind=%.32s: expected auto, gpu, cpu or none", val);
    return -1;
}

static int arg_visible (struct dist_config *cfg, const char *arg, const char *val, char *err,
                        size_t errsz)
{
    (void) arg;
    if (parse_visible (val, &cfg->visible_own) == 0)
        return 0;
    snprintf (err, errsz, "visible=%.32s: expected all or own", val);
    return -1;
}

static int arg_fail_fast (struct dist_config *cfg, const char *arg, const char *val, char *err,
                          size_t errsz)
{
    (void) arg;
    if (parse_on_off (val, &cfg->fail_fast_site) == 0)
        return 0;
    snprintf (err, errsz, "fail_fast=%.32s: expected on or off", val);
    return -1;
}

static int arg_nic (struct dist_config *cfg, const char *arg, const char *val, char *err,
                    size_t errsz)
{
    (void) arg;
    if (strcmp (val, "auto") == 0 || strcmp (val, "off") == 0) {
        cfg->nic_auto = strcmp (val, "auto") == 0;
        return 0;
    }
    snprintf (err, errsz, "nic=%.32s: expected auto or off", val);
    return -1;
}

static int arg_topology (struct dist_config *cfg, const char *arg, const char *val, char *err,
                         size_t errsz)
{
    (void) arg;
    if (val[0] == '/' && strlen (val) < sizeof (cfg->topology)) {
        snprintf (cfg->topology, sizeof (cfg->topology), "%s", val);
        return 0;
    }
    snprintf (err, errsz, "topology=%.64s: expected an absolute path to an hwloc XML "
                          "file (lstopo --of xml), shorter than %zu characters",
              val, sizeof (cfg->topology));
    return -1;
}

static int arg_preflight (struct dist_config *cfg, const char *arg, const char *val, char *err,
                          size_t errsz)
{
    (void) arg;
    if (parse_on_off (val, &cfg->preflight_site) == 0)
        return 0;
    snprintf (err, errsz, "preflight=%.32s: expected on or off", val);
    return -1;
}

static int arg_doctor (struct dist_config *cfg, const char *arg, const char *val, char *err,
                       size_t errsz)
{
    (void) arg;
    if (val[0] == '/' && strlen (val) < sizeof (cfg->doctor)) {
        snprintf (cfg->doctor, sizeof (cfg->doctor), "%s", val);
        return 0;
    }
    snprintf (err, errsz, "doctor=%.64s: expected the absolute path of dist-train-doctor, "
                          "shorter than %zu characters",
              val, sizeof (cfg->doctor));
    return -1;
}

static const struct setting plugstack_keys[] = {
    { "port_range", arg_port_range }, { "ifname", arg_ifname }, { "bind", arg_bind },
    { "visible", arg_visible },       { "nic", arg_nic },       { "topology", arg_topology },
    { "fail_fast", arg_fail_fast },   { "preflight", arg_preflight }, { "doctor", arg_doctor },
};

int dist_config_parse_arg (struct dist_config *cfg, const char *arg,
                           char *err, size_t errsz)
{
    const char *eq = strchr (arg, '=');
    const struct setting *set;
    size_t klen;

    if (eq == NULL) {
        snprintf (err, errsz, "plugstack argument '%.64s' is not key=value; valid keys: %s",
                  arg, ARG_KEYS);
        return -1;
    }
    klen = (size_t) (eq - arg);
    if ((set = find_setting (plugstack_keys, COUNT (plugstack_keys), arg, klen)) != NULL)
        return set->parse (cfg, arg, eq + 1, err, errsz);
    snprintf (err, errsz, "unknown plugstack key '%.*s'; valid keys: %s",
              (int) (klen > 64 ? 64 : klen), arg, ARG_KEYS);
    return -1;
}

const char *dist_config_word (size_t i, enum dist_config_word_kind *kind)
{
    if (i < COUNT (spec_words)) {
        *kind = DIST_WORD_SPEC;
        return spec_words[i].word;
    }
    i -= COUNT (spec_words);
    if (i < COUNT (spec_settings)) {
        *kind = DIST_WORD_SPEC_SETTING;
        return spec_settings[i].key;
    }
    i -= COUNT (spec_settings);
    if (i < COUNT (plugstack_keys)) {
        *kind = DIST_WORD_PLUGSTACK;
        return plugstack_keys[i].key;
    }
    return NULL;
}

void dist_printable (char *text)
{
    for (; *text != '\0'; text++)
        if ((unsigned char) *text < 0x20 || (unsigned char) *text == 0x7f)
            *text = '?';
}
