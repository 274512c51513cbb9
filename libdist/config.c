/* config.c - parse SPEC (user) and plugstack arguments (admin), both driven by one table of
 * the words they accept, from which the help, the usage and every "valid: ..." come too. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define SPEC_MAX 1024 /* longer than any valid SPEC; bounds hostile input */

/* The profile of a SPEC that names none ("", "verbose"). */
#define PROFILE_DEFAULT DIST_PROFILE_TORCH

#define STR(x) STR_ (x)
#define STR_(x) #x
#define COUNT(a) (sizeof (a) / sizeof ((a)[0]))

/* A text that grows by printf into a fixed buffer; what does not fit is cut, and the text
 * stays NUL-terminated, so every message and help text is bounded by its buffer. */
struct text {
    char *s;
    size_t size, len;
};

static void put (struct text *t, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void put (struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (t->len + 1 >= t->size)
        return;
    va_start (ap, fmt);
    n = vsnprintf (t->s + t->len, t->size - t->len, fmt, ap);
    va_end (ap);
    if (n > 0)
        t->len = t->len + (size_t) n < t->size ? t->len + (size_t) n : t->size - 1;
}

/* A word's value spelled by name: the choice words of an on/off or enum setting. */
struct choice {
    const char *word;
    int value;
};

static const struct choice on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};
static const struct choice bind_choices[] = {
    {"auto", DIST_BIND_AUTO},
    {"gpu", DIST_BIND_GPU},
    {"cpu", DIST_BIND_CPU},
    {"none", DIST_BIND_NONE},
    {NULL, 0},
};
static const struct choice fabric_choices[] = {
    {"fail", DIST_FABRIC_FAIL},
    {"warn", DIST_FABRIC_WARN},
    {"off", DIST_FABRIC_OFF},
    {NULL, 0},
};
static const struct choice visible_choices[] = {{"all", 0}, {"own", 1}, {NULL, 0}};
static const struct choice rank_order_choices[] = {{"slurm", 0}, {"topology", 1}, {NULL, 0}};
static const struct choice nic_choices[] = {{"auto", 1}, {"off", 0}, {NULL, 0}};

/* The type of the field of struct dist_config that a word sets. */
enum field_type {
    FIELD_BOOL,
    FIELD_INT, /* int, and the enums (which are int-sized: checked below) */
    FIELD_U32,
    FIELD_STR, /* a char array of the field's size */
};

_Static_assert(sizeof (enum dist_profile) == sizeof (int), "FIELD_INT stores an int");
_Static_assert(sizeof (enum dist_bind) == sizeof (int), "FIELD_INT stores an int");
_Static_assert(sizeof (enum dist_fabric) == sizeof (int), "FIELD_INT stores an int");

/* What a setter works on: the config, the token or argument for messages, and what a SPEC
 * has seen so far. */
struct parse {
    struct dist_config *cfg;
    const char *tok; /* the whole token ("bind=gpu") or plugstack argument */
    char *err;
    size_t errsz;
    const char *spec; /* the whole SPEC, for the two-profiles message */
    bool profile_seen;
};

struct word;
/* Apply val (NULL for a SPEC token) to p->cfg.  On a bad value return -1, with a message in
 * p->err or with p->err left empty for the generic "takes ..." of the word. */
typedef int setter (struct parse *p, const struct word *w, const char *val);

/* One word a user or an admin can type. */
struct word {
    const char *name;
    enum dist_config_word_kind kind;
    setter *set;
    enum field_type type; /* the field it sets */
    size_t offset, size;
    const struct choice *choices; /* set_choice: its values; they spell the syntax too */
    const char *syntax; /* the value's syntax when it has no choices ("SECONDS") */
    const char *takes; /* what a bad value is told it takes, when not a choice */
    long value; /* set_value, set_profile: what the word stores */
    unsigned long lo, hi; /* set_count: the range */
    const char *help; /* what it does: lines separated by '\n' */
};

/* How put_words () lists words; it and is_profile () read the table, which the setters
 * precede. */
