/* auth.c - the doctor's handshake lines and their MACs (see
 * auth.h); HMAC-SHA256 and the constant-time compare are OpenSSL's. */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "doctor.h"
#include "auth.h"

#define MAGIC DOCTOR_PROGRAM " 3 "
#define MAC_LABEL DOCTOR_PROGRAM " "

static int hex_digit (char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int doctor_key_parse (const char *hex, struct doctor_key *key)
{
    size_t i;

    if (hex == NULL || strlen (hex) != 2 * DOCTOR_KEY_BYTES)
        return -1;
    for (i = 0; i < DOCTOR_KEY_BYTES; i++) {
        int hi = hex_digit (hex[2 * i]), lo = hex_digit (hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            OPENSSL_cleanse (key, sizeof (*key));
            return -1;
        }
        key->bytes[i] = (unsigned char) (hi << 4 | lo);
    }
    return 0;
}

int doctor_nonce (char out[DOCTOR_NONCE_HEX + 1])
{
    return dist_random_hex (out, DOCTOR_NONCE_HEX / 2);
}

/* The MAC, as hex, of head (a label and the nonces) and body. */
static int mac_of (const struct doctor_key *key, const char *head, const char *body, size_t bodylen,
                   char out[DOCTOR_MAC_HEX + 1])
{
    unsigned char data[DOCTOR_AUTH_LINE_MAX + DOCTOR_MSG_MAX];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t hlen = strlen (head);

    if (hlen > DOCTOR_AUTH_LINE_MAX || bodylen > DOCTOR_MSG_MAX)
        return -1;
    memcpy (data, head, hlen);
    if (bodylen > 0)
        memcpy (data + hlen, body, bodylen);
    if (HMAC (EVP_sha256 (), key->bytes, DOCTOR_KEY_BYTES, data, hlen + bodylen, md, &mdlen) == NULL
        || mdlen != DOCTOR_MAC_HEX / 2)
        return -1;
    dist_hex_text (md, mdlen, out);
    return 0;
}

/* Whether mac (DOCTOR_MAC_HEX characters from the network) is head's and
 * body's, without telling a forger how much of it was right. */
static bool mac_ok (const struct doctor_key *key, const char *head, const char *body,
                    size_t bodylen, const char *mac)
{
    char want[DOCTOR_MAC_HEX + 1];

    return mac_of (key, head, body, bodylen, want) == 0
           && CRYPTO_memcmp (want, mac, DOCTOR_MAC_HEX) == 0;
}

/* line without its '\n' into out (size bytes); -1 when too long or when
 * it holds a NUL, which no line of ours has. */
static int line_text (const char *line, size_t len, char *out, size_t size)
{
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len >= size || memchr (line, '\0', len) != NULL)
        return -1;
    memcpy (out, line, len);
    out[len] = '\0';
    return 0;
}

static int fits (int n, size_t size)
{
    return n < 0 || (size_t) n >= size ? -1 : n;
}

/* The hello's and the proof's shape: MAGIC WORD NONCE MAC, the MAC over head. */
static int nonce_line_format (const struct doctor_key *key, const char *word, const char *head,
                              const char *nonce, char *buf, size_t size)
{
    char mac[DOCTOR_MAC_HEX + 1];

    if (mac_of (key, head, NULL, 0, mac) < 0)
        return -1;
    return fits (snprintf (buf, size, MAGIC "%s %s %s\n", word, nonce, mac), size);
}

/* Such a line read back: its nonce, and where its MAC is in text (size
 * DOCTOR_AUTH_LINE_MAX); -1 when it is not one with word. */
