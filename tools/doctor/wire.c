/* wire.c - one rank's facts as a bounded text message, and back.
 *
 * The message comes from the network: every value is cut to its field and
 * made printable, numbers are parsed strictly, unknown keys are skipped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

#define WIRE_MAGIC DOCTOR_PROGRAM " 1"

void doctor_printable (char *dst, size_t size, const char *src)
{
    size_t i;

    if (size == 0)
        return;
    for (i = 0; i + 1 < size && src[i] != '\0'; i++)
        dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
    dst[i] = '\0';
}

static int put (char *buf, size_t size, size_t *off, const char *key, const char *value)
{
    size_t klen = strlen (key), vlen = strlen (value);

    if (*off + klen + vlen + 2 >= size)
        return -1;
    memcpy (buf + *off, key, klen);
    buf[*off + klen] = '=';
    memcpy (buf + *off + klen + 1, value, vlen);
    buf[*off + klen + 1 + vlen] = '\n';
    *off += klen + vlen + 2;
    return 0;
}

static int put_long (char *buf, size_t size, size_t *off, const char *key, long value)
{
    char text[24];

    if (value < 0)
        return 0;
    snprintf (text, sizeof (text), "%ld", value);
    return put (buf, size, off, key, text);
}

/* The message's last lines: the node's collective stack, the findings on
 * it that there are, "end". */
static int put_tail (char *buf, size_t size, size_t *off, const struct doctor_rank *r)
{
    char key[16];

    if (put (buf, size, off, "stack", r->stack) < 0)
        return -1;
    for (size_t i = 0; i < DOCTOR_FINDINGS_MAX && r->finding[i][0] != '\0'; i++) {
        snprintf (key, sizeof (key), "finding%zu", i);
        if (put (buf, size, off, key, r->finding[i]) < 0)
            return -1;
    }
    if (*off + 5 > size)
        return -1;
    memcpy (buf + *off, "end\n", 4);
    *off += 4;
    return 0;
}

/* Its GPUs and CPUs, as planned and as they are. */
static int put_binding (char *buf, size_t size, size_t *off, const struct doctor_rank *r)
{
    if (put (buf, size, off, "visible", r->visible) < 0 || put (buf, size, off, "gpus", r->gpus) < 0
        || put (buf, size, off, "device", r->device) < 0
        || put (buf, size, off, "cpus", r->cpus) < 0
        || put (buf, size, off, "plan_cpus", r->plan_cpus) < 0)
        return -1;
    return 0;
}

/* The node's part in the fabric check, when this task takes it. */
static int put_fabric (char *buf, size_t size, size_t *off, const struct doctor_rank *r)
{
    if (r->fabric_port < 0)
        return 0;
    if (put_long (buf, size, off, "fabric_port", r->fabric_port) < 0
        || put_long (buf, size, off, "fabric_mtu", r->fabric_mtu) < 0
        || put (buf, size, off, "fabric_addr", r->fabric_addr) < 0
        || put (buf, size, off, "fabric_if", r->fabric_if) < 0
        || put (buf, size, off, "fabric_note", r->fabric_note) < 0)
        return -1;
    return 0;
}

int doctor_wire_encode (const struct doctor_rank *r, char *buf, size_t size)
{
    size_t off = 0;
    const char *magic = WIRE_MAGIC "\n";

    if (size < strlen (magic) + 5)
        return -1;
    memcpy (buf, magic, strlen (magic));
    off = strlen (magic);
    if (put_long (buf, size, &off, "procid", r->procid) < 0
        || put_long (buf, size, &off, "rank", r->rank) < 0
        || put_long (buf, size, &off, "local_rank", r->local_rank) < 0
        || put_long (buf, size, &off, "world_size", r->world_size) < 0
        || put_long (buf, size, &off, "local_world_size", r->local_world_size) < 0
        || put_long (buf, size, &off, "group_rank", r->group_rank) < 0
        || put_long (buf, size, &off, "connect_ms", r->connect_ms) < 0
        || put (buf, size, &off, "node", r->node) < 0
        || put (buf, size, &off, "ifname", r->ifname) < 0
        || put (buf, size, &off, "source", r->source) < 0
        || put (buf, size, &off, "master_addr", r->master_addr) < 0
        || put (buf, size, &off, "master_port", r->master_port) < 0
        || put_binding (buf, size, &off, r) < 0 || put_fabric (buf, size, &off, r) < 0
        || put_tail (buf, size, &off, r) < 0)
        return -1;
    return (int) off;
}

