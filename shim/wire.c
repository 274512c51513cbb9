/* wire.c - key names, frames, the preemption vote and settings parsing; no PMIx calls. */
#include "shim/wire.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shim/dtshim.h"

static const uint8_t frame_magic[4] = {'D', 'T', 'S', '1'};

size_t shim_chunk_count (size_t frame_len, size_t chunk)
{
    return frame_len == 0 ? 1 : (frame_len + chunk - 1) / chunk;
}

size_t shim_chunk_len (size_t frame_len, size_t chunk, size_t i)
{
    if (i * chunk >= frame_len)
        return 0;
    return frame_len - i * chunk < chunk ? frame_len - i * chunk : chunk;
}

int shim_key (char *buf, size_t len, uint64_t seq, size_t chunk)
{
    int n = chunk == 0 ? snprintf (buf, len, "dtshim.%llu", (unsigned long long) seq)
                       : snprintf (buf, len, "dtshim.%llu.%zu", (unsigned long long) seq, chunk);

    return (n < 0 || (size_t) n >= len) ? DTSHIM_ERR_INVALID : DTSHIM_OK;
}

void shim_put_le (uint8_t *out, uint64_t v, int bytes)
{
    /* Little-endian on the wire, whatever the hosts are. */
    for (int i = 0; i < bytes; i++)
        out[i] = (uint8_t) (v >> (8 * i));
}

uint64_t shim_get_le (const uint8_t *in, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++)
        v |= (uint64_t) in[i] << (8 * i);
    return v;
}

void shim_frame_header (uint8_t *out, enum shim_op op, uint64_t seq, uint64_t size)
{
    memcpy (out, frame_magic, sizeof (frame_magic));
    out[4] = (uint8_t) op;
    out[5] = out[6] = out[7] = 0;
    shim_put_le (out + 8, size, 8);
    shim_put_le (out + 16, seq, 8);
}

int shim_frame_header_parse (const uint8_t *header, enum shim_op op, uint64_t seq, uint64_t *size)
{
    uint64_t n;

    if (memcmp (header, frame_magic, 4) != 0)
        return DTSHIM_ERR_PMIX;
    if (header[4] != (uint8_t) op || shim_get_le (header + 16, 8) != seq)
        return DTSHIM_ERR_MISMATCH;
    n = shim_get_le (header + 8, 8);
    if (n > SHIM_MAX_PAYLOAD)
        return DTSHIM_ERR_PMIX;
    *size = n;
    return DTSHIM_OK;
}

int shim_frame_parse (const uint8_t *chunk, size_t len, enum shim_op op, uint64_t seq,
                      uint64_t *size)
{
    uint64_t n;
    int rv;

    if (chunk == NULL || len < SHIM_FRAME_HEADER)
        return DTSHIM_ERR_PMIX;
    if ((rv = shim_frame_header_parse (chunk, op, seq, &n)) != DTSHIM_OK)
        return rv;
    if (len != shim_chunk_len (SHIM_FRAME_HEADER + (size_t) n, SHIM_CHUNK, 0))
        return DTSHIM_ERR_PMIX;
    *size = n;
    return DTSHIM_OK;
}

int shim_parse_timeout (const char *text, double *seconds)
{
    char *end;
    double v;

    if (text == NULL || *text == '\0')
        return -1;
    errno = 0;
    v = strtod (text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite (v) || v < 0 || v > SHIM_TIMEOUT_MAX)
        return -1;
    *seconds = v;
    return 0;
}

static const struct {
    const char *name;
    int signo;
} signal_names[] = {
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"INT", SIGINT},
    {"QUIT", SIGQUIT}, {"XCPU", SIGXCPU}, {"PWR", SIGPWR},
};

bool shim_signal_allowed (int signo)
{
    switch (signo) {
    case SIGKILL:
    case SIGSTOP: /* cannot be caught */
    case SIGTERM: /* the shim records it already */
    /* faults: a handler that returns runs the faulting instruction again */
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
    /* sent by the kernel or the runtime for their own reasons */
    case SIGCONT:
    case SIGPIPE:
    case SIGCHLD:
    case SIGURG:
    case SIGALRM:
        return false;
    default:
        return signo > 0 && signo < NSIG;
    }
}

int shim_parse_signal (const char *text, int *signo)
{
    const char *name = text;
    char *end;
    long n;

    if (text == NULL || *text == '\0')
        return -1;
    if (strcasecmp (text, "none") == 0) {
        *signo = 0;
        return 0;
    }
    if (isdigit ((unsigned char) *text)) {
        errno = 0;
        n = strtol (text, &end, 10);
        if (errno != 0 || *end != '\0' || n <= 0 || n >= NSIG || !shim_signal_allowed ((int) n))
            return -1;
        *signo = (int) n;
        return 0;
    }
    if (strncasecmp (name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < sizeof (signal_names) / sizeof (signal_names[0]); i++) {
        if (strcasecmp (name, signal_names[i].name) == 0) {
            *signo = signal_names[i].signo;
            return 0;
        }
    }
    return -1;
}

/* A fact's value as an int: -1 when it is negative or past INT_MAX. */
static int as_int (long long n, int *out)
{
    if (n < 0 || n > INT_MAX)
        return -1;
    *out = (int) n;
    return 0;
}

/* The same for an unsigned value, which may be past what a long long holds. */
static int unsigned_as_int (unsigned long long n, int *out)
{
    return n > INT_MAX ? -1 : as_int ((long long) n, out);
}

/* A case of shim_value_int's switch: an integer type a fact may come in, with the member of
 * v->data that holds it. */
#define SIGNED_CASE(type, member)                                                                  \
    case type:                                                                                     \
        return as_int (v->data.member, out);
#define UNSIGNED_CASE(type, member)                                                                \
    case type:                                                                                     \
        return unsigned_as_int (v->data.member, out);

int shim_value_int (const pmix_value_t *v, int *out)
{
    if (v == NULL)
        return -1;
    switch (v->type) {
        UNSIGNED_CASE (PMIX_UINT8, uint8)
        UNSIGNED_CASE (PMIX_UINT16, uint16)
        UNSIGNED_CASE (PMIX_UINT32, uint32)
        UNSIGNED_CASE (PMIX_UINT64, uint64)
        UNSIGNED_CASE (PMIX_SIZE, size)
        UNSIGNED_CASE (PMIX_PROC_RANK, rank)
        SIGNED_CASE (PMIX_INT8, int8)
        SIGNED_CASE (PMIX_INT16, int16)
        SIGNED_CASE (PMIX_INT, integer)
        SIGNED_CASE (PMIX_INT32, int32)
        SIGNED_CASE (PMIX_INT64, int64)
    default:
        return -1;
    }
}
#undef SIGNED_CASE
#undef UNSIGNED_CASE