static int nonce_line_parse (const char *word, const char *line, size_t len, char *text,
                             char nonce[DOCTOR_NONCE_HEX + 1], const char **mac)
{
    const size_t plen = strlen (MAGIC) + strlen (word) + 1;
    const char *p = text + plen;

    if (line_text (line, len, text, DOCTOR_AUTH_LINE_MAX) < 0
        || strlen (text) != plen + DOCTOR_NONCE_HEX + 1 + DOCTOR_MAC_HEX
        || strncmp (text, MAGIC, strlen (MAGIC)) != 0
        || strncmp (text + strlen (MAGIC), word, strlen (word)) != 0 || text[plen - 1] != ' '
        || !dist_lower_hex (p, DOCTOR_NONCE_HEX) || p[DOCTOR_NONCE_HEX] != ' '
        || !dist_lower_hex (p + DOCTOR_NONCE_HEX + 1, DOCTOR_MAC_HEX))
        return -1;
    memcpy (nonce, p, DOCTOR_NONCE_HEX);
    nonce[DOCTOR_NONCE_HEX] = '\0';
    *mac = p + DOCTOR_NONCE_HEX + 1;
    return 0;
}

/* The head a nonce line's MAC covers: "LABEL WORD A" or "LABEL WORD A B". */
static void nonce_head (const char *word, const char *a, const char *b, char *head, size_t size)
{
    if (b == NULL)
        snprintf (head, size, MAC_LABEL "%s %.32s", word, a);
    else
        snprintf (head, size, MAC_LABEL "%s %.32s %.32s", word, a, b);
}

/* A nonce line with word whose MAC covers word's head over a and, when the
 * line's own nonce is the second, that one: 0 with the line's nonce. */
static int nonce_line_check (const struct doctor_key *key, const char *word, const char *a,
                             const char *line, size_t len, char out[DOCTOR_NONCE_HEX + 1])
{
    char text[DOCTOR_AUTH_LINE_MAX], head[DOCTOR_AUTH_LINE_MAX], nonce[DOCTOR_NONCE_HEX + 1];
    const char *mac;

    if (nonce_line_parse (word, line, len, text, nonce, &mac) < 0)
        return -1;
    nonce_head (word, a != NULL ? a : nonce, a != NULL ? nonce : NULL, head, sizeof (head));
    if (!mac_ok (key, head, NULL, 0, mac))
        return -1;
    memcpy (out, nonce, sizeof (nonce));
    return 0;
}

static int nonce_line (const struct doctor_key *key, const char *word, const char *a, const char *b,
                       char *buf, size_t size)
{
    char head[DOCTOR_AUTH_LINE_MAX];

    nonce_head (word, a, b, head, sizeof (head));
    return nonce_line_format (key, word, head, b != NULL ? b : a, buf, size);
}

int doctor_hello_format (const struct doctor_key *key, const char *pn, char *buf, size_t size)
{
    return nonce_line (key, "hello", pn, NULL, buf, size);
}

int doctor_hello_check (const struct doctor_key *key, const char *line, size_t len,
                        char pn[DOCTOR_NONCE_HEX + 1])
{
    return nonce_line_check (key, "hello", NULL, line, len, pn);
}

int doctor_proof_format (const struct doctor_key *key, const char *pn, const char *sn, char *buf,
                         size_t size)
{
    return nonce_line (key, "rank0", pn, sn, buf, size);
}

int doctor_proof_check (const struct doctor_key *key, const char *pn, const char *line, size_t len,
                        char sn[DOCTOR_NONCE_HEX + 1])
{
    return nonce_line_check (key, "rank0", pn, line, len, sn);
}

int doctor_fabric_hello_format (const struct doctor_key *key, const char *fn, char *buf,
                                size_t size)
{
    return nonce_line (key, "fabric", fn, NULL, buf, size);
}

int doctor_fabric_hello_check (const struct doctor_key *key, const char *line, size_t len,
                               char fn[DOCTOR_NONCE_HEX + 1])
{
    return nonce_line_check (key, "fabric", NULL, line, len, fn);
}

int doctor_fabric_proof_format (const struct doctor_key *key, const char *fn, const char *rn,
                                char *buf, size_t size)
{
    return nonce_line (key, "fabric-ok", fn, rn, buf, size);
}

int doctor_fabric_proof_check (const struct doctor_key *key, const char *fn, const char *line,
                               size_t len, char rn[DOCTOR_NONCE_HEX + 1])
{
    return nonce_line_check (key, "fabric-ok", fn, line, len, rn);
}

/* A block: a header line "WORD LEN MAC\n", then LEN bytes, the MAC over
 * "LABEL WORD A B\n" and the bytes (the record, and the fabric check's plan
 * and results: each word its own, so no block passes for another). */
