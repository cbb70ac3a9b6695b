#include "cli/cli_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli/cli_output.h"
#include "cli/cli_text.h"
#include "cli/json_number.h"

/* The action between {{ and }} of [s, s+len): its dotted path (after '.') and whether it
 * asks for JSON. -EINVAL for anything else. */
static int cli_format_action(const char *s, size_t len, bool *ret_json, char **ret_path)
{
        while (len > 0 && *s == ' ')
                s++, len--;
        while (len > 0 && s[len - 1] == ' ')
                len--;
        bool json = len > 5 && strncmp(s, "json ", 5) == 0;
        if (json) {
                s += 5, len -= 5;
                while (len > 0 && *s == ' ')
                        s++, len--;
        }
        if (len == 0 || *s != '.' || memchr(s, ' ', len) || (len == 1 && !json))
                return -EINVAL;
        char *path = strndup(s + 1, len - 1);
        if (!path)
                return -ENOMEM;
        *ret_json = json;
        *ret_path = path;
        return 0;
}

/* Walks the template; prints for item when f is not NULL. */
static int cli_format_walk(const char *t, const json_t *item, FILE *f)
{
        for (const char *p = t; *p;) {
                if (p[0] == '\\' && (p[1] == 't' || p[1] == 'n')) {
                        if (f)
                                fputc(p[1] == 't' ? '\t' : '\n', f);
                        p += 2;
                        continue;
                }
                if (p[0] != '{' || p[1] != '{') {
                        if (f)
                                fputc(*p, f);
                        p++;
                        continue;
                }
                const char *end = strstr(p + 2, "}}");
                _cleanup_free_ char *path = NULL;
                bool json;
                if (!end)
                        return -EINVAL;
                int r = cli_format_action(p + 2, (size_t)(end - p - 2), &json, &path);
                if (r < 0)
                        return r;
                p = end + 2;
                if (!f)
                        continue;
                const json_t *v = *path ? cli_output_lookup(item, path) : item;
                _cleanup_free_ char *text = NULL, *clean = NULL;
                if (json)
                        text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(json_number_precision(v)))
                                 : strdup("null");
                else if ((r = cli_output_format(v, &text)) < 0)
                        return r;
                if (!text)
                        return -ENOMEM;
                if (json) {
                        fputs(text, f);
                        continue;
                }
                if ((r = cli_text_sanitize(text, &clean)) < 0)
                        return r;
                fputs(clean, f);
        }
        return 0;
}

static const char *cli_format_template(const char *t)
{
        return strcmp(t, "json") == 0 ? "{{json .}}" : t;
}

int cli_format_check(const char *template)
{
        return cli_format_walk(cli_format_template(template), NULL, NULL);
}

int cli_format_print(const char *template, const json_t *list)
{
        const char *t = cli_format_template(template);
        size_t i;
        json_t *item;

        if (!json_is_array(list))
                return -EBADMSG;
        json_array_foreach(list, i, item)
        {
                int r = cli_format_walk(t, item, stdout);
                if (r < 0)
                        return r;
                fputc('\n', stdout);
        }
        return ferror(stdout) ? -EIO : 0;
}
