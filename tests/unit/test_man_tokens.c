/* test_man_tokens.c - every SPEC token, SPEC setting and plugstack key the parser accepts is
 * documented, with its value syntax, in dist-train(8) and in the guide of whoever sets it (the
 * user guide for SPEC words, the admin guide for plugstack keys), and is in each text made
 * from the parser's table: the words come from that table (dist_config_word), so a new one
 * cannot be added without its documentation. */
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
#ifndef USER_GUIDE
#define USER_GUIDE "doc/user-guide.md"
#endif
#ifndef ADMIN_GUIDE
#define ADMIN_GUIDE "doc/admin-guide.md"
#endif

static int is_macro (const char *line, const char *name)
{
    size_t n = strlen (name);

    return strncmp (line, name, n) == 0 && line[n] == ' ';
}

/* The file's text.  For a roff page: font changes (\fB ...) removed, \- made '-', and the
 * arguments of the macros that alternate fonts (.BR bind= { auto | gpu }) joined as they
 * print ("bind={auto|gpu}"), quoted ones with their spaces. */
static char *read_text (const char *path, int roff)
{
    static const char *const alternating[] = {".BR", ".BI", ".IR", ".RB", ".IB", ".RI"};
    FILE *f = fopen (path, "r");
    char *raw, *out, *o;
    size_t len;
    int joining = 0, quoted = 0;

    if (f == NULL)
        fail_msg ("cannot open %s", path);
    raw = calloc (1, 1 << 20);
    assert_non_null (raw);
    len = fread (raw, 1, (1 << 20) - 1, f);
    fclose (f);
    out = o = calloc (1, len + 1);
    assert_non_null (out);
    for (size_t i = 0; i < len; i++) {
        if (roff && (i == 0 || raw[i - 1] == '\n')) {
            joining = 0;
            for (size_t m = 0; m < sizeof (alternating) / sizeof (alternating[0]); m++)
                joining |= is_macro (raw + i, alternating[m]);
            if (joining) {
                i += 3; /* the macro and its space */
                continue;
            }
        }
        if (!roff) {
            *o++ = raw[i];
            continue;
        }
        if (raw[i] == '\\' && raw[i + 1] == 'f' && raw[i + 2] != '\0') {
            i += 2;
            continue;
        }
        if (raw[i] == '\\' && raw[i + 1] == '-') {
            *o++ = '-';
            i++;
            continue;
        }
        if (joining && raw[i] == '"') {
            quoted = !quoted;
            continue;
        }
        if (joining && raw[i] == ' ' && !quoted)
            continue;
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

/* Entry i as it is written: a token alone, a setting or a key with its value syntax
 * ("bind=auto|gpu|cpu|none"), or with braces around it as the man page writes choices. */
static const char *label (size_t i, int braces, char *buf, size_t size)
{
    enum dist_config_word_kind kind;
    const char *word = dist_config_word (i, &kind);
    char syntax[128];

    dist_config_word_syntax (i, syntax, sizeof (syntax));
    if (kind == DIST_WORD_SPEC)
        snprintf (buf, size, "%s", word);
    else
        snprintf (buf, size, braces ? "%s={%s}" : "%s=%s", word, syntax);
    return buf;
}

/* Which of a text's words must be there: a token as a word, a setting or key as key=,
 * and with its syntax where the text spells it out. */
enum want { WORD, KEY, SYNTAX };

/* Each entry whose kind is in kinds (a bit per kind) is in text as want says; the ones that
 * are not are named on stderr.  Returns how many entries were looked for. */
static size_t check_words (const char *name, const char *text, unsigned kinds, enum want want)
{
    enum dist_config_word_kind kind;
    const char *word;
    size_t looked = 0;
    int missing = 0;
    char buf[160], alt[160];

    /* the check can fail: a word that is nowhere is missing */
    assert_false (documented (text, "no_such_dist_train_word", 0));
    for (size_t i = 0; (word = dist_config_word (i, &kind)) != NULL; i++) {
        int found;

        if (!(kinds & (1u << kind)))
            continue;
        looked++;
        if (kind == DIST_WORD_SPEC || want == WORD)
            found = documented (text, word, 0);
        else if (want == KEY)
            found = documented (text, word, 1);
        else
            found = documented (text, label (i, 0, buf, sizeof (buf)), 0)
                    || documented (text, label (i, 1, alt, sizeof (alt)), 0);
        if (!found) {
            fprintf (stderr, "%s: %s '%s' is not there\n", name,
                     kind == DIST_WORD_PLUGSTACK ? "plugstack key" : "SPEC word",
                     want == SYNTAX ? label (i, 0, buf, sizeof (buf)) : word);
            missing++;
        }
    }
    assert_int_equal (missing, 0);
    return looked;
}

#define SPEC_KINDS ((1u << DIST_WORD_SPEC) | (1u << DIST_WORD_SPEC_SETTING))
#define PLUGSTACK_KINDS (1u << DIST_WORD_PLUGSTACK)
#define ALL_KINDS (SPEC_KINDS | PLUGSTACK_KINDS)

static void every_word_is_in_the_man_page (void **state)
{
    enum dist_config_word_kind kind;
    char *text = read_text (MAN_PAGE, 1);
    int seen[3] = {0, 0, 0};

    (void) state;
    for (size_t i = 0; dist_config_word (i, &kind) != NULL; i++)
        seen[kind]++;
    /* the table is there: profiles and flags, settings, plugstack keys */
    assert_true (seen[DIST_WORD_SPEC] >= 6 && seen[DIST_WORD_SPEC_SETTING] >= 4
                 && seen[DIST_WORD_PLUGSTACK] >= 7);
    check_words (MAN_PAGE, text, ALL_KINDS, SYNTAX);
    /* the roff is read as it prints */
    assert_true (documented (text, "bind={auto|gpu|cpu|none}", 0));
    free (text);
}

static void every_word_is_in_its_guide (void **state)
{
    char *user = read_text (USER_GUIDE, 0), *admin = read_text (ADMIN_GUIDE, 0);

    (void) state;
    check_words (USER_GUIDE, user, SPEC_KINDS, SYNTAX);
    check_words (ADMIN_GUIDE, admin, PLUGSTACK_KINDS, SYNTAX);
    free (user);
    free (admin);
}

/* What --dist-train=help, srun --help and an admin read name every word of theirs. */
static void every_word_is_in_the_help_texts (void **state)
{
    (void) state;
    assert_true (check_words ("--dist-train=help", dist_config_help (), SPEC_KINDS, SYNTAX) > 0);
    check_words ("srun --help", dist_config_usage (), SPEC_KINDS, SYNTAX);
    check_words ("plugstack help", dist_config_plugstack_help (), PLUGSTACK_KINDS, SYNTAX);
}

/* The messages for an unknown word list every valid one, even after a long bad token. */
static void every_word_is_in_the_messages (void **state)
{
    struct dist_config cfg;
    char err[DIST_ERR_MAX], token[128];

    (void) state;
    memset (token, 'x', sizeof (token) - 1);
    token[sizeof (token) - 1] = '\0';
    dist_config_init (&cfg);
    assert_int_equal (dist_config_parse_spec (&cfg, token, err, sizeof (err)), -1);
    check_words ("unknown SPEC token", err, SPEC_KINDS, KEY);
    memcpy (token + sizeof (token) - 3, "=x", 3);
    assert_int_equal (dist_config_parse_spec (&cfg, token, err, sizeof (err)), -1);
    check_words ("unknown SPEC setting", err, 1u << DIST_WORD_SPEC_SETTING, SYNTAX);
    assert_int_equal (dist_config_parse_arg (&cfg, token, err, sizeof (err)), -1);
    check_words ("unknown plugstack key", err, PLUGSTACK_KINDS, WORD);
    assert_int_equal (dist_config_parse_arg (&cfg, "x", err, sizeof (err)), -1);
    check_words ("plugstack argument without '='", err, PLUGSTACK_KINDS, WORD);
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
        cmocka_unit_test (every_word_is_in_its_guide),
        cmocka_unit_test (every_word_is_in_the_help_texts),
        cmocka_unit_test (every_word_is_in_the_messages),
        cmocka_unit_test (the_table_is_what_the_parser_accepts),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
