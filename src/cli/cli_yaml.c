/* cli_yaml: JSON values printed as YAML (block style), for `-o yaml`. Strings are always
 * double-quoted with JSON's escapes, which YAML's double-quoted scalars read the same way,
 * so no text from spaced can turn into YAML syntax (a key, a tag, an anchor, a number). */
#include "cli/cli_yaml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A key printed bare: letters, digits and _ . - only, not starting with - or a digit. */
static bool plain_key(const char *k)
{
        if (!*k || *k == '-' || (*k >= '0' && *k <= '9'))
                return false;
        for (const char *p = k; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                      *p == '.' || *p == '-'))
                        return false;
        static const char *const words[] = { "true", "false", "null", "yes", "no", "on", "off", "y", "n" };
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strcasecmp(k, words[i]) == 0)
                        return false;
        return true;
}

static int scalar(FILE *out, const json_t *v)
{
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        fputs(text, out);
        free(text);
        return 0;
}

static bool empty_or_scalar(const json_t *v)
{
        return !(json_is_object(v) && json_object_size(v)) && !(json_is_array(v) && json_array_size(v));
}

static int node(FILE *out, const json_t *v, int indent);

/* A value after "key:" or "-": a scalar (or {} / []) on the same line, else a block below. */
static int value_after(FILE *out, const json_t *v, int indent, bool in_list)
{
        if (empty_or_scalar(v)) {
                fputc(' ', out);
                int r = scalar(out, v);
                fputc('\n', out);
                return r;
        }
        if (in_list && json_is_object(v)) { /* "- key: ..." */
                fputc(' ', out);
                return node(out, v, -(indent + 2));
        }
        fputc('\n', out);
        return node(out, v, indent + 2);
}

/* indent < 0: the first line's indentation is already written (after "- "). */
static int node(FILE *out, const json_t *v, int indent)
{
        bool first = true;
        int at = indent < 0 ? -indent : indent, r = 0;
        if (json_is_object(v)) {
                const char *k;
                const json_t *m;
                json_object_foreach((json_t *)v, k, m)
                {
                        if (!(first && indent < 0))
                                fprintf(out, "%*s", at, "");
                        first = false;
                        if (plain_key(k))
                                fputs(k, out);
                        else {
                                json_t *quoted = json_string(k);
                                r = quoted ? scalar(out, quoted) : -ENOMEM;
                                json_decref(quoted);
                                if (r < 0)
                                        return r;
                        }
                        fputc(':', out);
                        if ((r = value_after(out, m, at, false)) < 0)
                                return r;
                }
                return 0;
        }
        size_t i;
        const json_t *m;
        json_array_foreach((json_t *)v, i, m)
        {
                if (!(first && indent < 0))
                        fprintf(out, "%*s", at, "");
                first = false;
                fputc('-', out);
                if ((r = value_after(out, m, at, true)) < 0)
                        return r;
        }
        return 0;
}

int cli_yaml_print(FILE *out, const json_t *v)
{
        fputs("---\n", out);
        if (empty_or_scalar(v)) {
                int r = scalar(out, v);
                fputc('\n', out);
                return r;
        }
        return node(out, v, 0);
}
