/* test_man_tokens.c - every SPEC token and plugstack key the parser accepts is documented
 * in dist-train(8): the words come from libdist/config.c's own tables
 * (dist_config_word), so a new one cannot be added without its documentation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/config.h"

#ifndef MAN_PAGE
#define MAN_PAGE "doc/man/dist-train.8"
#endif

/* The page's text with roff's font changes (\fB ...) removed and \- made '-'. */
static char *page_text (void)
{
    FILE *f = fopen (MAN_PAGE, "r");
    char *raw, *out, *o;
    size_t len;

    assert_non_null (f);
    raw = calloc (1, 1 << 20);
    assert_non_null (raw);
    len = fread (raw, 1, (1 << 20) - 1, f);
    fclose (f);
    out = o = calloc (1, len + 1);
    assert_non_null (out);
    for (size_t i = 0; i < len; i++) {
        if (raw[i] == '\\' && raw[i + 1] == 'f' && raw[i + 2] != '\0') {
            i += 2;
            continue;
        }
        if (raw[i] == '\\' && raw[i + 1] == '-') {
            *o++ = '-';
            i++;
            continue;
        }
        *o++ = raw[i];
    }
    free (raw);
    return out;
}

static int word_char (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether text holds word as a whole word (followed by '=' when it is a key). */
static int documented (const char *text, const char *word, int key)
{
    size_t n = strlen (word);

    for (const char *p = strstr (text, word); p != NULL; p = strstr (p + 1, word)) {
        if (p > text && word_char (p[-1]))
            continue;
        if (key ? p[n] == '=' : !word_char (p[n]))
            return 1;
    }
    return 0;
}

static void every_word_is_in_the_man_page (void **state)
{
    enum dist_config_word_kind kind;
    const char *word;
    char *text = page_text ();
    int missing = 0, seen[3] = { 0, 0, 0 };

    (void) state;
    for (size_t i = 0; (word = dist_config_word (i, &kind)) != NULL; i++) {
        seen[kind]++;
        if (!documented (text, word, kind != DIST_WORD_SPEC)) {
            fprintf (stderr, "%s: %s '%s%s' is not documented\n", MAN_PAGE,
                     kind == DIST_WORD_PLUGSTACK ? "plugstack key" : "SPEC token", word,
                     kind == DIST_WORD_SPEC ? "" : "=");
            missing++;
        }
    }
    free (text);
    /* the tables are there: profiles and flags, settings, plugstack keys */
    assert_true (seen[DIST_WORD_SPEC] >= 6 && seen[DIST_WORD_SPEC_SETTING] >= 4
                 && seen[DIST_WORD_PLUGSTACK] >= 7);
    assert_int_equal (missing, 0);
}

/* The table is the parser's: each word it lists is accepted, and a word not in it is not. */
static void the_table_is_what_the_parser_accepts (void **state)
{
    enum dist_config_word_kind kind;
    struct dist_config cfg;
    const char *word;
    char arg[128], err[256];

    (void) state;
    for (size_t i = 0; (word = dist_config_word (i, &kind)) != NULL; i++) {
        dist_config_init (&cfg);
        if (kind == DIST_WORD_SPEC && strcmp (word, "help") != 0)
            assert_int_equal (dist_config_parse_spec (&cfg, word, err, sizeof (err)), 0);
        if (kind == DIST_WORD_SPEC_SETTING) {
            snprintf (arg, sizeof (arg), "%s=not a/value", word);
            assert_int_equal (dist_config_parse_spec (&cfg, arg, err, sizeof (err)), -1);
            assert_null (strstr (err, "unknown"));
        }
        if (kind == DIST_WORD_PLUGSTACK) {
            snprintf (arg, sizeof (arg), "%s=not a/value", word);
            assert_int_equal (dist_config_parse_arg (&cfg, arg, err, sizeof (err)), -1);
            assert_null (strstr (err, "unknown"));
        }
    }
    assert_int_equal (dist_config_parse_spec (&cfg, "pytorch", err, sizeof (err)), -1);
    assert_int_equal (dist_config_parse_arg (&cfg, "ports=1-2", err, sizeof (err)), -1);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (every_word_is_in_the_man_page),
        cmocka_unit_test (the_table_is_what_the_parser_accepts),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
