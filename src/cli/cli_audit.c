/* cli_audit: `space audit` — the audit log (GET /v1/audit), following next_cursor until the
 * rows asked for are shown. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"

#define AUDIT_PAGE 500

static const char audit_usage[] =
        "usage: space audit [--since TIME] [--until TIME] [--action NAME] [--target ID] [--key-id ID]\n"
        "                   [--project P] [--limit N]\n"
        "List the audit log, oldest first: every mutating call and every refused one.\n"
        "  --since/--until TIME  RFC 3339 (2026-12-01T00:00:00Z): rows from since, before until\n"
        "  --action NAME         e.g. sandbox.create, key.delete\n"
        "  --target ID           the id the call named (a sandbox, key, snapshot...)\n"
        "  --key-id ID           calls made with this key\n"
        "  --project P           calls in this project\n"
        "  --limit N             show at most N rows [all]\n";

static const struct cli_output_column audit_columns[] = {
        { "TIME", "time", CLI_CELL_TIME, 0 },        { "REQUEST", "request_id", CLI_CELL_TEXT, 0 },
        { "KEY", "key_id", CLI_CELL_TEXT, 0 },       { "ACTION", "action", CLI_CELL_TEXT, 0 },
        { "TARGET", "target", CLI_CELL_TEXT, 0 },    { "STATUS", "status", CLI_CELL_TEXT, 0 },
        { "ERROR", "error_code", CLI_CELL_TEXT, 0 }, { "SOURCE", "source", CLI_CELL_TEXT, 0 },
};

int cli_audit_main(struct cli *cli, int argc, char **argv)
{
        enum { OPT_SINCE = 1000, OPT_UNTIL, OPT_ACTION, OPT_TARGET, OPT_KEY_ID, OPT_PROJECT, OPT_LIMIT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "since", required_argument, NULL, OPT_SINCE },
                { "until", required_argument, NULL, OPT_UNTIL },
                { "action", required_argument, NULL, OPT_ACTION },
                { "target", required_argument, NULL, OPT_TARGET },
                { "key-id", required_argument, NULL, OPT_KEY_ID },
                { "project", required_argument, NULL, OPT_PROJECT },
                { "limit", required_argument, NULL, OPT_LIMIT },
                {},
        };
        static const char *const params[] = { [OPT_SINCE - OPT_SINCE] = "since",   [OPT_UNTIL - OPT_SINCE] = "until",
                                              [OPT_ACTION - OPT_SINCE] = "action", [OPT_TARGET - OPT_SINCE] = "target",
                                              [OPT_KEY_ID - OPT_SINCE] = "key_id", [OPT_PROJECT - OPT_SINCE] = "project" };
        const char *values[6] = { 0 };
        long long limit = -1;
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(audit_usage);
                if (c >= OPT_SINCE && c <= OPT_PROJECT) {
                        values[c - OPT_SINCE] = optarg;
                } else if (c == OPT_LIMIT) {
                        char *end;
                        limit = strtoll(optarg, &end, 10);
                        if (*optarg < '0' || *optarg > '9' || *end || limit < 1)
                                return cli_usage_error(audit_usage, "--limit wants a positive number");
                } else {
                        return cli_usage_option_error(audit_usage, c, argv);
                }
        }
        if (optind < argc)
                return cli_usage_error(audit_usage, "unexpected argument '%s'", argv[optind]);

        _cleanup_json_ json_t *rows = json_array();
        _cleanup_free_ char *cursor = NULL;
        if (!rows)
                return CLI_EXIT_FAILURE;
        do {
                _cleanup_http_path_ struct http_path path = {};
                _cleanup_json_ json_t *answer = NULL;
                long long want = limit < 0 ? AUDIT_PAGE : limit - (long long)json_array_size(rows);
                char page[24];
                snprintf(page, sizeof(page), "%lld", want < AUDIT_PAGE ? want : AUDIT_PAGE);
                http_path_init(&path, "/v1/audit");
                for (size_t i = 0; i < ARRAY_SIZE(values); i++)
                        if (values[i])
                                http_path_query(&path, params[i], values[i]);
                http_path_query(&path, "limit", page);
                if (cursor)
                        http_path_query(&path, "cursor", cursor);
                if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                        return CLI_EXIT_FAILURE;
                json_t *got = json_object_get(answer, "audit");
                const char *next = json_string_value(json_object_get(answer, "next_cursor"));
                if (!json_is_array(got) || json_array_extend(rows, got) < 0) {
                        fputs("space: the server's answer has no audit rows\n", stderr);
                        return CLI_EXIT_FAILURE;
                }
                free(cursor);
                cursor = next ? strdup(next) : NULL;
        } while (cursor && (limit < 0 || (long long)json_array_size(rows) < limit));

        _cleanup_json_ json_t *all = json_pack("{s:O}", "audit", rows);
        return cli_output_show_list(cli->json, all, "audit", audit_columns, ARRAY_SIZE(audit_columns));
}
