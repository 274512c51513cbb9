/* test_task_vars.c - one list of what a task gets (DIST_TASK_VARS), and the user guide's
 * table of it: every variable the plugin can set is a row there, with the profiles that get
 * it and whether the user's own value is kept, and every row is a variable of the list;
 * dist-train(8) names every one.
 * env.c builds each profile from the list, and the plugin sets every other variable through
 * dist_train_setenv, the one caller of spank_setenv: both are checked here too, so that a
 * variable cannot reach a task without reaching the guide. */
#include <ctype.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libdist/env.h"
#include "libdist/handover.h"

#ifndef USER_GUIDE
#define USER_GUIDE "doc/user-guide.md"
#endif
#ifndef MAN_PAGE
#define MAN_PAGE "doc/man/dist-train.8"
#endif
#ifndef SPANK_DIR
#define SPANK_DIR "spank"
#endif

/* the section of the guide that holds the table */
#define SECTION "\n## What each task gets\n"

static const enum dist_profile profiles[] = {
    DIST_PROFILE_TORCH,    DIST_PROFILE_JAX,       DIST_PROFILE_TF,
    DIST_PROFILE_LAUNCHER, DIST_PROFILE_LIGHTNING, DIST_PROFILE_SUBMITIT,
};
#define NPROFILES (sizeof (profiles) / sizeof (profiles[0]))

static char *read_file (const char *path)
{
    FILE *f = fopen (path, "r");
    char *text;
    size_t len;

    if (f == NULL)
        fail_msg ("cannot open %s", path);
    text = calloc (1, 1 << 20);
    assert_non_null (text);
    len = fread (text, 1, (1 << 20) - 1, f);
    fclose (f);
    text[len] = '\0';
    return text;
}

/* A step whose every fact has a value, so that no variable is left out for want of one. */
static struct dist_step full_step (void)
{
    struct dist_step s = {
        .job_id = 77,
        .step_id = 2,
        .world_size = 16,
        .node_rank = 1,
        .node_count = 2,
        .local_world_size = 8,
        .cpus_per_task = 4,
        .restart_count = 3,
        .watchdog_s = 600,
        .nproc_per_node = 8,
        .master_addr = "10.1.0.1",
        .master_port = 29500,
        .port_lo = 20000,
        .port_hi = 32767,
        .ifname = "eth0",
    };
    return s;
}

/* Which profiles env.c gives each variable (bits, by id). */
static void built_by_env (unsigned built[DIST_VAR_COUNT])
{
    struct dist_step step = full_step ();
    struct dist_var out[DIST_ENV_MAX];

    memset (built, 0, sizeof (unsigned) * DIST_VAR_COUNT);
    for (size_t p = 0; p < NPROFILES; p++) {
        size_t n = dist_env_build (profiles[p], &step, 9, 1, out);
        assert_true (n < DIST_ENV_MAX);
        for (size_t i = 0; i < n; i++) {
            assert_true (out[i].id < DIST_VAR_COUNT);
            if (built[out[i].id] & (1u << profiles[p]))
                fail_msg ("%s: %s twice", dist_profile_name (profiles[p]),
                          dist_task_vars[out[i].id].name);
            built[out[i].id] |= 1u << profiles[p];
        }
    }
}

/* The list's names are distinct variable names, and the key's is the one the doctor reads. */
static void test_names (void **state)
{
    (void) state;
    for (size_t i = 0; i < DIST_VAR_COUNT; i++) {
        const char *name = dist_task_vars[i].name;
        assert_non_null (name);
        assert_true (isupper ((unsigned char) name[0]));
        for (const char *c = name; *c != '\0'; c++)
            assert_true (isupper ((unsigned char) *c) || isdigit ((unsigned char) *c) || *c == '_');
        for (size_t j = 0; j < i; j++)
            if (strcmp (name, dist_task_vars[j].name) == 0)
                fail_msg ("%s is in the list twice", name);
        assert_int_not_equal (dist_task_vars[i].profiles, 0);
        assert_int_equal (dist_task_vars[i].profiles & ~DIST_P_ALL, 0);
    }
    assert_string_equal (dist_task_vars[DIST_VAR_STEP_KEY].name, DIST_STEP_KEY_VAR);
}