/* A count or id: digits only, at most DOCTOR_RANKS_MAX * 64; else -1. */
static long parse_long (const char *text)
{
    char *end;
    long v;

    if (text[0] < '0' || text[0] > '9' || strlen (text) > 12)
        return -1;
    errno = 0;
    v = strtol (text, &end, 10);
    if (errno != 0 || *end != '\0' || v > (long) DOCTOR_RANKS_MAX * 64)
        return -1;
    return v;
}

static void store (struct doctor_rank *r, const char *key, const char *value)
{
    static const struct {
        const char *key;
        size_t off, size;
    } text[] = {
#define TEXT(k) {#k, offsetof (struct doctor_rank, k), sizeof (((struct doctor_rank *) 0)->k)}
        TEXT (node),        TEXT (ifname),      TEXT (source), TEXT (master_addr),
        TEXT (master_port), TEXT (visible),     TEXT (gpus),   TEXT (device),
        TEXT (cpus),        TEXT (plan_cpus),   TEXT (stack),  TEXT (fabric_addr),
        TEXT (fabric_if),   TEXT (fabric_note),
#define FINDING(i) {"finding" #i, offsetof (struct doctor_rank, finding[i]), DOCTOR_LINE_MAX}
        FINDING (0),        FINDING (1),        FINDING (2),   FINDING (3),
        FINDING (4),
#undef FINDING
#undef TEXT
    };
    static const struct {
        const char *key;
        size_t off;
    } num[] = {
#define NUM(k) {#k, offsetof (struct doctor_rank, k)}
        NUM (procid),           NUM (rank),       NUM (local_rank), NUM (world_size),
        NUM (local_world_size), NUM (group_rank), NUM (connect_ms), NUM (fabric_port),
        NUM (fabric_mtu),
#undef NUM
    };
    size_t i;

    _Static_assert(DOCTOR_FINDINGS_MAX == 5, "store() names finding0 to finding4");
    for (i = 0; i < sizeof (text) / sizeof (text[0]); i++)
        if (strcmp (key, text[i].key) == 0) {
            doctor_printable ((char *) r + text[i].off, text[i].size, value);
            return;
        }
    for (i = 0; i < sizeof (num) / sizeof (num[0]); i++)
        if (strcmp (key, num[i].key) == 0) {
            *(long *) ((char *) r + num[i].off) = parse_long (value);
            return;
        }
}

int doctor_wire_decode (const char *buf, size_t len, struct doctor_rank *r)
{
    char line[DOCTOR_LIST_MAX + 64];
    size_t pos = 0, n;
    bool magic = false;

    memset (r, 0, sizeof (*r));
    r->procid = r->rank = r->local_rank = r->world_size = -1;
    r->local_world_size = r->group_rank = r->connect_ms = -1;
    r->fabric_port = r->fabric_mtu = -1;
    while (pos < len) {
        const char *nl = memchr (buf + pos, '\n', len - pos);
        char *eq;

        if (nl == NULL)
            return -1;
        n = (size_t) (nl - (buf + pos));
        /* (a line longer than any field is cut: store() cuts it anyway) */
        if (n >= sizeof (line))
            n = sizeof (line) - 1;
        memcpy (line, buf + pos, n);
        line[n] = '\0';
        pos = (size_t) (nl - buf) + 1;
        if (!magic) {
            if (strcmp (line, WIRE_MAGIC) != 0)
                return -1;
            magic = true;
        } else if (strcmp (line, "end") == 0) {
            return 0;
        } else if ((eq = strchr (line, '=')) != NULL) {
            *eq = '\0';
            store (r, line, eq + 1);
        }
    }
    return -1;
}
