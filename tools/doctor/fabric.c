/* fabric.c - the fabric check's plan, its results on the wire, and the
 * verdict over every path: no I/O. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "text.h"

#define FABRIC_VERSION "2" /* the plan's node line has its sample's kind */
#define FABRIC_MAGIC "fabric " FABRIC_VERSION

static const char *const conn_words[FABRIC_CONN_COUNT] = {
    "ok", "timeout", "refused", "unreachable", "foreign", "broken",
};

const char *fabric_conn_word (enum fabric_conn c)
{
    return c < FABRIC_CONN_COUNT ? conn_words[c] : "?";
}

int fabric_mode_parse (const char *text, enum fabric_mode *mode)
{
    if (strcmp (text, "fail") == 0)
        *mode = FABRIC_FAIL;
    else if (strcmp (text, "warn") == 0)
        *mode = FABRIC_WARN;
    else if (strcmp (text, "off") == 0)
        *mode = FABRIC_OFF;
    else
        return -1;
    return 0;
}

unsigned fabric_rounds (size_t n)
{
    unsigned r = 0;

    while (r < FABRIC_ROUNDS_MAX && ((size_t) 1 << r) < n)
        r++;
    return r;
}

uint32_t fabric_target_of (size_t n, uint32_t i, unsigned round)
{
    return (uint32_t) (((size_t) i + ((size_t) 1 << round)) % n);
}

void fabric_plan_make (const struct fabric_node *nodes, size_t n, uint32_t i,
                       struct fabric_plan *plan)
{
    unsigned rounds = fabric_rounds (n);

    memset (plan, 0, sizeof (*plan));
    plan->index = i;
    plan->nodes = (uint32_t) n;
    /* (distances below n differ mod n: each round brings another node) */
    for (unsigned r = 0; r < rounds; r++) {
        uint32_t to = fabric_target_of (n, i, r);
        struct fabric_target *t = &plan->target[plan->ntargets];
        /* a node that does not listen is not checked, by anyone */
        if (nodes[to].port > 0 && nodes[i].port > 0) {
            t->round = (int) r;
            t->to = to;
            memcpy (t->name, nodes[to].name, sizeof (t->name));
            memcpy (t->addr, nodes[to].addr, sizeof (t->addr));
            t->port = nodes[to].port;
            t->mtu = nodes[to].mtu;
            plan->ntargets++;
        }
        /* who comes to i in this round */
        if (nodes[i].port > 0 && nodes[(i + n - ((size_t) 1 << r) % n) % n].port > 0)
            plan->expect++;
    }
}

/* "key value" lines; one that does not fit makes the encoding fail. */
static int putf (char *buf, size_t size, size_t *off, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));
static int putf (char *buf, size_t size, size_t *off, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*off >= size)
        return -1;
    va_start (ap, fmt);
    n = vsnprintf (buf + *off, size - *off, fmt, ap);
    va_end (ap);
    if (n < 0 || (size_t) n >= size - *off)
        return -1;
    *off += (size_t) n;
    return 0;
}

/* A word for a string that may be empty or hold spaces: "-" for empty. */
static const char *word_of (const char *s)
{
    return s[0] != '\0' ? s : "-";
}

int fabric_plan_encode (const struct fabric_plan *plan, char *buf, size_t size)
{
    size_t off = 0;

    if (putf (buf, size, &off, FABRIC_MAGIC "\nnode %u %u %u %u %s\n", plan->index, plan->nodes,
              plan->expect, plan->sample_ms > 0 ? plan->sample_ms : FABRIC_SAMPLE_MS,
              plan->timed ? "time" : "bytes")
        < 0)
        return -1;
    for (size_t i = 0; i < plan->ntargets; i++) {
        const struct fabric_target *t = &plan->target[i];
        if (putf (buf, size, &off, "target %d %u %ld %ld %s %s\n", t->round, t->to, t->port, t->mtu,
                  word_of (t->addr), word_of (t->name))
            < 0)
            return -1;
    }
    if (putf (buf, size, &off, "end\n") < 0)
        return -1;
    return (int) off;
}

/* A number from the network: digits (a '-' first where negative is
 * allowed), within [lo, hi]; else -1 with *ok false. */
