#include "cli/cli_sandbox_id.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_output.h"
#include "cli/cli_request.h"

#define SANDBOX_ID_HEX 16
#define SANDBOX_ID_SHOWN 5

/* The resolved ids, kept for the process: verbs hold on to argv pointers. */
static char *resolved[8];
static size_t n_resolved;

static void cli_sandbox_id_free(void)
{
        for (size_t i = 0; i < n_resolved; i++)
                free(resolved[i]);
        n_resolved = 0;
}

static bool all_hex(const char *s)
{
        return *s && strspn(s, "0123456789abcdef") == strlen(s);
}

int cli_sandbox_id_resolve(struct cli *cli, char **arg)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        const char *hex = strncmp(*arg, "sb-", 3) == 0 ? *arg + 3 : *arg;
        const char *match = NULL;
        size_t n = 0, i;
        json_t *sb;

        if (!all_hex(hex) || strlen(hex) >= SANDBOX_ID_HEX || n_resolved == sizeof(resolved) / sizeof(resolved[0]))
                return 0;
        http_path_init(&path, "/v1/sandboxes");
        int r = cli_request_list(cli, &path, "sandboxes", &answer);
        if (r < 0)
                return r;
        json_array_foreach(json_object_get(answer, "sandboxes"), i, sb)
        {
                const char *id = cli_output_string(sb, "id");
                if (id && strncmp(id, "sb-", 3) == 0 && strncmp(id + 3, hex, strlen(hex)) == 0) {
                        match = id;
                        n++;
                }
        }
        if (n == 0) {
                fprintf(stderr, "space: no sandbox id starts with '%s' (space ps lists them)\n", *arg);
                return -ENOENT;
        }
        if (n > 1) {
                fprintf(stderr, "space: '%s' is the start of %zu sandbox ids; give more of it:", *arg, n);
                size_t shown = 0;
                json_array_foreach(json_object_get(answer, "sandboxes"), i, sb)
                {
                        const char *id = cli_output_string(sb, "id");
                        if (id && strncmp(id, "sb-", 3) == 0 && strncmp(id + 3, hex, strlen(hex)) == 0 &&
                            shown++ < SANDBOX_ID_SHOWN)
                                fprintf(stderr, " %s", id);
                }
                fputs(n > SANDBOX_ID_SHOWN ? " ...\n" : "\n", stderr);
                return -EEXIST;
        }
        char *copy = strdup(match);
        if (!copy) {
                fputs("space: out of memory\n", stderr);
                return -ENOMEM;
        }
        if (n_resolved == 0)
                atexit(cli_sandbox_id_free);
        resolved[n_resolved++] = copy;
        *arg = copy;
        return 0;
}
