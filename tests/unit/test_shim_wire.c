/* Unit tests for shim/wire.c: key names, chunks, frames, settings. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shim/dtshim.h"
#include "shim/wire.h"

static void keys_are_numbered (void **state)
{
    char key[PMIX_MAX_KEYLEN + 1], tiny[8];

    assert_int_equal (shim_key (key, sizeof (key), 0, 0), DTSHIM_OK);
    assert_string_equal (key, "dtshim.0");
    assert_int_equal (shim_key (key, sizeof (key), 41, 3), DTSHIM_OK);
    assert_string_equal (key, "dtshim.41.3");
    assert_int_equal (shim_key (key, sizeof (key), 18446744073709551615ULL, 4), DTSHIM_OK);
    assert_string_equal (key, "dtshim.18446744073709551615.4");
    assert_true (strlen (key) <= PMIX_MAX_KEYLEN);
    assert_int_equal (shim_key (tiny, sizeof (tiny), 12, 0), DTSHIM_ERR_INVALID);
}

static void chunks_cover_the_frame (void **state)
{
    assert_int_equal (shim_chunk_count (SHIM_FRAME_HEADER, SHIM_CHUNK), 1);
    assert_int_equal (shim_chunk_len (SHIM_FRAME_HEADER, SHIM_CHUNK, 0), SHIM_FRAME_HEADER);
    assert_int_equal (shim_chunk_count (SHIM_CHUNK, SHIM_CHUNK), 1);
    assert_int_equal (shim_chunk_count (SHIM_CHUNK + 1, SHIM_CHUNK), 2);
    assert_int_equal (shim_chunk_len (SHIM_CHUNK + 1, SHIM_CHUNK, 0), SHIM_CHUNK);
    assert_int_equal (shim_chunk_len (SHIM_CHUNK + 1, SHIM_CHUNK, 1), 1);
    assert_int_equal (shim_chunk_len (SHIM_CHUNK + 1, SHIM_CHUNK, 2), 0);
    /* 4 MiB of payload: four full chunks and the header's 16 bytes in a fifth. */
    assert_int_equal (shim_chunk_count (SHIM_FRAME_HEADER + 4 * SHIM_CHUNK, SHIM_CHUNK), 5);
    assert_int_equal (shim_chunk_len (SHIM_FRAME_HEADER + 4 * SHIM_CHUNK, SHIM_CHUNK, 4),
                      SHIM_FRAME_HEADER);
}

/* A peer's frame for collective seq of op, with a payload of size bytes, and what a rank that
 * reads its first chunk as len bytes is told. */
static const struct frame_case {
    const char *what;
    enum shim_op op;
    uint64_t seq, size;
    size_t len;
    int status;
} frames[] = {
    {"a frame read whole", SHIM_OP_ALLGATHER, 7, 5, SHIM_FRAME_HEADER + 5, DTSHIM_OK},
    {"a frame of no payload", SHIM_OP_BROADCAST, 7, 0, SHIM_FRAME_HEADER, DTSHIM_OK},
    {"the first chunk of a large frame", SHIM_OP_GATHERV, 7, 4 << 20, SHIM_CHUNK, DTSHIM_OK},
    /* A first chunk shorter than SHIM_CHUNK cannot start a frame that needs more. */
    {"a short first chunk", SHIM_OP_GATHERV, 7, 4 << 20, SHIM_CHUNK - 1, DTSHIM_ERR_PMIX},
    /* A peer that declares a huge payload: refused before anyone allocates its size or asks
     * for its chunks. SHIM_MAX_PAYLOAD itself passes. */
    {"the largest payload", SHIM_OP_GATHERV, 7, SHIM_MAX_PAYLOAD, SHIM_CHUNK, DTSHIM_OK},
    {"one byte more", SHIM_OP_GATHERV, 7, SHIM_MAX_PAYLOAD + 1, SHIM_CHUNK, DTSHIM_ERR_PMIX},
    {"2^62 bytes", SHIM_OP_GATHERV, 7, (uint64_t) 1 << 62, SHIM_CHUNK, DTSHIM_ERR_PMIX},
    {"call 2^40's", SHIM_OP_PREEMPT, 1ULL << 40, 1, SHIM_FRAME_HEADER + 1, DTSHIM_OK},
    {"a truncated frame", SHIM_OP_ALLGATHERV, 7, 8, SHIM_FRAME_HEADER + 7, DTSHIM_ERR_PMIX},
    {"less than a header", SHIM_OP_ALLGATHERV, 7, 8, 4, DTSHIM_ERR_PMIX},
    {"2^64-1 bytes", SHIM_OP_ALLGATHERV, 7, UINT64_MAX, SHIM_FRAME_HEADER + 8, DTSHIM_ERR_PMIX},
};