static long number (const char *text, long lo, long hi, bool *ok)
{
    char *end;
    long v;

    if (text == NULL || text[0] == '\0' || strlen (text) > 12
        || !((text[0] >= '0' && text[0] <= '9') || (text[0] == '-' && lo < 0))) {
        *ok = false;
        return -1;
    }
    errno = 0;
    v = strtol (text, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        *ok = false;
        return -1;
    }
    return v;
}

/* The next line of buf[len] from *pos, split at spaces into at most max
 * words (the last keeps the rest); the count, or -1 past the end or for a
 * line too long. */
static int next_line (const char *buf, size_t len, size_t *pos, char *line, size_t size,
                      char **words, int max)
{
    const char *nl;
    size_t n;
    int k = 0;
    char *p;

    if (*pos >= len || (nl = memchr (buf + *pos, '\n', len - *pos)) == NULL)
        return -1;
    n = (size_t) (nl - (buf + *pos));
    if (n >= size)
        return -1;
    memcpy (line, buf + *pos, n);
    line[n] = '\0';
    *pos += n + 1;
    for (p = line; *p != '\0' && k < max;) {
        words[k++] = p;
        if (k == max)
            break;
        if ((p = strchr (p, ' ')) == NULL)
            break;
        *p++ = '\0';
    }
    return k;
}

static void text_of (char *dst, size_t size, const char *word)
{
    doctor_printable (dst, size, strcmp (word, "-") == 0 ? "" : word);
}

int fabric_plan_decode (const char *buf, size_t len, struct fabric_plan *plan)
{
    char line[DOCTOR_LINE_MAX], *w[7];
    size_t pos = 0;
    bool ok = true;
    int k;

    memset (plan, 0, sizeof (*plan));
    if (next_line (buf, len, &pos, line, sizeof (line), w, 7) != 2 || strcmp (w[0], "fabric") != 0
        || strcmp (w[1], FABRIC_VERSION) != 0)
        return -1;
    if (next_line (buf, len, &pos, line, sizeof (line), w, 7) != 6 || strcmp (w[0], "node") != 0)
        return -1;
    if (strcmp (w[5], "time") != 0 && strcmp (w[5], "bytes") != 0)
        return -1;
    plan->timed = strcmp (w[5], "time") == 0;
    plan->nodes = (uint32_t) number (w[2], 2, DOCTOR_NODES_MAX, &ok);
    plan->index = (uint32_t) number (w[1], 0, (long) plan->nodes - 1, &ok);
    plan->expect = (unsigned) number (w[3], 0, FABRIC_ROUNDS_MAX, &ok);
    plan->sample_ms = (unsigned) number (w[4], 10, FABRIC_SAMPLE_MS, &ok);
    while (ok && (k = next_line (buf, len, &pos, line, sizeof (line), w, 7)) > 0) {
        struct fabric_target *t = &plan->target[plan->ntargets];
        if (k == 1 && strcmp (w[0], "end") == 0)
            return 0;
        if (k != 7 || strcmp (w[0], "target") != 0 || plan->ntargets == FABRIC_ROUNDS_MAX)
            return -1;
        t->round = (int) number (w[1], 0, FABRIC_ROUNDS_MAX - 1, &ok);
        t->to = (uint32_t) number (w[2], 0, (long) plan->nodes - 1, &ok);
        t->port = number (w[3], 1, 65535, &ok);
        t->mtu = number (w[4], -1, 1 << 20, &ok);
        text_of (t->addr, sizeof (t->addr), w[5]);
        text_of (t->name, sizeof (t->name), w[6]);
        plan->ntargets++;
    }
    return -1;
}

int fabric_result_encode (const struct fabric_pair *pairs, size_t n, char *buf, size_t size)
{
    size_t off = 0;

    if (putf (buf, size, &off, FABRIC_MAGIC "\n") < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct fabric_pair *p = &pairs[i];
        if (putf (buf, size, &off, "pair %d %u %s %ld %ld %ld %ld %ld %s\n", p->round, p->to,
                  fabric_conn_word (p->conn), p->connect_us, p->rtt_us, p->bytes, p->usecs,
                  p->udp_max, word_of (p->egress))
            < 0)
            return -1;
    }
    if (putf (buf, size, &off, "end\n") < 0)
        return -1;
    return (int) off;
}

int fabric_result_decode (const char *buf, size_t len, uint32_t from, uint32_t nodes,
                          struct fabric_pair *pairs, size_t max, size_t *n)
{
    char line[DOCTOR_LINE_MAX], *w[10];
    size_t pos = 0;
    bool ok = true;
    int k;

