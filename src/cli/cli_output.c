/* cli_output: JSON, key-value and table output of API answers. */
#include "cli/cli_output.h"

#include <stdio.h>

#include "cleanup.h"
#include "cli/cli.h"
#include "cli/cli_table.h"
#include "cli/json_number.h"

int cli_output_json(const json_t *answer)
{
        if (!answer)
                return 0;
        if (json_dumpf(answer, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(json_number_precision(answer))) < 0)
                return -EIO;
        fputc('\n', stdout);
        return 0;
}

json_t *cli_output_lookup(const json_t *object, const char *path)
{
        json_t *cur = (json_t *)object;

        while (cur && *path) {
                size_t n = strcspn(path, ".");
                cur = json_is_object(cur) ? json_object_getn(cur, path, n) : NULL;
                path += n;
                if (*path == '.')
                        path++;
        }
        return cur;
}

const char *cli_output_string(const json_t *object, const char *path)
{
        return json_string_value(cli_output_lookup(object, path));
}

static int cli_output_format_array(const json_t *array, char **ret_text)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;

        size_t i;
        json_t *item;
        json_array_foreach(array, i, item)
        {
                _cleanup_free_ char *one = NULL;
                int r = cli_output_format(item, &one);
                if (r < 0) {
                        fclose(f);
                        free(text);
                        return r;
                }
                fprintf(f, "%s%s", i ? "," : "", one);
        }
        if (fclose(f) != 0) {
                free(text);
                return -ENOMEM;
        }
        *ret_text = text;
        return 0;
}

int cli_output_format(const json_t *value, char **ret_text)
{
        char *text = NULL;
        int n = 0;

        switch (value ? json_typeof(value) : JSON_NULL) {
        case JSON_STRING:
                text = strdup(json_string_value(value));
                break;
        case JSON_INTEGER:
                n = asprintf(&text, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
                break;
        case JSON_REAL:
                n = asprintf(&text, "%.15g", json_real_value(value));
                break;
        case JSON_TRUE:
                text = strdup("true");
                break;
        case JSON_FALSE:
                text = strdup("false");
                break;
        case JSON_ARRAY:
                if (json_array_size(value) > 0)
                        return cli_output_format_array(value, ret_text);
                text = strdup("-");
                break;
        case JSON_OBJECT:
                text = json_object_size(value) > 0 ? json_dumps(value, JSON_COMPACT) : strdup("-");
                break;
        case JSON_NULL:
        default:
                text = strdup("-");
                break;
        }
        if (n < 0 || !text)
                return -ENOMEM;
        *ret_text = text;
        return 0;
}

static int cli_output_flatten(struct cli_table *t, const char *prefix, const json_t *object)
{
        const char *key;
        json_t *value;

        json_object_foreach((json_t *)object, key, value)
        {
                _cleanup_free_ char *name = NULL;
                if (asprintf(&name, "%s%s", prefix, key) < 0)
                        return -ENOMEM;

                if (json_is_object(value) && json_object_size(value) > 0) {
                        _cleanup_free_ char *nested = NULL;
                        if (asprintf(&nested, "%s.", name) < 0)
                                return -ENOMEM;
                        int r = cli_output_flatten(t, nested, value);
                        if (r < 0)
                                return r;
                        continue;
                }

                _cleanup_free_ char *label = NULL;
                _cleanup_free_ char *text = NULL;
                if (asprintf(&label, "%s:", name) < 0)
                        return -ENOMEM;
                int r = cli_output_format(value, &text);
                if (r < 0)
                        return r;
                r = cli_table_add_row(t, (const char *const[]){ label, text });
                if (r < 0)
                        return r;
        }
        return 0;
}

int cli_output_object(const json_t *object)
{
        _cleanup_cli_table_ struct cli_table *t = NULL;

        if (!json_is_object(object))
                return -EBADMSG;
        int r = cli_table_new(2, NULL, &t);
        if (r < 0)
                return r;
        r = cli_output_flatten(t, "", object);
        if (r < 0)
                return r;
        return cli_table_print(t, stdout);
}

int cli_output_list(const json_t *list, const struct cli_output_column *columns, size_t n_columns)
{
        _cleanup_cli_table_ struct cli_table *t = NULL;
        _cleanup_free_ const char **headers = calloc(n_columns, sizeof(*headers));
        _cleanup_free_ char **cells = calloc(n_columns, sizeof(*cells));

        if (!json_is_array(list))
                return -EBADMSG;
        if (!headers || !cells)
                return -ENOMEM;
        for (size_t c = 0; c < n_columns; c++)
                headers[c] = columns[c].header;
        int r = cli_table_new(n_columns, headers, &t);
        if (r < 0)
                return r;

        size_t i;
        json_t *item;
        json_array_foreach(list, i, item)
        {
                for (size_t c = 0; c < n_columns && r >= 0; c++) {
                        r = cli_output_format(cli_output_lookup(item, columns[c].path), &cells[c]);
                        if (r >= 0)
                                r = cli_cell_shape(&cells[c], columns[c].cell, columns[c].max);
                }
                if (r >= 0)
                        r = cli_table_add_row(t, (const char *const *)cells);
                for (size_t c = 0; c < n_columns; c++) {
                        free(cells[c]);
                        cells[c] = NULL;
                }
                if (r < 0)
                        return r;
        }
        return cli_table_print(t, stdout);
}

int cli_output_exit(int r)
{
        if (r >= 0)
                return CLI_EXIT_OK;
        if (r == -EBADMSG)
                fputs("space: unexpected answer from spaced\n", stderr);
        else
                fprintf(stderr, "space: cannot print the answer: %s\n", strerror(-r));
        return CLI_EXIT_FAILURE;
}

int cli_output_show(bool json, const json_t *answer)
{
        return cli_output_exit(json ? cli_output_json(answer) : cli_output_object(answer));
}

int cli_output_show_list(bool json, const json_t *answer, const char *member, const struct cli_output_column *columns,
                         size_t n_columns)
{
        return cli_output_exit(json ? cli_output_json(answer)
                                    : cli_output_list(json_object_get(answer, member), columns, n_columns));
}