enum list_style { STYLE_NAME, STYLE_KEY, STYLE_FULL };
static void put_words (struct text *t, bool (*pick) (const struct word *), enum list_style style);
static bool is_profile (const struct word *w);

#define FIELD(member, t)                                                                           \
    .type = (t), .offset = offsetof (struct dist_config, member),                                  \
    .size = sizeof (((struct dist_config *) 0)->member)

static void store (struct dist_config *cfg, const struct word *w, long value)
{
    char *at = (char *) cfg + w->offset;

    switch (w->type) {
    case FIELD_BOOL:
        *(bool *) at = value != 0;
        break;
    case FIELD_INT:
        *(int *) at = (int) value;
        break;
    case FIELD_U32:
        *(uint32_t *) at = (uint32_t) value;
        break;
    case FIELD_STR:
        break;
    }
}

/* The setters.  A word whose value is one of a few choices, a count or a path needs none of
 * its own: set_choice, set_count and set_path read what they need from its entry. */
static int set_value (struct parse *p, const struct word *w, const char *val)
{
    (void) val;
    store (p->cfg, w, w->value);
    return 0;
}

static int set_profile (struct parse *p, const struct word *w, const char *val)
{
    if (p->profile_seen && w->value != (long) p->cfg->profile) {
        struct text t = {p->err, p->errsz, 0};
        put (&t, "--dist-train: SPEC '%.128s' names two profiles; give one of ", p->spec);
        put_words (&t, is_profile, STYLE_NAME);
        return -1;
    }
    p->profile_seen = true;
    return set_value (p, w, val);
}