/* A variable env.c builds goes to exactly the profiles the list names. */
static void test_env_follows_list (void **state)
{
    unsigned built[DIST_VAR_COUNT];
    size_t from_env = 0;

    (void) state;
    built_by_env (built);
    for (size_t i = 0; i < DIST_VAR_COUNT; i++) {
        if (built[i] == 0)
            continue; /* set by the plugin itself (binding, groups, the key) */
        from_env++;
        if (built[i] != dist_task_vars[i].profiles)
            fail_msg ("%s: env.c sets it for profiles 0x%x, the list says 0x%x",
                      dist_task_vars[i].name, built[i], dist_task_vars[i].profiles);
    }
    /* (the contract's variables are most of the list: a build that set none would pass
     * the loop above) */
    assert_true (from_env >= 30);
}

/* The profiles a cell of the guide's table names: "all", "all but A, B", or "A, B". */
static unsigned cell_profiles (const char *cell, const char *row)
{
    unsigned bits = 0;
    char word[32];
    bool but = false;

    if (strncmp (cell, "all", 3) == 0 && (cell[3] == '\0' || cell[3] == ' ')) {
        cell += 3;
        if (*cell == '\0')
            return DIST_P_ALL;
        if (strncmp (cell, " but ", 5) != 0)
            fail_msg ("row '%s': profiles '%s'", row, cell);
        cell += 5;
        but = true;
    }
    while (*cell != '\0') {
        size_t n = strcspn (cell, ", ");
        bool known = false;
        if (n == 0 || n >= sizeof (word))
            fail_msg ("row '%s': profiles '%s'", row, cell);
        memcpy (word, cell, n);
        word[n] = '\0';
        for (size_t p = 0; p < NPROFILES; p++)
            if (strcmp (word, dist_profile_name (profiles[p])) == 0) {
                bits |= 1u << profiles[p];
                known = true;
            }
        if (!known)
            fail_msg ("row '%s': no profile '%s'", row, word);
        cell += n;
        cell += strspn (cell, ", ");
    }
    return but ? DIST_P_ALL & ~bits : bits;
}

/* The cells of a table row "| a | b | c | d |", trimmed, into cells[] (at most max). */
static size_t split_row (char *line, char *cells[], size_t max)
{
    size_t n = 0;
    char *c = line + 1, *bar;

    while (n < max && (bar = strchr (c, '|')) != NULL) {
        char *end = bar;
        *bar = '\0';
        while (*c == ' ')
            c++;
        while (end > c && end[-1] == ' ')
            *--end = '\0';
        cells[n++] = c;
        c = bar + 1;
    }
    return n;
}

/* One row of the guide's table against the list: its names, profiles and "kept";
 * rows_of counts the rows that name each variable. */
static void check_row (char *line, int rows_of[DIST_VAR_COUNT])
{
    char *cells[5], row[512], *name;
    size_t ncells;
    unsigned want;
    bool kept;

    snprintf (row, sizeof (row), "%s", line);
    ncells = split_row (line, cells, 5);
    if (ncells != 4)
        fail_msg ("row '%s' has %zu cells, not 4", row, ncells);
    want = cell_profiles (cells[2], row);
    if (strcmp (cells[3], "yes") != 0 && cells[3][0] != '\0')
        fail_msg ("row '%s': kept is 'yes' or empty", row);
    kept = cells[3][0] != '\0';
    /* the first cell: `NAME`, `NAME` ... */
    for (name = strchr (cells[0], '`'); name != NULL; name = strchr (name, '`')) {
        char *close = strchr (++name, '`');
        size_t id;
        if (close == NULL)
            fail_msg ("row '%s': a ` without its pair", row);
        *close = '\0';
        for (id = 0; id < DIST_VAR_COUNT; id++)
            if (strcmp (name, dist_task_vars[id].name) == 0)
                break;
        if (id == DIST_VAR_COUNT)
            fail_msg ("%s: the guide's table lists %s, which the plugin never sets", USER_GUIDE,
                      name);
        rows_of[id]++;
        if (dist_task_vars[id].profiles != want)
            fail_msg ("%s: the guide gives %s to profiles '%s' (0x%x); the plugin to 0x%x",
                      USER_GUIDE, name, cells[2], want, dist_task_vars[id].profiles);
        if (kept != (dist_task_vars[id].overwrite == DIST_DEFAULT))
            fail_msg ("%s: the guide says the user's %s is %s; the plugin %s it", USER_GUIDE, name,
                      kept ? "kept" : "replaced",
                      dist_task_vars[id].overwrite == DIST_DEFAULT ? "keeps" : "replaces");
        name = close + 1;
    }
}