static void frames_read_back (void **state)
{
    static uint8_t chunk[SHIM_CHUNK];

    for (size_t i = 0; i < sizeof (frames) / sizeof (frames[0]); i++) {
        const struct frame_case *f = &frames[i];
        uint64_t size = 99;
        int rv;

        shim_frame_header (chunk, f->op, f->seq, f->size);
        rv = shim_frame_parse (chunk, f->len, f->op, f->seq, &size);
        if (rv != f->status || (rv == DTSHIM_OK && size != f->size))
            print_error ("%s: status %d, size %llu\n", f->what, rv, (unsigned long long) size);
        assert_int_equal (rv, f->status);
        if (f->status == DTSHIM_OK)
            assert_int_equal (size, f->size);
    }
}

/* The peer called another collective, or is a call behind. */
static void frame_of_another_call_is_a_mismatch (void **state)
{
    uint8_t frame[SHIM_FRAME_HEADER + 1] = {0};
    uint64_t size;

    shim_frame_header (frame, SHIM_OP_BROADCAST, 7, 1);
    assert_int_equal (shim_frame_parse (frame, sizeof (frame), SHIM_OP_ALLGATHER, 7, &size),
                      DTSHIM_ERR_MISMATCH);
    shim_frame_header (frame, SHIM_OP_PREEMPT, 6, 1);
    assert_int_equal (shim_frame_parse (frame, sizeof (frame), SHIM_OP_PREEMPT, 7, &size),
                      DTSHIM_ERR_MISMATCH);
}

static void frame_size_is_little_endian (void **state)
{
    uint8_t frame[SHIM_FRAME_HEADER];

    shim_frame_header (frame, SHIM_OP_GATHER, 0x0a0b, 0x0102030405ULL);
    assert_int_equal (frame[8], 0x05);
    assert_int_equal (frame[12], 0x01);
    assert_int_equal (frame[15], 0x00);
    assert_int_equal (frame[16], 0x0b);
    assert_int_equal (frame[17], 0x0a);
}

static void frame_absent_or_foreign_is_rejected (void **state)
{
    uint8_t frame[SHIM_FRAME_HEADER + 8];
    uint64_t size;

    assert_int_equal (shim_frame_parse (NULL, 0, SHIM_OP_ALLGATHERV, 7, &size), DTSHIM_ERR_PMIX);
    shim_frame_header (frame, SHIM_OP_ALLGATHERV, 7, 8);
    frame[0] = 'X';
    assert_int_equal (shim_frame_parse (frame, sizeof (frame), SHIM_OP_ALLGATHERV, 7, &size),
                      DTSHIM_ERR_PMIX);
}

static void timeout_parsing (void **state)
{
    /* DTSHIM_TIMEOUT's text and the seconds it means; -1: refused. */
    static const struct {
        const char *text;
        double seconds;
    } timeouts[] = {
        {"300", 300.0},
        {"2.5", 2.5},
        {"0", 0.0},
        {"31536000", 31536000.0},
        {"-1", -1},
        {"10s", -1},
        {"", -1},
        {"nan", -1},
        {"inf", -1},
        {NULL, -1},
        /* Past a year the deadline's arithmetic would overflow (1e19 s: UBSan in
         * shim_begin_deadline). */
        {"1e19", -1},
        {"31536001", -1},
    };

    for (size_t i = 0; i < sizeof (timeouts) / sizeof (timeouts[0]); i++) {
        double s = -1;

        assert_int_equal (shim_parse_timeout (timeouts[i].text, &s),
                          timeouts[i].seconds < 0 ? -1 : 0);
        assert_true (s == timeouts[i].seconds);
    }
}