    *n = 0;
    if (next_line (buf, len, &pos, line, sizeof (line), w, 10) != 2 || strcmp (w[0], "fabric") != 0
        || strcmp (w[1], FABRIC_VERSION) != 0)
        return -1;
    while (ok && (k = next_line (buf, len, &pos, line, sizeof (line), w, 10)) > 0) {
        struct fabric_pair *p = &pairs[*n];
        int c;
        if (k == 1 && strcmp (w[0], "end") == 0)
            return 0;
        if (k != 10 || strcmp (w[0], "pair") != 0 || *n == max)
            return -1;
        memset (p, 0, sizeof (*p));
        p->from = from;
        p->round = (int) number (w[1], 0, FABRIC_ROUNDS_MAX - 1, &ok);
        p->to = (uint32_t) number (w[2], 0, (long) nodes - 1, &ok);
        for (c = 0; c < FABRIC_CONN_COUNT && strcmp (w[3], conn_words[c]) != 0; c++)
            ;
        if (c == FABRIC_CONN_COUNT || p->to == from)
            return -1;
        p->conn = (enum fabric_conn) c;
        p->connect_us = number (w[4], -1, 1L << 40, &ok);
        p->rtt_us = number (w[5], -1, 1L << 40, &ok);
        p->bytes = number (w[6], -1, 1L << 40, &ok);
        p->usecs = number (w[7], -1, 1L << 40, &ok);
        p->udp_max = number (w[8], 0, 1 << 20, &ok);
        text_of (p->egress, sizeof (p->egress), w[9]);
        (*n)++;
    }
    return -1;
}

/* ---- the verdict ---- */

/* What a path says about its two ends, per node. */
struct tally {
    size_t in, in_failed, out, out_failed;
    size_t measured, slow; /* paths with a bandwidth sample, in or out */
    enum fabric_conn in_why;
    bool cut_in, cut_out, named_slow;
};

static double bandwidth (const struct fabric_pair *p)
{
    return p->conn == FABRIC_OK && p->bytes > 0 && p->usecs > 0 ? (double) p->bytes / p->usecs
                                                                : -1; /* MB/s */
}

