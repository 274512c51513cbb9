/* pmi2wire.c - requests, responses, values and the process mapping of PMI-2; no I/O. */
#include "shim/pmi2wire.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/dtshim.h"

int shim_pmi2_key (char *buf, size_t len, int rank, size_t chunk)
{
    int n = chunk == 0 ? snprintf (buf, len, "dtshim.%d", rank)
                       : snprintf (buf, len, "dtshim.%d.%zu", rank, chunk);

    if (rank < 0 || n < 0 || (size_t) n >= len || n > SHIM_PMI2_KEYLEN)
        return DTSHIM_ERR_INVALID;
    return DTSHIM_OK;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t shim_pmi2_encoded_len (size_t n)
{
    return n / 3 * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
}

void shim_pmi2_encode (const uint8_t *in, size_t n, char *out)
{
    size_t i = 0, o = 0;

    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (n - i == 1) {
        out[o++] = b64[in[i] >> 2];
        out[o++] = b64[(in[i] & 3) << 4];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t) in[i] << 8 | in[i + 1];
        out[o++] = b64[v >> 10];
        out[o++] = b64[(v >> 4) & 63];
        out[o++] = b64[(v & 15) << 2];
    }
    out[o] = '\0';
}

static int b64_value (char c)
{
    const char *p = c != '\0' ? strchr (b64, c) : NULL;

    return p != NULL ? (int) (p - b64) : -1;
}

long shim_pmi2_decode (const char *text, size_t len, uint8_t *out, size_t outlen)
{
    size_t o = 0, tail = len % 4, full = len - tail;
    int v[4];

    if (tail == 1 || len / 4 * 3 + (tail ? tail - 1 : 0) > outlen)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (b64_value (text[i]) < 0)
            return -1;
    }
    for (size_t i = 0; i < full; i += 4) {
        for (int k = 0; k < 4; k++)
            v[k] = b64_value (text[i + k]);
        out[o++] = (uint8_t) (v[0] << 2 | v[1] >> 4);
        out[o++] = (uint8_t) ((v[1] & 15) << 4 | v[2] >> 2);
        out[o++] = (uint8_t) ((v[2] & 3) << 6 | v[3]);
    }
    if (tail == 0)
        return (long) o;
    for (size_t k = 0; k < tail; k++)
        v[k] = b64_value (text[full + k]);
    out[o++] = (uint8_t) (v[0] << 2 | v[1] >> 4);
    /* Canonical only: the bits the last character carries beyond the data are zero, so one
	 * value has one text and a changed character is never read as the same bytes. */
    if (tail == 2)
        return (v[1] & 15) != 0 ? -1 : (long) o;
    out[o++] = (uint8_t) ((v[1] & 15) << 4 | v[2] >> 2);
    return (v[2] & 3) != 0 ? -1 : (long) o;
}

static bool plain (const char *s, bool key)
{
    for (; *s != '\0'; s++) {
        if (*s == ';' || *s == '\n' || (key && *s == '='))
            return false;
    }
    return true;
}

long shim_pmi2_request (char *buf, size_t len, const char *cmd, const char *const *fields,
                        size_t nfields)
{
    char header[8];
    size_t used = 6;
    int n;

    if (len < 7 || !plain (cmd, true))
        return -1;
    n = snprintf (buf + used, len - used, "cmd=%s;", cmd);
    if (n < 0 || (size_t) n >= len - used)
        return -1;
    used += (size_t) n;
    for (size_t i = 0; i + 1 < nfields && fields[i + 1] != NULL; i += 2) {
        if (!plain (fields[i], true) || !plain (fields[i + 1], false))
            return -1;
        n = snprintf (buf + used, len - used, "%s=%s;", fields[i], fields[i + 1]);
        if (n < 0 || (size_t) n >= len - used)
            return -1;
        used += (size_t) n;
    }
    if (used - 6 > SHIM_PMI2_MAX_MSG)
        return -1;
    /* The header last, through a copy: snprintf's NUL would land on the body. */
    n = snprintf (header, sizeof (header), "%-6zu", used - 6);
    memcpy (buf, header, 6);
    return n == 6 ? (long) used : -1;
}

long shim_pmi2_msg_len (const char header[6])
{
    long v = 0;
    int i = 0;

    for (; i < 6 && isdigit ((unsigned char) header[i]); i++)
        v = v * 10 + (header[i] - '0');
    if (i == 0)
        return -1;
    for (; i < 6; i++) {
        if (header[i] != ' ')
            return -1;
    }
    return v;
}

