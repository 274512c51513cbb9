/* fuzz_doctor.c - dist-train-doctor's wire: what anyone who connects to
 * rank 0's port can send (the handshake's lines, a record), and what a
 * rank reads back (rank 0's proof, the verdict); tools/doctor/auth.c and
 * tools/doctor/wire.c.  Input: byte 0 picks the side, the rest is the
 * bytes on the connection.  The same bytes are also read as the texts the
 * stack's checks take from the environment and /proc (tools/doctor/stack.c):
 * a release, a port range, the reserved ports.  The key and the nonces are fixed (the seeds
 * hold lines signed with them); a line that passes a check must be the
 * very line the key's holder writes. */
#include <ctype.h>

#include "tests/fuzz/fuzz.h"
#include "tools/doctor/doctor.h"
#include "tools/doctor/auth.h"
#include "tools/doctor/stack.h"

static const char KEY[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
static const char PN[] = "0123456789abcdef0123456789abcdef";
static const char SN[] = "fedcba9876543210fedcba9876543210";

static void check_text (const char *s, size_t size)
{
    size_t n = strnlen (s, size);

    FUZZ_CHECK (n < size);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK (s[i] >= 0x20 && s[i] < 0x7f);
}

/* A decoded record: bounded, printable, numbers -1 or counts. */
static void check_record (const struct doctor_rank *r)
{
    check_text (r->node, sizeof (r->node));
    check_text (r->ifname, sizeof (r->ifname));
    check_text (r->source, sizeof (r->source));
    check_text (r->master_addr, sizeof (r->master_addr));
    check_text (r->master_port, sizeof (r->master_port));
    check_text (r->visible, sizeof (r->visible));
    check_text (r->gpus, sizeof (r->gpus));
    check_text (r->device, sizeof (r->device));
    check_text (r->cpus, sizeof (r->cpus));
    check_text (r->plan_cpus, sizeof (r->plan_cpus));
    FUZZ_CHECK (r->rank >= -1 && r->world_size >= -1 && r->procid >= -1);
}

/* Two records say the same (what follows a string's NUL may differ: a
 * key given twice leaves the longer value's tail). */
static bool same_record (const struct doctor_rank *a, const struct doctor_rank *b)
{
    return a->procid == b->procid && a->rank == b->rank && a->local_rank == b->local_rank
           && a->world_size == b->world_size && a->local_world_size == b->local_world_size
           && a->group_rank == b->group_rank && a->connect_ms == b->connect_ms
           && strcmp (a->node, b->node) == 0 && strcmp (a->ifname, b->ifname) == 0
           && strcmp (a->source, b->source) == 0 && strcmp (a->master_addr, b->master_addr) == 0
           && strcmp (a->master_port, b->master_port) == 0 && strcmp (a->visible, b->visible) == 0
           && strcmp (a->gpus, b->gpus) == 0 && strcmp (a->device, b->device) == 0
           && strcmp (a->cpus, b->cpus) == 0 && strcmp (a->plan_cpus, b->plan_cpus) == 0;
}

/* The line at *p (up to and with its '\n', or the rest); its length. */
static size_t next_line (const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr (*p, '\n', (size_t) (end - *p));
    size_t len = nl != NULL ? (size_t) (nl - *p) + 1 : (size_t) (end - *p);

    *p += len;
    return len;
}

/* What passed a check is exactly the line the key's holder writes: no
 * other spelling of it, and nothing else, gets through. */
static void check_canonical (const char *line, size_t len, const char *ours, int n)
{
    if (len > 0 && line[len - 1] != '\n')
        len++; /* (a line without its '\n' is read as one with it) */
    FUZZ_CHECK (n > 0 && (size_t) n == len && memcmp (line, ours, len - 1) == 0);
}

/* Rank 0's side: hello, header, record, as tools/doctor/serve.c reads them. */
static void as_rank0 (const struct doctor_key *key, const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size, *line;
    char pn[DOCTOR_NONCE_HEX + 1], mac[DOCTOR_MAC_HEX + 1];
    struct doctor_rank rec;
    size_t len, reclen;

    line = p;
    len = next_line (&p, end);
    if (doctor_hello_check (key, (const char *) line, len, pn) == 0) {
        char ours[DOCTOR_AUTH_LINE_MAX];
        FUZZ_CHECK (strlen (pn) == DOCTOR_NONCE_HEX);
        check_canonical ((const char *) line, len, ours,
                         doctor_hello_format (key, pn, ours, sizeof (ours)));
    }
    line = p;
    len = next_line (&p, end);
    if (doctor_record_header_parse ((const char *) line, len, &reclen, mac) == 0) {
        FUZZ_CHECK (reclen >= 1 && reclen <= DOCTOR_MSG_MAX && strlen (mac) == DOCTOR_MAC_HEX);
        if (reclen <= (size_t) (end - p)
            && doctor_record_check (key, SN, PN, (const char *) p, reclen, mac) == 0) {
            char ours[DOCTOR_AUTH_LINE_MAX];
            check_canonical (
                (const char *) line, len, ours,
                doctor_record_header (key, SN, PN, (const char *) p, reclen, ours, sizeof (ours)));
        }
    }
    /* the decoder itself, as if a record had passed */
    if (doctor_wire_decode ((const char *) p, (size_t) (end - p), &rec) == 0)
        check_record (&rec);
}

/* A rank's side: rank 0's proof, its word that the record is taken, then the verdict. */
static void as_rank (const struct doctor_key *key, const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size, *line;
    char sn[DOCTOR_NONCE_HEX + 1], ours[DOCTOR_AUTH_LINE_MAX];
    size_t len;
    bool ok;

    line = p;
    len = next_line (&p, end);
    if (doctor_proof_check (key, PN, (const char *) line, len, sn) == 0)
        check_canonical ((const char *) line, len, ours,
                         doctor_proof_format (key, PN, sn, ours, sizeof (ours)));
    line = p;
    len = next_line (&p, end);
    if (doctor_taken_check (key, PN, SN, (const char *) line, len) == 0)
        check_canonical ((const char *) line, len, ours,
                         doctor_taken_format (key, PN, SN, ours, sizeof (ours)));
    line = p;
    len = next_line (&p, end);
    if (doctor_verdict_check (key, PN, SN, (const char *) line, len, &ok) == 0)
        check_canonical ((const char *) line, len, ours,
                         doctor_verdict_format (key, PN, SN, ok, ours, sizeof (ours)));
}

/* The input as a record we sign: it must pass, and fail once changed; what
 * decodes encodes and decodes the same. */
static void signed_record (const struct doctor_key *key, const uint8_t *data, size_t size)
{
    char line[DOCTOR_AUTH_LINE_MAX], mac[DOCTOR_MAC_HEX + 1], *rec, *again;
    struct doctor_rank r, back;
    size_t reclen;
    int n;

    if (size == 0 || size > DOCTOR_MSG_MAX)
        return;
    n = doctor_record_header (key, SN, PN, (const char *) data, size, line, sizeof (line));
    FUZZ_CHECK (n > 0);
    FUZZ_CHECK (doctor_record_header_parse (line, (size_t) n, &reclen, mac) == 0 && reclen == size);
    FUZZ_CHECK (doctor_record_check (key, SN, PN, (const char *) data, size, mac) == 0);
    rec = malloc (size);
    memcpy (rec, data, size);
    rec[size / 2] ^= 1;
    FUZZ_CHECK (doctor_record_check (key, SN, PN, rec, size, mac) < 0);
    free (rec);
    if (doctor_wire_decode ((const char *) data, size, &r) == 0) {
        check_record (&r);
        again = malloc (DOCTOR_MSG_MAX);
        n = doctor_wire_encode (&r, again, DOCTOR_MSG_MAX);
        if (n > 0) {
            FUZZ_CHECK (doctor_wire_decode (again, (size_t) n, &back) == 0);
            FUZZ_CHECK (same_record (&r, &back));
        }
        free (again);
    }
}

/* A release and a range parse whole or not at all; the reserved ports, whatever they say,
 * give a verdict and one printable line. */
static void check_stack_texts (const uint8_t *data, size_t size)
{
    char *text = fuzz_string (data, size), msg[1024];
    struct doctor_version v;
    struct doctor_range r;
    struct doctor_port_facts f = {.plugin = {30000, 40000},
                                  .srun = {-1, -1},
                                  .ephemeral = {32768, 60999},
                                  .master_port = 35000};
    enum doctor_verdict verdict;

    if (doctor_version_parse (text, &v) == 0)
        FUZZ_CHECK (v.major >= 0 && v.minor >= 0 && v.micro >= 0);
    if (doctor_range_parse (text, &r) == 0)
        FUZZ_CHECK (r.lo >= 0 && r.lo <= r.hi);
    else
        FUZZ_CHECK (r.lo < 0);
    f.reserved = text;
    verdict = doctor_check_ephemeral_ports (&f, msg, sizeof (msg));
    FUZZ_CHECK (verdict == DOCTOR_FINE || verdict == DOCTOR_WARN);
    check_text (msg, sizeof (msg));
    free (text);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    struct doctor_key key;

    check_stack_texts (data, size);
    if (size < 1 || doctor_key_parse (KEY, &key) < 0)
        return 0;
    switch (data[0] % 3) {
    case 0:
        as_rank0 (&key, data + 1, size - 1);
        break;
    case 1:
        as_rank (&key, data + 1, size - 1);
        break;
    default:
        signed_record (&key, data + 1, size - 1);
        break;
    }
    return 0;
}