static void signal_parsing (void **state)
{
    /* DTSHIM_PREEMPT_SIGNAL's text and the signal it means; -1: refused. */
    static const struct {
        const char *text;
        int signo;
    } signals[] = {
        {"USR2", SIGUSR2},
        {"sigusr1", SIGUSR1},
        {"10", 10},
        {"none", 0},
        {"KILL", -1},
        {"9", -1},
        {"15", -1},
        {"TERM", -1},
        {"12x", -1},
        {"", -1},
        {"99999999999999999999", -1},
    };
    int signo;

    for (size_t i = 0; i < sizeof (signals) / sizeof (signals[0]); i++) {
        signo = -1;
        assert_int_equal (shim_parse_signal (signals[i].text, &signo),
                          signals[i].signo < 0 ? -1 : 0);
        assert_int_equal (signo, signals[i].signo);
    }
    /* Faults (a handler that returns re-runs the faulting instruction), and signals the
     * kernel or the runtime sends for other reasons: refused by name, with or without SIG,
     * and by number. */
    static const struct {
        const char *name;
        int signo;
    } refused[] = {
        {"SEGV", SIGSEGV}, {"BUS", SIGBUS}, {"FPE", SIGFPE},   {"ILL", SIGILL},
        {"TRAP", SIGTRAP}, {"SYS", SIGSYS}, {"CONT", SIGCONT}, {"PIPE", SIGPIPE},
        {"CHLD", SIGCHLD}, {"URG", SIGURG}, {"ALRM", SIGALRM},
    };
    char text[32];
    for (size_t i = 0; i < sizeof (refused) / sizeof (refused[0]); i++) {
        assert_int_equal (shim_parse_signal (refused[i].name, &signo), -1);
        snprintf (text, sizeof (text), "SIG%s", refused[i].name);
        assert_int_equal (shim_parse_signal (text, &signo), -1);
        snprintf (text, sizeof (text), "%d", refused[i].signo);
        assert_int_equal (shim_parse_signal (text, &signo), -1);
        assert_false (shim_signal_allowed (refused[i].signo));
    }
    assert_true (shim_signal_allowed (SIGUSR1) && shim_signal_allowed (SIGHUP));
}

static void integer_facts_of_any_width (void **state)
{
    pmix_value_t v;
    int n = -1;

    v.type = PMIX_UINT16;
    v.data.uint16 = 3;
    assert_int_equal (shim_value_int (&v, &n), 0);
    assert_int_equal (n, 3);
    /* Slurm registers PMIX_APPNUM as a signed int. */
    v.type = PMIX_INT;
    v.data.integer = 7;
    assert_int_equal (shim_value_int (&v, &n), 0);
    assert_int_equal (n, 7);
    v.data.integer = -1;
    assert_int_equal (shim_value_int (&v, &n), -1);
    v.type = PMIX_UINT32;
    v.data.uint32 = 4000000000U;
    assert_int_equal (shim_value_int (&v, &n), -1);
    v.type = PMIX_PROC_RANK;
    v.data.rank = PMIX_RANK_WILDCARD;
    assert_int_equal (shim_value_int (&v, &n), -1);
    /* 64-bit values past INT_MAX, or past what a long long holds, are refused too. */
    v.type = PMIX_UINT64;
    v.data.uint64 = UINT64_MAX;
    assert_int_equal (shim_value_int (&v, &n), -1);
    v.data.uint64 = 2147483647;
    assert_int_equal (shim_value_int (&v, &n), 0);
    assert_int_equal (n, 2147483647);
    v.type = PMIX_SIZE;
    v.data.size = (size_t) 2147483648U;
    assert_int_equal (shim_value_int (&v, &n), -1);
    v.type = PMIX_INT64;
    v.data.int64 = INT64_MIN;
    assert_int_equal (shim_value_int (&v, &n), -1);
    v.type = PMIX_INT8;
    v.data.int8 = 127;
    assert_int_equal (shim_value_int (&v, &n), 0);
    assert_int_equal (n, 127);
    v.type = PMIX_STRING;
    v.data.string = "5";
    assert_int_equal (shim_value_int (&v, &n), -1);
    assert_int_equal (shim_value_int (NULL, &n), -1);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (keys_are_numbered),
        cmocka_unit_test (chunks_cover_the_frame),
        cmocka_unit_test (frames_read_back),
        cmocka_unit_test (frame_of_another_call_is_a_mismatch),
        cmocka_unit_test (frame_size_is_little_endian),
        cmocka_unit_test (frame_absent_or_foreign_is_rejected),
        cmocka_unit_test (timeout_parsing),
        cmocka_unit_test (signal_parsing),
        cmocka_unit_test (integer_facts_of_any_width),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