static int cmp_double (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* The median of v[n] (sorted in place), -1 for none. */
static double median (double *v, size_t n)
{
    if (n == 0)
        return -1;
    qsort (v, n, sizeof (*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *why (enum fabric_conn c)
{
    switch (c) {
    case FABRIC_TIMEOUT:
        return "timed out (its packets are dropped)";
    case FABRIC_REFUSED:
        return "refused (a firewall that rejects, or nothing listens)";
    case FABRIC_UNREACHABLE:
        return "no route to it";
    case FABRIC_FOREIGN:
        return "what answers there does not know this step's key";
    case FABRIC_BROKEN:
        return "the connection broke or stalled during the check";
    default:
        return "ok";
    }
}

/* A problem, or under fabric=warn a warning. */
#define FAIL(res, mode, ...)                                                                       \
    do {                                                                                           \
        if ((mode) == FABRIC_FAIL)                                                                 \
            doctor_problem ((res), __VA_ARGS__);                                                   \
        else                                                                                       \
            doctor_warning ((res), __VA_ARGS__);                                                   \
    } while (0)

static void tally_paths (const struct fabric_pair *pairs, size_t np, struct tally *t)
{
    for (size_t i = 0; i < np; i++) {
        const struct fabric_pair *p = &pairs[i];
        t[p->from].out++;
        t[p->to].in++;
        if (p->conn != FABRIC_OK && p->conn != FABRIC_BROKEN) {
            t[p->from].out_failed++;
            t[p->to].in_failed++;
            t[p->to].in_why = p->conn;
        }
    }
}

/* A node that nobody reaches: its firewall, or it is cut off. */
static void judge_unreached (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                             const struct fabric_pair *pairs, size_t np, struct tally *t,
                             enum fabric_mode mode)
{
    char list[DOCTOR_LINE_MAX / 2];

    for (size_t x = 0; x < n; x++) {
        if (t[x].in == 0 || t[x].in_failed < t[x].in || (t[x].in < 2 && n > 2))
            continue;
        t[x].cut_in = true;
        list[0] = '\0';
        for (size_t i = 0; i < np; i++)
            if (pairs[i].to == x)
                doctor_set_add (list, sizeof (list), nodes[pairs[i].from].name);
        if (t[x].out > 0 && t[x].out_failed == t[x].out) {
            t[x].cut_out = true;
            FAIL (res, mode,
                  "fabric: %s is cut off: no path to or from it on port %ld works (%s: %s); "
                  "check its link and firewall",
                  nodes[x].name, nodes[x].port, list, why (t[x].in_why));
        } else
            FAIL (res, mode,
                  "fabric: no connection reached %s (%s port %ld) from %s: %s, while its own "
                  "connections out work; a firewall on %s drops the port range? (nft list "
                  "ruleset, iptables -L on %s)",
                  nodes[x].name, nodes[x].addr, nodes[x].port, list, why (t[x].in_why),
                  nodes[x].name, nodes[x].name);
    }
}

static void judge_blocked (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                           const struct fabric_pair *pairs, size_t np, struct tally *t,
                           enum fabric_mode mode)
{
    tally_paths (pairs, np, t);
    judge_unreached (res, nodes, n, pairs, np, t, mode);
    /* a node that reaches nobody, while others reach it */
    for (size_t x = 0; x < n; x++) {
        if (t[x].cut_in || t[x].out < 2 || t[x].out_failed < t[x].out)
            continue;
        t[x].cut_out = true;
        FAIL (res, mode,
              "fabric: %s cannot connect to any of its %zu partners on the step's port, while "
              "they reach it: a firewall on %s drops outgoing connections, or its routes?",
              nodes[x].name, t[x].out, nodes[x].name);
    }
    for (size_t i = 0; i < np; i++) {
        const struct fabric_pair *p = &pairs[i];
        if (p->conn == FABRIC_OK || t[p->to].cut_in || t[p->from].cut_out)
            continue;
        if (p->conn == FABRIC_BROKEN)
            doctor_warning (res, "fabric: %s -> %s (%s port %ld): %s", nodes[p->from].name,
                            nodes[p->to].name, nodes[p->to].addr, nodes[p->to].port, why (p->conn));
        else
            FAIL (res, mode, "fabric: %s cannot connect to %s (%s port %ld): %s",
                  nodes[p->from].name, nodes[p->to].name, nodes[p->to].addr, nodes[p->to].port,
                  why (p->conn));
    }
}

/* The MTU most nodes have, -1 for none known. */
static long usual_mtu (const struct fabric_node *nodes, size_t n, size_t *count)
{
    long best = -1;

    *count = 0;
    for (size_t i = 0; i < n; i++) {
        size_t c = 0;
        if (nodes[i].mtu <= 0)
            continue;
        for (size_t j = 0; j < n; j++)
            c += nodes[j].mtu == nodes[i].mtu;
        if (c > *count || (c == *count && nodes[i].mtu > best)) {
            *count = c;
            best = nodes[i].mtu;
        }
    }
    return best;
}

static void judge_mtu (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                       const struct fabric_pair *pairs, size_t np, enum fabric_mode mode)
{
    size_t same;
    long usual = usual_mtu (nodes, n, &same);

    for (size_t x = 0; usual > 0 && x < n; x++) {
        long passed = -1;
        if (nodes[x].mtu <= 0 || nodes[x].mtu == usual)
            continue;
        /* what the probes saw of the mismatch: the largest that reached x */
        for (size_t i = 0; i < np; i++)
            if (pairs[i].to == x && pairs[i].conn == FABRIC_OK && pairs[i].udp_max > passed)
                passed = pairs[i].udp_max;
        char seen[DOCTOR_NAME_MAX * 2] = "";
        if (passed > 0)
            snprintf (seen, sizeof (seen), "; the largest probe that reached it: %ld bytes",
                      passed);
        FAIL (res, mode,
              "fabric: MTU mismatch: %s's %s has MTU %ld, %zu other node%s %ld: packets over "
              "%ld bytes between them are dropped%s; give every node's interface the same MTU",
              nodes[x].name, nodes[x].ifname[0] ? nodes[x].ifname : "interface", nodes[x].mtu, same,
              same == 1 ? "" : "s", usual, nodes[x].mtu < usual ? nodes[x].mtu : usual, seen);
    }
    /* both ends alike, and still the large packets vanish: something between */
    for (size_t i = 0; i < np; i++) {
        const struct fabric_pair *p = &pairs[i];
        long mtu = nodes[p->from].mtu;
        if (p->conn != FABRIC_OK || mtu <= 0 || nodes[p->to].mtu != mtu)
            continue;
        if (p->udp_max == 0)
            doctor_warning (res,
                            "fabric: %s -> %s: no UDP probe passed (port %ld): a firewall that "
                            "drops UDP? the MTU of the path is not known",
                            nodes[p->from].name, nodes[p->to].name, nodes[p->to].port);
        else if (p->udp_max < mtu)
            FAIL (res, mode,
                  "fabric: %s -> %s: packets over %ld bytes are dropped on the way, though both "
                  "interfaces have MTU %ld: a switch or bridge between them with a smaller MTU?",
                  nodes[p->from].name, nodes[p->to].name, p->udp_max, mtu);
    }
}

static bool is_slow (const struct fabric_pair *p, double med)
{
    double bw = bandwidth (p);

    if (bw >= 0 && p->vs_ref > 0)
        return p->vs_ref * FABRIC_SLOW_FACTOR < 1;
    return bw >= 0 && bw * FABRIC_SLOW_FACTOR < med;
}

/* Each node's paths with a bandwidth sample, and the slow ones. */
static void tally_slow (const struct fabric_pair *pairs, size_t n, struct tally *t, double med)
{
    for (size_t i = 0; i < n; i++) {
        if (bandwidth (&pairs[i]) < 0)
            continue;
        t[pairs[i].from].measured++;
        t[pairs[i].to].measured++;
        t[pairs[i].from].slow += is_slow (&pairs[i], med);
        t[pairs[i].to].slow += is_slow (&pairs[i], med);
    }
}

/* Most of a node's paths are slow (at least two): its neighbours share
 * only one or two of them with it. */
static bool plainly_slow (const struct tally *t)
{
    return t->slow >= 2 && t->slow * 2 > t->measured;
}

/* A node most of whose paths are slow. */
static void name_slow_nodes (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                             const struct fabric_pair *pairs, size_t np, struct tally *t,
                             double med, double *mine)
{
    for (size_t x = 0; x < n; x++) {
        size_t k = 0;
        double m;
        if (!plainly_slow (&t[x]))
            continue;
        for (size_t i = 0; i < np; i++)
            if ((pairs[i].from == x || pairs[i].to == x) && bandwidth (&pairs[i]) >= 0)
                mine[k++] = bandwidth (&pairs[i]);
        m = median (mine, k);
        t[x].named_slow = true;
        doctor_warning (res,
                        "fabric: %s is slow: %.1f MB/s over its %zu paths (median), 1/%.0f of the "
                        "step's median %.1f MB/s; a degraded link, NIC or port on %s (ethtool "
                        "%s, its switch port)?",
                        nodes[x].name, m, k, m > 0 ? med / m : 0.0, med, nodes[x].name,
                        nodes[x].ifname[0] ? nodes[x].ifname : "its interface");
    }
}

static void judge_slow (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                        const struct fabric_pair *pairs, size_t np, struct tally *t, double med)
{
    double *mine = calloc (np + 1, sizeof (*mine));

    if (mine == NULL || med <= 0) {
        free (mine);
        return;
    }
    tally_slow (pairs, np, t, med);
    name_slow_nodes (res, nodes, n, pairs, np, t, med, mine);
    for (size_t i = 0; i < np; i++) {
        const struct fabric_pair *p = &pairs[i];
        double bw = bandwidth (p);
        if (!is_slow (p, med) || t[p->from].named_slow || t[p->to].named_slow)
            continue;
        if (p->vs_ref > 0)
            doctor_warning (res,
                            "fabric: the path %s -> %s is slow: measured again, 1/%.0f of %s's "
                            "fastest other path measured beside it",
                            nodes[p->from].name, nodes[p->to].name, 1 / p->vs_ref,
                            nodes[p->from].name);
        else
            doctor_warning (res,
                            "fabric: the path %s -> %s is slow: %.1f MB/s, 1/%.0f of the step's "
                            "median %.1f MB/s",
                            nodes[p->from].name, nodes[p->to].name, bw, bw > 0 ? med / bw : 0.0,
                            med);
    }
    free (mine);
}

static void judge_routes (struct doctor_result *res, const struct fabric_node *nodes,
                          const struct fabric_pair *pairs, size_t np)
{
    for (size_t i = 0; i < np; i++) {
        const struct fabric_pair *p = &pairs[i];
        const char *chosen = nodes[p->from].ifname;
        if (p->egress[0] == '\0' || chosen[0] == '\0' || strcmp (p->egress, chosen) == 0)
            continue;
        doctor_warning (res,
                        "fabric: %s reaches %s (%s) by the interface %s, not %s, the one the "
                        "collectives use: check 'ip route get %s' on %s",
                        nodes[p->from].name, nodes[p->to].name, nodes[p->to].addr, p->egress,
                        chosen, nodes[p->to].addr, nodes[p->from].name);
    }
}

size_t fabric_suspects (const struct fabric_pair *pairs, size_t n, size_t *idx)
{
    double *bw = calloc (n + 1, sizeof (*bw)), med;
    size_t k = 0, m = 0;

    for (size_t i = 0; bw != NULL && i < n; i++)
        if (bandwidth (&pairs[i]) >= 0)
            bw[m++] = bandwidth (&pairs[i]);
    med = bw != NULL ? median (bw, m) : -1;
    /* (a node most of whose paths are slow too: where nodes share CPUs, as
     * the test cluster's do, one pause of that node can span all of them) */
    for (size_t i = 0; i < n && med > 0; i++)
        if (is_slow (&pairs[i], med))
            idx[k++] = i;
    free (bw);
    return k;
}

void fabric_remeasured (struct fabric_pair *pairs, size_t n, const struct fabric_pair *again,
                        const struct fabric_pair *ref)
{
    for (size_t i = 0; i < n; i++) {
        struct fabric_pair *p = &pairs[i];
        if (p->from != again->from || p->to != again->to)
            continue;
        /* Beside a reference, the ratio alone: a timed sample is longer
         * than the first ones, and in the step's median it would move the
         * line the first samples are judged by.  With none, its best. */
        if (ref != NULL && bandwidth (ref) > 0) {
            if (bandwidth (again) / bandwidth (ref) > p->vs_ref)
                p->vs_ref = bandwidth (again) / bandwidth (ref);
        } else if (bandwidth (again) > bandwidth (p)) {
            p->bytes = again->bytes;
            p->usecs = again->usecs;
        }
        return;
    }
}

int fabric_judge (struct doctor_result *res, const struct fabric_node *nodes, size_t n,
                  const struct fabric_pair *pairs, size_t npairs, enum fabric_mode mode,
                  char *summary, size_t size)
{
    struct tally *t = calloc (n + 1, sizeof (*t));
    double *bw = calloc (npairs + 1, sizeof (*bw)), *rtt = calloc (npairs + 1, sizeof (*rtt));
    size_t nbw = 0, nrtt = 0, ok = 0, listening = 0;
    double med, med_rtt;

    if (t == NULL || bw == NULL || rtt == NULL) {
        free (t);
        free (bw);
        free (rtt);
        return -1;
    }
    for (size_t x = 0; x < n; x++) {
        if (nodes[x].port > 0)
            listening++;
        else
            doctor_warning (res, "fabric: the paths of %s were not checked: %s", nodes[x].name,
                            nodes[x].note[0] ? nodes[x].note : "it has no listener");
    }
    for (size_t i = 0; i < npairs; i++) {
        ok += pairs[i].conn == FABRIC_OK;
        if (bandwidth (&pairs[i]) >= 0)
            bw[nbw++] = bandwidth (&pairs[i]);
        if (pairs[i].conn == FABRIC_OK && pairs[i].rtt_us >= 0)
            rtt[nrtt++] = (double) pairs[i].rtt_us;
    }
    med = median (bw, nbw);
    med_rtt = median (rtt, nrtt);
    judge_blocked (res, nodes, n, pairs, npairs, t, mode);
    judge_mtu (res, nodes, n, pairs, npairs, mode);
    judge_slow (res, nodes, n, pairs, npairs, t, med);
    judge_routes (res, nodes, pairs, npairs);
    snprintf (summary, size,
              "fabric: %zu of %zu paths between %zu nodes connected in %u round%s; median %.1f "
              "MB/s, round trip %.0f us",
              ok, npairs, listening, fabric_rounds (n), fabric_rounds (n) == 1 ? "" : "s",
              med > 0 ? med : 0.0, med_rtt > 0 ? med_rtt : 0.0);
    free (t);
    free (bw);
    free (rtt);
    return 0;
}