/* Every row of the guide's table against the list, and every variable of the list in a row. */
static void test_user_guide_table (void **state)
{
    char *text = read_file (USER_GUIDE), *section, *end, *line, *next;
    int rows_of[DIST_VAR_COUNT] = {0};
    size_t rows = 0;

    (void) state;
    section = strstr (text, SECTION);
    if (section == NULL)
        fail_msg ("%s has no section '%s'", USER_GUIDE, "## What each task gets");
    section += strlen (SECTION);
    end = strstr (section, "\n## ");
    if (end != NULL)
        *end = '\0';
    for (line = section; line != NULL && *line != '\0'; line = next) {
        next = strchr (line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (strncmp (line, "| `", 3) != 0)
            continue; /* not a variable's row (the header, the prose) */
        check_row (line, rows_of);
        rows++;
    }
    for (size_t id = 0; id < DIST_VAR_COUNT; id++) {
        if (rows_of[id] == 0)
            fail_msg ("%s: the table under '## What each task gets' lacks %s, which the plugin "
                      "sets (libdist/env.h, DIST_TASK_VARS): add a row for it",
                      USER_GUIDE, dist_task_vars[id].name);
        if (rows_of[id] > 1)
            fail_msg ("%s: %s is in %d rows", USER_GUIDE, dist_task_vars[id].name, rows_of[id]);
    }
    assert_true (rows > 0);
    free (text);
}

/* Whether name is in text as a word of its own (not part of a longer variable's name). */
static bool has_word (const char *text, const char *name)
{
    size_t n = strlen (name);

    for (const char *p = text; (p = strstr (p, name)) != NULL; p++) {
        bool before = p > text && (isalnum ((unsigned char) p[-1]) || p[-1] == '_');
        bool after = isalnum ((unsigned char) p[n]) || p[n] == '_';
        if (!before && !after)
            return true;
    }
    return false;
}

/* dist-train(8) names every variable (roff's font changes \fB... and \- taken out). */
static void test_man_page (void **state)
{
    char *raw = read_file (MAN_PAGE), *text = calloc (1, strlen (raw) + 1), *o = text;

    (void) state;
    assert_non_null (text);
    for (const char *p = raw; *p != '\0'; p++) {
        if (p[0] == '\\' && p[1] == 'f' && p[2] != '\0') {
            p += 2;
            continue;
        }
        if (p[0] == '\\' && p[1] == '-') {
            *o++ = '-';
            p++;
            continue;
        }
        *o++ = *p;
    }
    for (size_t id = 0; id < DIST_VAR_COUNT; id++)
        if (!has_word (text, dist_task_vars[id].name))
            fail_msg ("%s does not name %s, which the plugin sets (libdist/env.h, "
                      "DIST_TASK_VARS): add it under ENVIRONMENT OF EACH TASK",
                      MAN_PAGE, dist_task_vars[id].name);
    free (raw);
    free (text);
}

/* The plugin sets a task's variables through dist_train_setenv only (spank/container.c):
 * no other file of spank/ calls spank_setenv. */
static void test_one_setter (void **state)
{
    DIR *d = opendir (SPANK_DIR);
    struct dirent *e;
    size_t files = 0;
    int in_container = 0;

    (void) state;
    if (d == NULL)
        fail_msg ("cannot open %s", SPANK_DIR);
    while ((e = readdir (d)) != NULL) {
        size_t len = strlen (e->d_name);
        char path[4096], *text;
        int calls = 0;

        if (len < 3 || strcmp (e->d_name + len - 2, ".c") != 0)
            continue;
        snprintf (path, sizeof (path), "%s/%s", SPANK_DIR, e->d_name);
        text = read_file (path);
        for (char *p = text; (p = strstr (p, "spank_setenv (")) != NULL; p++)
            calls++;
        if (strcmp (e->d_name, "container.c") == 0)
            in_container = calls;
        else if (calls > 0)
            fail_msg ("%s calls spank_setenv: set a task's variable with dist_train_setenv, "
                      "after adding it to DIST_TASK_VARS (libdist/env.h)",
                      path);
        files++;
        free (text);
    }
    closedir (d);
    assert_true (files >= 10);
    assert_int_equal (in_container, 1);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_names),
        cmocka_unit_test (test_env_follows_list),
        cmocka_unit_test (test_user_guide_table),
        cmocka_unit_test (test_man_page),
        cmocka_unit_test (test_one_setter),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