bool shim_pmi2_field (const char *body, size_t len, const char *key, const char **value,
                      size_t *vlen)
{
    size_t klen = strlen (key), i = 0;
    bool found = false;

    if (len < 4 || memcmp (body, "cmd=", 4) != 0)
        return false;
    while (i < len) {
        const char *eq = memchr (body + i, '=', len - i), *end;
        if (eq == NULL || eq == body + i)
            return false;
        end = memchr (eq, ';', len - (size_t) (eq - body));
        if (end == NULL || memchr (body + i, ';', (size_t) (eq - body) - i) != NULL)
            return false;
        if (!found && (size_t) (eq - body) - i == klen && memcmp (body + i, key, klen) == 0) {
            *value = eq + 1;
            *vlen = (size_t) (end - eq - 1);
            found = true;
        }
        i = (size_t) (end - body) + 1;
    }
    return found;
}

static bool field_is (const char *body, size_t len, const char *key, const char *want)
{
    const char *v;
    size_t n;

    return shim_pmi2_field (body, len, key, &v, &n) && n == strlen (want)
           && memcmp (v, want, n) == 0;
}

bool shim_pmi2_ok (const char *body, size_t len, const char *cmd)
{
    return field_is (body, len, "cmd", cmd) && field_is (body, len, "rc", "0");
}

/* A decimal number at *p (up to end), at most max; advances *p. */
static bool number (const char **p, const char *end, long max, long *out)
{
    long v = 0;
    const char *s = *p;

    while (*p < end && isdigit ((unsigned char) **p) && v <= max)
        v = v * 10 + (*(*p)++ - '0');
    *out = v;
    return *p > s && v <= max;
}

static bool literal (const char **p, const char *end, const char *want)
{
    size_t n = strlen (want);

    if ((size_t) (end - *p) < n || memcmp (*p, want, n) != 0)
        return false;
    *p += n;
    return true;
}

/* One triple ",(start,nodes,depth)" of a mapping at *p (up to end), its nodes at most
 * max_node and its depth at most size; advances *p. */
static bool triple (const char **p, const char *end, int size, int max_node, long *start,
                    long *nodes, long *depth)
{
    return literal (p, end, ",(") && number (p, end, max_node, start) && literal (p, end, ",")
           && number (p, end, max_node + 1L, nodes) && literal (p, end, ",")
           && number (p, end, size, depth) && literal (p, end, ")")
           && *start + *nodes <= max_node + 1L;
}

/* A triple that places ranks: depth ranks on each of nodes nodes from start. */
struct mapping_triple {
    int start, nodes, depth;
};

int shim_pmi2_mapping (const char *text, size_t len, int size, int max_node, int *node_of)
{
    const char *end = text + len, *p = text;
    struct mapping_triple *t;
    size_t n = 0, i;
    long start, nodes, depth;
    int placed = 0;

    if (size <= 0 || !literal (&p, end, "(vector"))
        return -1;
    /* The triples once, without those that place nothing: each pass over the rest then
     * places a rank per triple at least, so the passes cost the ranks placed and the
     * triples, not their product.  (Each triple takes 8 characters at least.) */
    if ((t = malloc ((len / 8 + 1) * sizeof (*t))) == NULL)
        return -1;
    while (!literal (&p, end, ")")) {
        if (!triple (&p, end, size, max_node, &start, &nodes, &depth)) {
            free (t);
            return -1;
        }
        if (nodes > 0 && depth > 0)
            t[n++] = (struct mapping_triple){(int) start, (int) nodes, (int) depth};
    }
    if (p != end || n == 0) {
        free (t);
        return -1;
    }
    while (placed < size)
        for (i = 0; i < n && placed < size; i++)
            for (int nd = t[i].start; nd < t[i].start + t[i].nodes && placed < size; nd++)
                for (int d = 0; d < t[i].depth && placed < size; d++)
                    node_of[placed++] = nd;
    free (t);
    return 0;
}

bool shim_pmi2_int_field (const char *body, size_t len, const char *key, int lo, int hi, int *out)
{
    const char *v;
    size_t n, i;
    long value = 0;

    if (!shim_pmi2_field (body, len, key, &v, &n) || n == 0 || n > 10)
        return false;
    for (i = 0; i < n; i++) {
        if (!isdigit ((unsigned char) v[i]))
            return false;
        value = value * 10 + (v[i] - '0');
    }
    if (value < lo || value > hi)
        return false;
    *out = (int) value;
    return true;
}

void shim_pmi2_shown (const char *text, size_t len, char *out, size_t size)
{
    size_t i;

    if (size == 0)
        return;
    for (i = 0; i < len && i + 1 < size; i++)
        out[i] = isprint ((unsigned char) text[i]) ? text[i] : '?';
    out[i] = '\0';
}