static int set_choice (struct parse *p, const struct word *w, const char *val)
{
    for (const struct choice *c = w->choices; c->word != NULL; c++) {
        if (strcmp (val, c->word) == 0) {
            store (p->cfg, w, c->value);
            return 0;
        }
    }
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

static int set_count (struct parse *p, const struct word *w, const char *val)
{
    uint32_t n;

    if (parse_count (val, w->lo, w->hi, &n) < 0)
        return -1;
    store (p->cfg, w, n);
    return 0;
}

/* hang=SECONDS: off or 0, else at least DIST_HANG_MIN_S. */
static int set_hang (struct parse *p, const struct word *w, const char *val)
{
    uint32_t n = 0;

    if (strcmp (val, "off") != 0
        && (parse_count (val, 0, DIST_HANG_MAX_S, &n) < 0 || (n > 0 && n < DIST_HANG_MIN_S)))
        return -1;
    store (p->cfg, w, n);
    return 0;
}

/* An absolute path that fits its field. */
static int set_path (struct parse *p, const struct word *w, const char *val)
{
    if (val[0] != '/' || strlen (val) >= w->size)
        return -1;
    snprintf ((char *) p->cfg + w->offset, w->size, "%s", val);
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

static int set_port_range (struct parse *p, const struct word *w, const char *val)
{
    const char *dash = strchr (val, '-');
    unsigned long lo, hi;

    (void) w;
    if (dash == NULL || parse_port (val, dash, &lo) < 0
        || parse_port (dash + 1, dash + 1 + strlen (dash + 1), &hi) < 0) {
        snprintf (p->err, p->errsz,
                  "port_range=%.32s: expected LO-HI with ports 1024-65535, e.g. port_range=%d-%d",
                  val, DIST_PORT_LO_DEFAULT, DIST_PORT_HI_DEFAULT);
        return -1;
    }
    if (lo < 1024 || lo > hi) {
        snprintf (p->err, p->errsz,
                  "port_range=%.32s: the range is empty or below 1024 "
                  "(tasks cannot bind privileged ports); e.g. port_range=%d-%d",
                  val, DIST_PORT_LO_DEFAULT, DIST_PORT_HI_DEFAULT);
        return -1;
    }
    p->cfg->port_lo = (uint16_t) lo;
    p->cfg->port_hi = (uint16_t) hi;
    return 0;
}

static int set_ifname (struct parse *p, const struct word *w, const char *val)
{
    size_t len = strlen (val);

    (void) w;
    if (len == 0 || len >= sizeof (p->cfg->ifname)) {
        snprintf (p->err, p->errsz, "ifname=%.32s: an interface name has 1 to %zu characters", val,
                  sizeof (p->cfg->ifname) - 1);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (val[i] == '/' || val[i] <= ' ' || val[i] > '~') {
            snprintf (p->err, p->errsz, "ifname=%.32s: not a valid interface name", val);
            return -1;
        }
    }
    memcpy (p->cfg->ifname, val, len + 1);
    return 0;
}

#define SPEC DIST_WORD_SPEC
#define SETTING DIST_WORD_SPEC_SETTING
#define PLUGSTACK DIST_WORD_PLUGSTACK
#define PROFILE(p) set_profile, FIELD (profile, FIELD_INT), .value = (p)
#define CHOICE(member, t, c) set_choice, FIELD (member, t), .choices = (c)
#define ON_OFF(member, t) CHOICE (member, t, on_off)

/* Every word the parsers accept: what is not here is refused.  Its order is the order of
 * the help texts and of every list of valid words. */
static const struct word words[] = {
    {"torch", SPEC, PROFILE (DIST_PROFILE_TORCH), .help = "set the torchrun environment"},
    {"jax", SPEC, PROFILE (DIST_PROFILE_JAX),
     .help = "the generic variables plus JAX_COORDINATOR_ADDRESS,\n"
             "JAX_NUM_PROCESSES, JAX_PROCESS_ID"},
    {"tf", SPEC, PROFILE (DIST_PROFILE_TF),
     .help = "the generic variables plus TF_CONFIG (every task a worker)"},
    {"off", SPEC, PROFILE (DIST_PROFILE_OFF), .help = "do nothing for this step"},
    {"launcher", SPEC, PROFILE (DIST_PROFILE_LAUNCHER),
     .help = "one task per node runs torchrun, accelerate or composer:\n"
             "PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_MASTER_ADDR,\n"
             "PET_MASTER_PORT, and WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK,\n"
             "BASE_RANK for the processes the launcher starts"},
    {"lightning", SPEC, PROFILE (DIST_PROFILE_LIGHTNING),
     .help = "torch without TORCHELASTIC_*, so that Lightning keeps its\n"
             "Slurm environment and auto-requeue"},
    {"submitit", SPEC, PROFILE (DIST_PROFILE_SUBMITIT),
     .help = "torch without MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,\n"
             "LOCAL_RANK, LOCAL_WORLD_SIZE, which submitit's export() sets;\n"
             "rank 0's address and port in DIST_TRAIN_MASTER_ADDR/_PORT"},
    {"verbose", SPEC, set_value, FIELD (verbose, FIELD_BOOL), .value = 1,
     .help = "print what each rank gets"},
    {"preflight", SPEC, set_value, FIELD (preflight_user, FIELD_INT), .value = 1,
     .help = "start each rank with dist-train-doctor's check of the step\n"
             "(addresses, MASTER_PORT, binding); the step fails with its\n"
             "report when a rank cannot reach rank 0 (Slurm 23.11 or later)"},
    {"preflight", SETTING, ON_OFF (preflight_user, FIELD_INT),
     .help = "the same, or off when the site made it the default"},
    {"fabric", SETTING, CHOICE (fabric_user, FIELD_INT, fabric_choices),
     .help = "preflight's checks of the paths between nodes: a blocked\n"
             "port or MTU mismatch fails the step (fail, the default),\n"
             "only warns (warn), or is not checked (off)"},
    {"bind", SETTING, CHOICE (bind_user, FIELD_INT, bind_choices),
     .help = "bind each rank to its GPU(s) and nearby CPUs (auto, the\n"
             "default), only order CUDA_VISIBLE_DEVICES (gpu), only set the\n"
             "CPU affinity (cpu), or neither (none)"},
    {"visible", SETTING, CHOICE (visible_own, FIELD_BOOL, visible_choices),
     .help = "CUDA_VISIBLE_DEVICES lists every GPU of the step with the\n"
             "rank's own at index LOCAL_RANK (all, the default), or only\n"
             "the rank's own GPUs (own)"},
    {"fail_fast", SETTING, ON_OFF (fail_fast_user, FIELD_INT),
     .help = "when a task fails, stop every task of the step at once (on,\n"
             "the default), or let the others run (off)"},
    {"watchdog", SETTING, set_count, FIELD (watchdog_s, FIELD_U32), .lo = 0, .hi = 10000000,
     .syntax = "SECONDS", .takes = "seconds, e.g. watchdog=600 (0 = off)",
     .help = "end the step when a rank using the shim has not called\n"
             "dtshim_progress() for SECONDS (off by default)"},
    {"hang", SETTING, set_hang, FIELD (hang_user, FIELD_INT), .syntax = "SECONDS",
     .takes =
         "seconds, " STR (DIST_HANG_MIN_S) " to " STR (DIST_HANG_MAX_S) ", or off (e.g. hang=600)",
     .help = "stop the step, naming the rank or node the others wait on,\n"
             "when no rank has used CPU or done I/O for SECONDS (off by\n"
             "default; the doctor's hang report, with no change to the\n"
             "program)"},
    {"nproc", SETTING, set_count, FIELD (nproc, FIELD_U32), .lo = 1, .hi = DIST_NPROC_MAX,
     .syntax = "N",
     .takes = "the processes a launcher starts on each node, 1 to " STR (DIST_NPROC_MAX),
     .help = "launcher: processes per node (default: PET_NPROC_PER_NODE,\n"
             "else the node's GPUs, else --gpus-per-node, else 1)"},
    {"rank_order", SETTING, CHOICE (rank_order_topology, FIELD_BOOL, rank_order_choices),
     .help = "RANK as Slurm numbers the tasks (slurm, the default), or\n"
             "with the nodes of each leaf switch or block holding\n"
             "consecutive ranks, in the topology's order (topology)"},
    {"help", SPEC, set_value, FIELD (help, FIELD_BOOL), .value = 1, .help = "print this text"},

    {"port_range", PLUGSTACK, set_port_range, .syntax = "LO-HI",
     .help = "MASTER_PORT is chosen from job id and step id within\n"
             "this range (default " STR (DIST_PORT_LO_DEFAULT) "-" STR (
                 DIST_PORT_HI_DEFAULT) ", below the Linux\nephemeral range 32768-60999)"},
    {"ifname", PLUGSTACK, set_ifname, .syntax = "NAME",
     .help = "force NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME to NAME\n"
             "instead of the interface that reaches rank 0's node"},
    {"bind", PLUGSTACK, CHOICE (bind_site, FIELD_INT, bind_choices),
     .help = "GPU and CPU binding of each rank (default auto); none\n"
             "turns it off for every user"},
    {"visible", PLUGSTACK, CHOICE (visible_own, FIELD_BOOL, visible_choices),
     .help = "CUDA_VISIBLE_DEVICES: every GPU of the step with the\n"
             "rank's own at LOCAL_RANK (default), or only its own"},
    {"nic", PLUGSTACK, CHOICE (nic_auto, FIELD_BOOL, nic_choices),
     .help = "export NCCL_IB_HCA and UCX_NET_DEVICES for the nearest\n"
             "RDMA NIC (default off)"},
    {"topology", PLUGSTACK, set_path, FIELD (topology, FIELD_STR), .syntax = "FILE",
     .takes = "an absolute path to an hwloc XML file (lstopo --of xml), shorter than " STR (
         DIST_PATH_MAX) " characters",
     .help = "the node's topology as hwloc XML (lstopo --of xml),\n"
             "instead of discovering it at each step"},
    {"fail_fast", PLUGSTACK, ON_OFF (fail_fast_site, FIELD_BOOL),
     .help = "when a task fails, stop the step on every node (default\n"
             "on); off keeps Slurm's behaviour for every user"},
    {"hang", PLUGSTACK, set_hang, FIELD (hang_site, FIELD_U32), .syntax = "SECONDS",
     .takes = "seconds, " STR (DIST_HANG_MIN_S) " to " STR (DIST_HANG_MAX_S) ", or off",
     .help = "the default of hang= for every step (default off); users\n"
             "can set their own, or hang=off"},
    {"preflight", PLUGSTACK, ON_OFF (preflight_site, FIELD_BOOL),
     .help = "start every step with dist-train-doctor's check of\n"
             "addresses, MASTER_PORT and binding (default off; Slurm\n"
             "23.11 or later; users can turn it off per step)"},
    {"fabric", PLUGSTACK, CHOICE (fabric_site, FIELD_INT, fabric_choices),
     .help = "the default of fabric= for every step: preflight's checks\n"
             "of the paths between nodes fail the step (default fail),\n"
             "only warn (warn), or are skipped (off); users set their own"},
    {"doctor", PLUGSTACK, set_path, FIELD (doctor, FIELD_STR), .syntax = "PATH",
     .takes =
         "the absolute path of dist-train-doctor, shorter than " STR (DIST_PATH_MAX) " characters",
     .help = "where preflight finds dist-train-doctor"},
};

static bool is_profile (const struct word *w)
{
    return w->set == set_profile;
}

static bool is_spec (const struct word *w)
{
    return w->kind != DIST_WORD_PLUGSTACK;
}

static bool is_setting (const struct word *w)
{
    return w->kind == DIST_WORD_SPEC_SETTING;
}

static bool is_plugstack (const struct word *w)
{
    return w->kind == DIST_WORD_PLUGSTACK;
}

/* The choices of w joined by sep, the last by last ("a|b|c", "a, b or c"). */
static void put_choices (struct text *t, const struct word *w, const char *sep, const char *last)
{
    for (const struct choice *c = w->choices; c->word != NULL; c++)
        put (t, "%s%s", c == w->choices ? "" : c[1].word == NULL ? last : sep, c->word);
}

static void put_syntax (struct text *t, const struct word *w)
{
    if (w->choices != NULL)
        put_choices (t, w, "|", "|");
    else
        put (t, "%s", w->syntax);
}

/* The word as its help shows it: a setting with its value syntax ("bind=auto|gpu|cpu|none"). */
static void put_label (struct text *t, const struct word *w)
{
    put (t, "%s", w->name);
    if (w->kind != DIST_WORD_SPEC) {
        put (t, "=");
        put_syntax (t, w);
    }
}

/* Whether w is the profile of a SPEC that names none. */
static bool is_default (const struct word *w)
{
    return is_profile (w) && w->value == PROFILE_DEFAULT;
}

/* The words pick chooses, comma-separated: STYLE_NAME their names, STYLE_KEY with a
 * setting's '=', STYLE_FULL with its value syntax and "(default)" after the default profile. */
static void put_words (struct text *t, bool (*pick) (const struct word *), enum list_style style)
{
    const char *sep = "";

    for (size_t i = 0; i < COUNT (words); i++) {
        const struct word *w = &words[i];
        if (!pick (w))
            continue;
        put (t, "%s", sep);
        sep = ", ";
        if (style == STYLE_FULL)
            put_label (t, w);
        else
            put (t, "%s%s", w->name, style == STYLE_KEY && w->kind != DIST_WORD_SPEC ? "=" : "");
        if (style == STYLE_FULL && is_default (w))
            put (t, " (default)");
    }
}

/* The help of the words pick chooses: each word (with its value syntax) in a column of
 * width, then its lines; a word too wide for the column has its own line. */
static void put_help (struct text *t, bool (*pick) (const struct word *), int width)
{
    for (size_t i = 0; i < COUNT (words); i++) {
        const struct word *w = &words[i];
        char label[96];
        struct text l = {label, sizeof (label), 0};
        const char *line = w->help;

        if (!pick (w))
            continue;
        put_label (&l, w);
        if (l.len < (size_t) width)
            put (t, "  %-*s", width, label);
        else
            put (t, "  %s\n%*s", label, width + 2, "");
        for (bool first = true; *line != '\0'; first = false) {
            size_t n = strcspn (line, "\n");
            put (t, "%*s%.*s", first ? 0 : width + 2, "", (int) n, line);
            if (first && is_default (w))
                put (t, " (default)");
            put (t, "\n");
            line += n + (line[n] == '\n');
        }
    }
}

/* A text made once from the table into buf: head, the words pick chooses (their help in a
 * column of width, or with width 0 one comma list of them), tail. */
static const char *made (char *buf, size_t size, const char *head,
                         bool (*pick) (const struct word *), int width, const char *tail)
{
    if (buf[0] == '\0') {
        struct text t = {buf, size, 0};
        put (&t, "%s", head);
        if (width > 0)
            put_help (&t, pick, width);
        else
            put_words (&t, pick, STYLE_FULL);
        put (&t, "%s", tail);
    }
    return buf;
}

const char *dist_config_help (void)
{
    static char buf[8192];

    return made (buf, sizeof (buf), "--dist-train[=SPEC], SPEC a comma list of:\n", is_spec, 9,
                 "The environment variable DIST_TRAIN=SPEC is used when the flag is not given.");
}

const char *dist_config_plugstack_help (void)
{
    static char buf[8192];

    return made (buf, sizeof (buf),
                 "plugstack.conf arguments (key=value; an unknown key is an error):\n",
                 is_plugstack, 18, "");
}

const char *dist_config_usage (void)
{
    static char buf[2048];

    return made (buf, sizeof (buf),
                 "Set up the environment for distributed training in every task "
                 "(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...). SPEC: ",
                 is_spec, 0, ". Default from the environment variable DIST_TRAIN.");
}

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
    cfg->fabric_site = DIST_FABRIC_FAIL;
    cfg->hang_user = -1;
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

uint32_t dist_config_hang (const struct dist_config *cfg)
{
    if (cfg->profile == DIST_PROFILE_LAUNCHER)
        return 0;
    return cfg->hang_user < 0 ? cfg->hang_site : (uint32_t) cfg->hang_user;
}

enum dist_fabric dist_config_fabric (const struct dist_config *cfg)
{
    return cfg->fabric_user == DIST_FABRIC_UNSET ? cfg->fabric_site : cfg->fabric_user;
}

bool dist_config_fail_fast (const struct dist_config *cfg)
{
    if (!cfg->fail_fast_site || cfg->fail_fast_user < 0)
        return cfg->fail_fast_site;
    return cfg->fail_fast_user == 1;
}

enum dist_bind dist_config_bind (const struct dist_config *cfg)
{
    if (cfg->bind_site == DIST_BIND_NONE || cfg->bind_user == DIST_BIND_UNSET)
        return cfg->bind_site;
    return cfg->bind_user;
}

const char *dist_profile_name (enum dist_profile profile)
{
    for (size_t i = 0; i < COUNT (words); i++)
        if (is_profile (&words[i]) && words[i].value == (long) profile)
            return words[i].name;
    return "?";
}

/* The word of kind whose name is the len bytes at name, or NULL. */
static const struct word *find (enum dist_config_word_kind kind, const char *name, size_t len)
{
    for (size_t i = 0; i < COUNT (words); i++)
        if (words[i].kind == kind && strlen (words[i].name) == len
            && strncmp (words[i].name, name, len) == 0)
            return &words[i];
    return NULL;
}

/* Apply w's value; a bad one that its setter did not explain is told what w takes. */
static int apply (struct parse *p, const struct word *w, const char *val)
{
    struct text t = {p->err, p->errsz, 0};

    if (p->errsz > 0)
        p->err[0] = '\0';
    if (w->set (p, w, val) == 0)
        return 0;
    if (t.size == 0 || p->err[0] != '\0')
        return -1;
    if (w->kind == DIST_WORD_PLUGSTACK)
        put (&t, "%s=%.64s: expected ", w->name, val);
    else
        put (&t, "--dist-train: '%.64s': %s= takes ", p->tok, w->name);
    if (w->choices != NULL)
        put_choices (&t, w, ", ", " or ");
    else
        put (&t, "%s", w->takes != NULL ? w->takes : "another value");
    return -1;
}

int dist_config_parse_spec (struct dist_config *cfg, const char *spec, char *err, size_t errsz)
{
    char buf[SPEC_MAX];
    char *tok, *save = NULL;
    struct parse p = {.cfg = cfg, .err = err, .errsz = errsz};
    struct text t = {err, errsz, 0};

    if (spec == NULL)
        spec = "";
    p.spec = spec;
    if (strlen (spec) >= sizeof (buf)) {
        snprintf (err, errsz, "--dist-train SPEC is longer than %zu characters", sizeof (buf) - 1);
        return -1;
    }
    strcpy (buf, spec);
    cfg->profile = PROFILE_DEFAULT;
    cfg->verbose = false;
    cfg->nproc = 0;
    cfg->help = false;
    for (tok = strtok_r (buf, ",", &save); tok != NULL; tok = strtok_r (NULL, ",", &save)) {
        const char *eq = strchr (tok, '=');
        const struct word *w = eq != NULL ? find (DIST_WORD_SPEC_SETTING, tok, (size_t) (eq - tok))
                                          : find (DIST_WORD_SPEC, tok, strlen (tok));

        if (w == NULL && eq != NULL) {
            put (&t, "--dist-train: unknown SPEC setting '%.64s'; valid: ", tok);
            put_words (&t, is_setting, STYLE_FULL);
            return -1;
        }
        if (w == NULL) {
            put (&t, "--dist-train: unknown SPEC token '%.48s'; valid: ", tok);
            put_words (&t, is_spec, STYLE_KEY);
            put (&t, " (comma-separated)");
            return -1;
        }
        p.tok = tok;
        if (apply (&p, w, eq != NULL ? eq + 1 : NULL) < 0)
            return -1;
    }
    /* (checked once SPEC is read: its order is free) */
    if (cfg->nproc > 0 && cfg->profile != DIST_PROFILE_LAUNCHER) {
        snprintf (err, errsz,
                  "--dist-train: nproc= is for the launcher profile "
                  "(--dist-train=launcher,nproc=N), where one task per node starts "
                  "the ranks; with one task per rank, srun's -n and "
                  "--ntasks-per-node set them");
        return -1;
    }
    if (cfg->preflight_user == 1 && cfg->profile == DIST_PROFILE_LAUNCHER) {
        snprintf (err, errsz,
                  "--dist-train: preflight checks one task per rank, and the "
                  "launcher profile runs one task per node; drop preflight, or run "
                  "`srun --dist-train dist-train-doctor` with one task per rank");
        return -1;
    }
    return 0;
}

int dist_config_parse_arg (struct dist_config *cfg, const char *arg, char *err, size_t errsz)
{
    const char *eq = strchr (arg, '=');
    struct parse p = {.cfg = cfg, .tok = arg, .err = err, .errsz = errsz};
    struct text t = {err, errsz, 0};
    const struct word *w;
    size_t klen;

    if (eq == NULL) {
        put (&t, "plugstack argument '%.64s' is not key=value; valid keys: ", arg);
        put_words (&t, is_plugstack, STYLE_NAME);
        return -1;
    }
    klen = (size_t) (eq - arg);
    if ((w = find (DIST_WORD_PLUGSTACK, arg, klen)) != NULL)
        return apply (&p, w, eq + 1);
    put (&t, "unknown plugstack key '%.*s'; valid keys: ", (int) (klen > 64 ? 64 : klen), arg);
    put_words (&t, is_plugstack, STYLE_NAME);
    return -1;
}

const char *dist_config_word (size_t i, enum dist_config_word_kind *kind)
{
    if (i >= COUNT (words))
        return NULL;
    *kind = words[i].kind;
    return words[i].name;
}

const char *dist_config_word_syntax (size_t i, char *buf, size_t size)
{
    struct text t = {buf, size, 0};

    if (i >= COUNT (words))
        return NULL;
    if (size > 0)
        buf[0] = '\0';
    if (words[i].kind != DIST_WORD_SPEC)
        put_syntax (&t, &words[i]);
    return buf;
}

void dist_printable (char *text)
{
    for (; *text != '\0'; text++)
        if ((unsigned char) *text < 0x20 || (unsigned char) *text == 0x7f)
            *text = '?';
}
