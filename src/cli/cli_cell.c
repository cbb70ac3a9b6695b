#include "cli/cli_cell.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CLI_CELL_DIGEST_HEX 12

/* "2026-12-02T03:38:23.123Z" -> seconds since the epoch; -EINVAL if it is not that form. */
static int cli_cell_parse_time(const char *s, time_t *ret)
{
        struct tm tm = { 0 };
        const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!end || (*end != '.' && *end != 'Z'))
                return -EINVAL;
        *ret = timegm(&tm);
        return 0;
}

static int cli_cell_age(const char *s, char **ret)
{
        time_t t;
        if (cli_cell_parse_time(s, &t) < 0)
                return 0;
        long long d = (long long)time(NULL) - (long long)t;
        bool ahead = d < 0;
        unsigned long long a = (unsigned long long)(ahead ? -d : d);
        char unit = 's';
        if (a >= 2 * 86400ULL)
                a /= 86400, unit = 'd';
        else if (a >= 2 * 3600ULL)
                a /= 3600, unit = 'h';
        else if (a >= 120)
                a /= 60, unit = 'm';
        return asprintf(ret, "%s%llu%c", ahead ? "in " : "", a, unit) < 0 ? -ENOMEM : 1;
}

static int cli_cell_time(const char *s, char **ret)
{
        time_t t;
        if (cli_cell_parse_time(s, &t) < 0)
                return 0;
        return asprintf(ret, "%.10s %.8s", s, s + 11) < 0 ? -ENOMEM : 1;
}

static int cli_cell_digest(const char *s, char **ret)
{
        const char *colon = strchr(s, ':');
        const char *hex = colon ? colon + 1 : s;
        if (strlen(hex) <= CLI_CELL_DIGEST_HEX)
                return 0;
        return (*ret = strndup(hex, CLI_CELL_DIGEST_HEX)) ? 1 : -ENOMEM;
}

/* Cuts *text to max code points, the last one "…", when it is longer. */
static int cli_cell_cut(char **text, size_t max)
{
        size_t points = 0, keep = 0;
        for (const char *p = *text; *p; p++) {
                if ((*p & 0xc0) == 0x80)
                        continue;
                if (++points == max)
                        keep = (size_t)(p - *text); /* the bytes before the max-th point */
        }
        if (points <= max)
                return 0;
        char *cut = NULL;
        if (asprintf(&cut, "%.*s\xe2\x80\xa6", (int)keep, *text) < 0)
                return -ENOMEM;
        free(*text);
        *text = cut;
        return 0;
}

int cli_cell_shape(char **text, enum cli_cell_kind kind, size_t max)
{
        char *shaped = NULL;
        int r = 0;

        if (strcmp(*text, "-") != 0) {
                if (kind == CLI_CELL_AGE)
                        r = cli_cell_age(*text, &shaped);
                else if (kind == CLI_CELL_TIME)
                        r = cli_cell_time(*text, &shaped);
                else if (kind == CLI_CELL_DIGEST)
                        r = cli_cell_digest(*text, &shaped);
        }
        if (r < 0)
                return r;
        if (r > 0) {
                free(*text);
                *text = shaped;
        }
        return max > 0 ? cli_cell_cut(text, max) : 0;
}