static void block_head (const char *word, const char *a, const char *b, char *head, size_t size)
{
    snprintf (head, size, MAC_LABEL "%.16s %.32s %.32s\n", word, a, b);
}

int doctor_block_header (const struct doctor_key *key, const char *word, const char *a,
                         const char *b, const char *body, size_t len, char *buf, size_t size)
{
    char head[DOCTOR_AUTH_LINE_MAX], mac[DOCTOR_MAC_HEX + 1];

    block_head (word, a, b, head, sizeof (head));
    if (len == 0 || mac_of (key, head, body, len, mac) < 0)
        return -1;
    return fits (snprintf (buf, size, "%s %zu %s\n", word, len, mac), size);
}

int doctor_block_header_parse (const char *word, const char *line, size_t len, size_t *bodylen,
                               char mac[DOCTOR_MAC_HEX + 1])
{
    char text[DOCTOR_AUTH_LINE_MAX];
    size_t n = 0, i = strlen (word);

    if (line_text (line, len, text, sizeof (text)) < 0 || strncmp (text, word, i) != 0
        || text[i++] != ' ')
        return -1;
    /* at most 5 digits, no leading zero: DOCTOR_MSG_MAX is 12288 */
    if (text[i] < '1' || text[i] > '9')
        return -1;
    for (; text[i] >= '0' && text[i] <= '9' && n <= DOCTOR_MSG_MAX; i++)
        n = n * 10 + (size_t) (text[i] - '0');
    if (n > DOCTOR_MSG_MAX || text[i] != ' ' || strlen (text + i + 1) != DOCTOR_MAC_HEX
        || !dist_lower_hex (text + i + 1, DOCTOR_MAC_HEX))
        return -1;
    *bodylen = n;
    memcpy (mac, text + i + 1, DOCTOR_MAC_HEX + 1);
    return 0;
}

int doctor_block_check (const struct doctor_key *key, const char *word, const char *a,
                        const char *b, const char *body, size_t len, const char *mac)
{
    char head[DOCTOR_AUTH_LINE_MAX];

    block_head (word, a, b, head, sizeof (head));
    return mac_ok (key, head, body, len, mac) ? 0 : -1;
}

int doctor_record_header (const struct doctor_key *key, const char *sn, const char *pn,
                          const char *rec, size_t reclen, char *buf, size_t size)
{
    return doctor_block_header (key, "record", sn, pn, rec, reclen, buf, size);
}

int doctor_record_header_parse (const char *line, size_t len, size_t *reclen,
                                char mac[DOCTOR_MAC_HEX + 1])
{
    return doctor_block_header_parse ("record", line, len, reclen, mac);
}

int doctor_record_check (const struct doctor_key *key, const char *sn, const char *pn,
                         const char *rec, size_t reclen, const char *mac)
{
    return doctor_block_check (key, "record", sn, pn, rec, reclen, mac);
}

/* A line of a word and a MAC over "LABEL WORD PN SN": the taken line and
 * the verdicts. */
static void word_head (const char *word, const char *pn, const char *sn, char *head, size_t size)
{
    snprintf (head, size, MAC_LABEL "%.7s %.32s %.32s", word, pn, sn);
}

static int word_format (const struct doctor_key *key, const char *word, const char *pn,
                        const char *sn, char *buf, size_t size)
{
    char head[DOCTOR_AUTH_LINE_MAX], mac[DOCTOR_MAC_HEX + 1];

    word_head (word, pn, sn, head, sizeof (head));
    if (mac_of (key, head, NULL, 0, mac) < 0)
        return -1;
    return fits (snprintf (buf, size, "%s %s\n", word, mac), size);
}

/* The word of a word line (one of words, NULL-terminated) whose MAC is
 * right; NULL for anything else. */
