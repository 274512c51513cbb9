/* handover.c - the text srun hands to every node (see handover.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "handover.h"

/* Node names and addresses: letters, digits and ".-_:" only, so the text
 * splits on spaces and nothing odd reaches a message or a lookup. */
static bool valid_name (const char *s)
{
    if (strlen (s) >= DIST_NODE_MAX)
        return false;
    for (; *s != '\0'; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')
              || *s == '.' || *s == '-' || *s == '_' || *s == ':'))
            return false;
    return true;
}

bool dist_lower_hex (const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* A key: exactly DIST_STEP_KEY_HEX lowercase hex digits. */
static bool valid_key (const char *s, size_t len)
{
    return len == DIST_STEP_KEY_HEX && dist_lower_hex (s, len);
}

int dist_handover_format (const struct dist_handover *h, char *buf, size_t size)
{
    size_t klen = strnlen (h->key, sizeof (h->key));
    int n;

    if (!valid_name (h->rank0_node) || !valid_name (h->rank0_addr)
        || (klen > 0 && !valid_key (h->key, klen)))
        return -1;
    n = snprintf (buf, size, "step=%" PRIu32 ".%" PRIu32 " rank0=%s addr=%s fail_fast=%d%s%.*s",
                  h->job_id, h->step_id, h->rank0_node, h->rank0_addr, h->fail_fast ? 1 : 0,
                  klen > 0 ? " key=" : "", (int) klen, h->key);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

void dist_hex_text (const unsigned char *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

int dist_random_hex (char *out, size_t nbytes)
{
    unsigned char bytes[64];
    size_t got = 0;
    ssize_t n;

    out[0] = '\0';
    if (nbytes > sizeof (bytes))
        return -1;
    while (got < nbytes) {
        n = getrandom (bytes + got, nbytes - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t) n;
    }
    dist_hex_text (bytes, nbytes, out);
    return 0;
}

static int parse_u32 (const char *s, const char *end, uint32_t *out)
{
    unsigned long long v = 0;

    if (s == end || end - s > 10)
        return -1;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (unsigned) (*s - '0');
    }
    if (v > UINT32_MAX)
        return -1;
    *out = (uint32_t) v;
    return 0;
}

/* Whether the key of klen bytes at w is name. */
static bool key_is (const char *w, size_t klen, const char *name)
{
    return klen == strlen (name) && memcmp (w, name, klen) == 0;
}

/* "job.step", the value from v to end. */
static int parse_step (const char *v, const char *end, struct dist_handover *h)
{
    const char *dot = memchr (v, '.', (size_t) (end - v));

    if (dot == NULL || parse_u32 (v, dot, &h->job_id) < 0
        || parse_u32 (dot + 1, end, &h->step_id) < 0)
        return -1;
    return 0;
}

static int parse_fail_fast (const char *v, size_t vlen, struct dist_handover *h)
{
    if (vlen != 1 || (v[0] != '0' && v[0] != '1'))
        return -1;
    h->fail_fast = v[0] == '1';
    return 0;
}

static int parse_key (const char *v, size_t vlen, struct dist_handover *h)
{
    if (!valid_key (v, vlen))
        return -1;
    memcpy (h->key, v, vlen);
    h->key[vlen] = '\0';
    return 0;
}

/* A node name or address into dest (DIST_NODE_MAX bytes). */
static int parse_name (const char *v, size_t vlen, char *dest)
{
    if (vlen >= DIST_NODE_MAX)
        return -1;
    memcpy (dest, v, vlen);
    dest[vlen] = '\0';
    return valid_name (dest) ? 0 : -1;
}

/* One "key=value" word of len bytes. */
static int parse_word (const char *w, size_t len, struct dist_handover *h, bool *have_step)
{
    const char *eq = memchr (w, '=', len), *end = w + len;
    size_t klen, vlen;

    if (eq == NULL)
        return -1;
    klen = (size_t) (eq - w);
    vlen = (size_t) (end - eq - 1);
    if (key_is (w, klen, "step")) {
        if (parse_step (eq + 1, end, h) < 0)
            return -1;
        *have_step = true;
        return 0;
    }
    if (key_is (w, klen, "fail_fast"))
        return parse_fail_fast (eq + 1, vlen, h);
    if (key_is (w, klen, "key"))
        return parse_key (eq + 1, vlen, h);
    if (key_is (w, klen, "rank0"))
        return parse_name (eq + 1, vlen, h->rank0_node);
    if (key_is (w, klen, "addr"))
        return parse_name (eq + 1, vlen, h->rank0_addr);
    return -1;
}

int dist_handover_parse (const char *text, struct dist_handover *h)
{
    bool have_step = false;
    const char *p = text, *w;

    memset (h, 0, sizeof (*h));
    if (text == NULL || strlen (text) >= DIST_HANDOVER_MAX)
        return -1;
    while (*p != '\0') {
        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        w = p;
        while (*p != '\0' && *p != ' ')
            p++;
        if (parse_word (w, (size_t) (p - w), h, &have_step) < 0) {
            memset (h, 0, sizeof (*h));
            return -1;
        }
    }
    if (!have_step) {
        memset (h, 0, sizeof (*h));
        return -1;
    }
    return 0;
}

/* How many values from values[i] on hold v. */
static uint32_t repeats (const uint32_t *values, uint32_t i, uint32_t count, uint32_t v)
{
    uint32_t n = 0;

    while (i + n < count && values[i + n] == v)
        n++;
    return n;
}

int dist_runs_append (char *text, size_t size, size_t *len, const uint32_t *values, uint32_t count,
                      uint32_t bound)
{
    uint32_t i = 0, k, terms, last;
    int64_t step;
    int n;

    while (i < count) {
        if (values[i] >= bound)
            return -1;
        /* a run of k, then more runs of k each one above (or below) the last: one range */
        k = repeats (values, i, count, values[i]);
        terms = 1;
        last = values[i];
        if (i + k < count && (values[i + k] == last + 1 || values[i + k] + 1 == last)) {
            step = values[i + k] > last ? 1 : -1;
            while (i + (uint64_t) (terms + 1) * k <= count && (int64_t) last + step >= 0
                   && (int64_t) last + step < bound
                   && repeats (values, i + terms * k, count, (uint32_t) (last + step)) == k) {
                last = (uint32_t) (last + step);
                terms++;
            }
        }
        n = snprintf (text + *len, size - *len, "%s%" PRIu32, i > 0 ? "," : "", values[i]);
        if (n >= 0 && (size_t) n < size - *len && terms > 1) {
            *len += (size_t) n;
            n = snprintf (text + *len, size - *len, "..%" PRIu32, last);
        }
        if (n >= 0 && (size_t) n < size - *len && k > 1) {
            *len += (size_t) n;
            n = snprintf (text + *len, size - *len, "*%" PRIu32, k);
        }
        if (n < 0 || (size_t) n >= size - *len)
            return -1;
        *len += (size_t) n;
        i += terms * k;
    }
    return 0;
}

char *dist_layout_text (uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                        const uint32_t *node_of_rank, uint32_t nranks)
{
    char *text = malloc (DIST_LAYOUT_TEXT_MAX);
    size_t len;
    int n;

    if (text == NULL)
        return NULL;
    n = snprintf (text, DIST_LAYOUT_TEXT_MAX,
                  "step=%" PRIu32 ".%" PRIu32 " nodes=%" PRIu32 " ranks=%" PRIu32 " layout=",
                  job_id, step_id, nnodes, nranks);
    len = (size_t) n;
    if (dist_runs_append (text, DIST_LAYOUT_TEXT_MAX, &len, node_of_rank, nranks, nnodes) < 0) {
        free (text);
        return NULL;
    }
    return text;
}

/* The number at *p up to one of the characters in stop (or the end), *p moved
 * past it. */
int dist_take_u32 (const char **p, const char *stop, uint32_t *out)
{
    const char *end = *p + strcspn (*p, stop);

    if (parse_u32 (*p, end, out) < 0)
        return -1;
    *p = end;
    return 0;
}

/* "word=" at *p, *p moved past it. */
bool dist_take_word (const char **p, const char *word)
{
    size_t len = strlen (word);

    if (strncmp (*p, word, len) != 0)
        return false;
    *p += len;
    return true;
}

int dist_layout_text_header (const char **p, uint32_t *job, uint32_t *step, uint32_t *nodes,
                             uint32_t *ranks)
{
    if (!dist_take_word (p, "step=") || dist_take_u32 (p, ".", job) < 0 || !dist_take_word (p, ".")
        || dist_take_u32 (p, " ", step) < 0 || !dist_take_word (p, " nodes=")
        || dist_take_u32 (p, " ", nodes) < 0 || !dist_take_word (p, " ranks=")
        || dist_take_u32 (p, " ", ranks) < 0 || !dist_take_word (p, " layout="))
        return -1;
    return 0;
}

/* One run at *p, *p moved past it: "V", "V*K" (K of V), "V..W" (V to W, up or down) or
 * "V..W*K" (K of each); values below bound, and at most left of them in all. */
static int take_run (const char **p, uint32_t bound, uint32_t left, uint32_t *first, uint32_t *last,
                     uint32_t *each)
{
    uint64_t terms;

    if (dist_take_u32 (p, "*,.", first) < 0 || *first >= bound)
        return -1;
    *last = *first;
    *each = 1;
    if (dist_take_word (p, "..") && (dist_take_u32 (p, "*,", last) < 0 || *last >= bound))
        return -1;
    if (**p == '*' && (++*p, dist_take_u32 (p, ",", each) < 0 || *each == 0))
        return -1;
    terms = (uint64_t) (*last > *first ? *last - *first : *first - *last) + 1;
    return terms * *each > left ? -1 : 0;
}

int dist_runs_read (const char *p, uint32_t bound, uint32_t count, struct dist_runs *out)
{
    struct dist_run run, *more;
    uint32_t i = 0, cap = 0;

    memset (out, 0, sizeof (*out));
    while (i < count) {
        if ((i > 0 && !dist_take_word (&p, ","))
            || take_run (&p, bound, count - i, &run.first, &run.last, &run.each) < 0)
            goto fail;
        if (out->n == cap) {
            cap = cap > 0 ? 2 * cap : 8;
            if ((more = realloc (out->run, cap * sizeof (*more))) == NULL)
                goto fail;
            out->run = more;
        }
        run.start = i;
        out->run[out->n++] = run;
        i += dist_run_length (&run);
    }
    if (*p != '\0')
        goto fail;
    out->count = count;
    out->bound = bound;
    return 0;
fail:
    dist_runs_free (out);
    return -1;
}

void dist_runs_free (struct dist_runs *r)
{
    free (r->run);
    memset (r, 0, sizeof (*r));
}

uint32_t dist_run_length (const struct dist_run *run)
{
    return ((run->last > run->first ? run->last - run->first : run->first - run->last) + 1)
           * run->each;
}

uint32_t dist_run_value (const struct dist_run *run, uint32_t offset)
{
    uint32_t term = offset / run->each;

    return run->last >= run->first ? run->first + term : run->first - term;
}

uint32_t dist_runs_find (const struct dist_runs *r, uint32_t i)
{
    uint32_t lo = 0, hi = r->n;

    /* the last run that starts at or before i */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->run[mid].start <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

uint32_t dist_runs_value (const struct dist_runs *r, uint32_t i)
{
    const struct dist_run *run = &r->run[dist_runs_find (r, i)];

    return dist_run_value (run, i - run->start);
}

void dist_runs_expand (const struct dist_runs *r, uint32_t *values)
{
    uint32_t i = 0;

    for (uint32_t k = 0; k < r->n; k++)
        for (uint32_t o = 0, len = dist_run_length (&r->run[k]); o < len; o++)
            values[i++] = dist_run_value (&r->run[k], o);
}

int dist_layout_text_runs (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                           uint32_t nranks, struct dist_runs *runs)
{
    const char *p = text;
    uint32_t job, step, nodes, ranks;

    memset (runs, 0, sizeof (*runs));
    if (text == NULL || strnlen (text, DIST_LAYOUT_TEXT_MAX) >= DIST_LAYOUT_TEXT_MAX
        || dist_layout_text_header (&p, &job, &step, &nodes, &ranks) < 0 || job != job_id
        || step != step_id || nodes != nnodes || ranks != nranks
        || dist_runs_read (p, nnodes, nranks, runs) < 0)
        return -1;
    return 0;
}

int dist_layout_text_parse (const char *text, uint32_t job_id, uint32_t step_id, uint32_t nnodes,
                            uint32_t nranks, uint32_t *node_of_rank)
{
    struct dist_runs runs;

    if (dist_layout_text_runs (text, job_id, step_id, nnodes, nranks, &runs) < 0)
        return -1;
    dist_runs_expand (&runs, node_of_rank);
    dist_runs_free (&runs);
    return 0;
}
