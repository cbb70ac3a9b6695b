/* cli_stats: `space stats [ID...]` — what sandboxes use now, as `docker stats --no-stream`
 * shows it: two readings of GET /v1/sandboxes/ID/stats a second apart give the CPU rate;
 * without ids, every running sandbox. --json prints the second readings as a JSON array. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_table.h"
#include "cli/cli_usage.h"

static const char stats_usage[] =
        "usage: space stats [ID...]\n"
        "\n"
        "What running (or paused) sandboxes use now: CPU over the last second (100% is one\n"
        "CPU), memory against its limit, disk, and how often the memory (OOM) and process\n"
        "limits were hit. Without an ID, every running sandbox. --json prints the figures as\n"
        "the API gives them (GET /v1/sandboxes/ID/stats).\n";

#define STATS_MAX 256

static json_int_t member(const json_t *j, const char *path)
{
        const json_t *v = j;
        char part[32];
        for (const char *p = path; v && *p;) {
                size_t n = strcspn(p, ".");
                snprintf(part, sizeof(part), "%.*s", (int)n, p);
                v = json_object_get(v, part);
                p += n + (p[n] == '.');
        }
        return json_integer_value(v);
}

static void bytes_text(json_int_t b, char *buf, size_t size)
{
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        double v = (double)b;
        size_t u = 0;
        while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
                v /= 1024;
                u++;
        }
        snprintf(buf, size, u ? "%.1f%s" : "%.0f%s", v, units[u]);
}

/* The ids of the running sandboxes, into ids (at most max). */
static int running_ids(struct cli *cli, json_t **ret)
{
        _cleanup_http_path_ struct http_path path = {};
        http_path_init(&path, "/v1/sandboxes");
        http_path_query(&path, "state", "running");
        return cli_request_list(cli, &path, "sandboxes", ret);
}

static int read_stats(struct cli *cli, const char *id, json_t **ret)
{
        _cleanup_http_path_ struct http_path path = {};
        http_path_init(&path, "/v1/sandboxes");
        http_path_segment(&path, id);
        http_path_segment(&path, "stats");
        return cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, ret);
}

static void add_row(struct cli_table *t, const json_t *first, const json_t *second, double seconds)
{
        char cpu[24], mem[48], used[16], limit[16], pct[16], disk[16], hits[32];
        double cpu_s = (double)(member(second, "cpu.usage_us") - member(first, "cpu.usage_us")) / 1e6;
        snprintf(cpu, sizeof(cpu), "%.1f%%", seconds > 0 && cpu_s > 0 ? 100.0 * cpu_s / seconds : 0.0);
        bytes_text(member(second, "memory.used_bytes"), used, sizeof(used));
        bytes_text(member(second, "memory.limit_bytes"), limit, sizeof(limit));
        snprintf(mem, sizeof(mem), "%s / %s", used, limit);
        json_int_t lim = member(second, "memory.limit_bytes");
        snprintf(pct, sizeof(pct), "%.1f%%", lim > 0 ? 100.0 * (double)member(second, "memory.used_bytes") / (double)lim : 0.0);
        bytes_text(member(second, "disk.used_bytes"), disk, sizeof(disk));
        snprintf(hits, sizeof(hits), "%lld/%lld", (long long)member(second, "limit_hits.oom_kills"),
                 (long long)member(second, "limit_hits.pids"));
        const char *cells[] = { json_string_value(json_object_get(second, "sandbox_id")),
                                json_string_value(json_object_get(second, "state")),
                                cpu,
                                mem,
                                pct,
                                disk,
                                hits };
        cli_table_add_row(t, cells);
}

static double monotonic_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cli_stats_main(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = { { "help", no_argument, NULL, 'h' }, {} };
        _cleanup_json_ json_t *listed = NULL, *first = json_array(), *second = json_array();
        const char *ids[STATS_MAX];
        size_t n = 0;
        int c, status = CLI_EXIT_OK;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(stats_usage);
                return cli_usage_option_error(stats_usage, c, argv);
        }
        if (!first || !second)
                return cli_output_exit(-ENOMEM);
        if (argc - optind > STATS_MAX)
                return cli_usage_error(stats_usage, "at most %d ids", STATS_MAX);
        if (optind == argc) {
                if (running_ids(cli, &listed) < 0)
                        return CLI_EXIT_FAILURE;
                const json_t *all = json_object_get(listed, "sandboxes");
                for (size_t i = 0; i < json_array_size(all) && n < STATS_MAX; i++)
                        if (json_string_value(json_object_get(json_array_get(all, i), "id")))
                                ids[n++] = json_string_value(json_object_get(json_array_get(all, i), "id"));
        } else {
                for (int i = optind; i < argc; i++) {
                        if (cli_sandbox_id_resolve(cli, &argv[i]) < 0)
                                return CLI_EXIT_FAILURE;
                        ids[n++] = argv[i];
                }
        }
        /* Two readings of each, a second apart: the CPU rate is between them. */
        double t0 = monotonic_s();
        for (size_t i = 0; i < n; i++) {
                json_t *s = NULL;
                if (read_stats(cli, ids[i], &s) < 0)
                        status = CLI_EXIT_FAILURE;
                json_array_append_new(first, s ? s : json_null());
        }
        if (n)
                nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
        double seconds = monotonic_s() - t0;
        for (size_t i = 0; i < n; i++) {
                json_t *s = NULL;
                if (json_is_object(json_array_get(first, i)) && read_stats(cli, ids[i], &s) < 0)
                        status = CLI_EXIT_FAILURE;
                json_array_append_new(second, s ? s : json_null());
        }
        if (cli->json) {
                _cleanup_json_ json_t *out = json_array();
                for (size_t i = 0; out && i < n; i++)
                        if (json_is_object(json_array_get(second, i)))
                                json_array_append(out, json_array_get(second, i));
                int r = out ? cli_output_json(out) : -ENOMEM;
                return r < 0 ? cli_output_exit(r) : status;
        }
        static const char *const headers[] = { "SANDBOX", "STATE", "CPU", "MEM USAGE / LIMIT", "MEM", "DISK", "OOM/PIDS" };
        _cleanup_cli_table_ struct cli_table *t = NULL;
        if (cli_table_new(7, headers, &t) < 0)
                return cli_output_exit(-ENOMEM);
        for (size_t i = 0; i < n; i++)
                if (json_is_object(json_array_get(second, i)))
                        add_row(t, json_array_get(first, i), json_array_get(second, i), seconds);
        cli_table_print(t, stdout);
        return status;
}
