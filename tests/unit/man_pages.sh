#!/bin/sh
# man_pages.sh - every manual page renders without a warning: groff -ww -z -man (all
# warnings, no output) and man -l at 80 columns, as an admin reads it.  Any line on
# their standard error fails the test.  Skips (77) where groff or man is missing.
#   man_pages.sh [PAGE...]    (default: $MAN_PAGES, which make check sets to $(dist_man_MANS))
set -u

command -v groff >/dev/null 2>&1 || { echo "SKIP: no groff (Debian: groff-base)"; exit 77; }
command -v man >/dev/null 2>&1 || { echo "SKIP: no man (Debian: man-db)"; exit 77; }
# shellcheck disable=SC2086 # a list of file names without spaces, from Makefile.am
[ $# -gt 0 ] || set -- ${MAN_PAGES:-}
[ $# -gt 0 ] || { echo "usage: man_pages.sh PAGE... (or MAN_PAGES=...)" >&2; exit 2; }

failed=0
err=$(mktemp) || exit 2
trap 'rm -f "$err"' EXIT

for page in "$@"; do
    [ -f "$page" ] || page=${srcdir:-.}/$page
    if [ ! -s "$page" ]; then
        echo "FAIL: $page: no such page"
        failed=1
        continue
    fi
    groff -ww -z -man -Tutf8 "$page" 2>"$err"
    if [ -s "$err" ]; then
        echo "FAIL: groff -ww -z -man $page warned:"
        sed 's/^/    /' "$err"
        failed=1
    fi
    lines=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -E UTF-8 -l "$page" \
        2>"$err" | wc -l)
    if [ -s "$err" ]; then
        echo "FAIL: man -l $page warned:"
        sed 's/^/    /' "$err"
        failed=1
    elif [ "$lines" -lt 10 ]; then
        echo "FAIL: man -l $page rendered $lines lines"
        failed=1
    else
        echo "ok: $page ($lines lines at 80 columns)"
    fi
done
exit $failed