static const char *word_check (const struct doctor_key *key, const char *const *words,
                               const char *pn, const char *sn, const char *line, size_t len)
{
    char text[DOCTOR_AUTH_LINE_MAX], head[DOCTOR_AUTH_LINE_MAX];
    const char *sp;
    size_t wlen;

    if (line_text (line, len, text, sizeof (text)) < 0 || (sp = strchr (text, ' ')) == NULL
        || strlen (sp + 1) != DOCTOR_MAC_HEX || !dist_lower_hex (sp + 1, DOCTOR_MAC_HEX))
        return NULL;
    wlen = (size_t) (sp - text);
    for (; *words != NULL; words++)
        if (strlen (*words) == wlen && memcmp (text, *words, wlen) == 0) {
            word_head (*words, pn, sn, head, sizeof (head));
            return mac_ok (key, head, NULL, 0, sp + 1) ? *words : NULL;
        }
    return NULL;
}

int doctor_taken_format (const struct doctor_key *key, const char *pn, const char *sn, char *buf,
                         size_t size)
{
    return word_format (key, "taken", pn, sn, buf, size);
}

int doctor_taken_check (const struct doctor_key *key, const char *pn, const char *sn,
                        const char *line, size_t len)
{
    static const char *const taken[] = {"taken", NULL};

    return word_check (key, taken, pn, sn, line, len) != NULL ? 0 : -1;
}

int doctor_verdict_format (const struct doctor_key *key, const char *pn, const char *sn, bool ok,
                           char *buf, size_t size)
{
    return word_format (key, ok ? "ok" : "problem", pn, sn, buf, size);
}

int doctor_verdict_check (const struct doctor_key *key, const char *pn, const char *sn,
                          const char *line, size_t len, bool *ok)
{
    static const char *const verdicts[] = {"ok", "problem", NULL};
    const char *word = word_check (key, verdicts, pn, sn, line, len);

    if (word == NULL)
        return -1;
    *ok = word == verdicts[0];
    return 0;
}

/* The watcher's report: body "NODEID SEQ IDLE_MS NAME", MAC over the label,
 * the decider's nonce and the body. */
static void watch_head (const char *nonce, char *head, size_t size)
{
    snprintf (head, size, MAC_LABEL "watch %.32s ", nonce);
}

int doctor_watch_format (const struct doctor_key *key, const char *nonce,
                         const struct doctor_watch *w, char *buf, size_t size)
{
    char head[DOCTOR_AUTH_LINE_MAX], body[DOCTOR_AUTH_LINE_MAX], mac[DOCTOR_MAC_HEX + 1];
    int n =
        snprintf (body, sizeof (body), "%lu %lu %ld %s", w->node_id, w->seq, w->idle_ms, w->name);

    if (fits (n, sizeof (body)) < 0 || strpbrk (w->name, " \n") != NULL || w->name[0] == '\0')
        return -1;
    watch_head (nonce, head, sizeof (head));
    if (mac_of (key, head, body, (size_t) n, mac) < 0)
        return -1;
    return fits (snprintf (buf, size, "watch %s %s\n", body, mac), size);
}

int doctor_watch_check (const struct doctor_key *key, const char *nonce, const char *line,
                        size_t len, struct doctor_watch *w)
{
    char text[DOCTOR_AUTH_LINE_MAX], head[DOCTOR_AUTH_LINE_MAX], name[DOCTOR_NAME_MAX];
    unsigned long id, seq;
    long idle;
    int body_at = -1, body_end = -1, mac_at = -1;
    const char *mac;

    if (line_text (line, len, text, sizeof (text)) < 0
        || sscanf (text, "watch %n%lu %lu %ld %63s%n %n", &body_at, &id, &seq, &idle, name,
                   &body_end, &mac_at)
               != 4
        || body_end < 0 || mac_at < 0 || strlen (text + mac_at) != DOCTOR_MAC_HEX
        || !dist_lower_hex (text + mac_at, DOCTOR_MAC_HEX) || idle < 0 || text[body_at] == '-'
        || text[body_at] == '+')
        return -1;
    mac = text + mac_at;
    watch_head (nonce, head, sizeof (head));
    if (!mac_ok (key, head, text + body_at, (size_t) (body_end - body_at), mac))
        return -1;
    w->node_id = id;
    w->seq = seq;
    w->idle_ms = idle;
    snprintf (w->name, sizeof (w->name), "%s", name);
    return 0;
}
