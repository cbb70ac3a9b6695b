/* space-bench: measures a running spaced through its HTTP API — create→first exec latency
 * (sequential and concurrent), exec round trip, many idle sandboxes at once (errors and
 * memory), and on request snapshot/restore/fork latencies and the disk space snapshots take —
 * then destroys every sandbox (and deletes every snapshot) it made. See docs/benchmarks.md. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench_measure.h"
#include "bench_report.h"
#include "bench_stream_parts.h"
#include "cleanup.h"

static const char usage[] =
        "usage: space-bench [options]\n"
        "  --url URL          spaced's API [http://127.0.0.1:7070; env SPACE_URL]\n"
        "  --key KEY          API key [env SPACE_API_KEY]\n"
        "  --key-file FILE    read the API key from FILE (e.g. <state-dir>/admin.key)\n"
        "  -n N               creates per create measure [100]\n"
        "  -c C               threads of the concurrent measures [10]\n"
        "  --exec-n N         exec round trips [1000]\n"
        "  --density M        sandboxes kept running at once [200]\n"
        "  --template NAME    template to create sandboxes from [busybox]\n"
        "  --only LIST        comma-separated subset of seq,conc,exec,density,history,storage,stream\n"
        "                     [seq,conc,exec,density; history, storage and stream only when named]\n"
        "  --history-n N      samples per snapshot/restore/fork measure [50]\n"
        "  --history-sizes L  MiB of file data in the measured sandbox, comma-separated, at\n"
        "                     most 4 [1,1024]\n"
        "  --fork-count K     children of the larger fork measure [10]\n"
        "  --dirty-mb M       unsynced MiB written before each \"dirty\" snapshot; 0 skips [64]\n"
        "  --storage-n N      snapshots of the storage measure [100]\n"
        "  --storage-change-mb M  MiB rewritten in the sandbox before each of them [1]\n"
        "  --storage-base-mb M  MiB written into the sandbox before the first of them [0]\n"
        "  --storage-wait-s S most seconds to wait for their bytes_exclusive [60 + N/2]\n"
        "  --stream-mb M      MiB of output of each stream throughput run [1024]\n"
        "  --stream-exact-mb M  MiB of the runs within the command log's cap (64 MiB) [48]\n"
        "  --stream-runs R    stream throughput runs, at most 16 [3]\n"
        "  --streams N        event streams open at once [1000]\n"
        "  --stream-sandboxes S  sandboxes their commands run in [10]\n"
        "  --resume-lines L   lines of the resumed command [200000]\n"
        "  --resume-clients C threads following it by reconnecting [4]\n"
        "  --pool PATH        spaced's pool mount (<state-dir>/pool), for its usage figures\n"
        "  --spaced-pid PID   spaced's pid for memory figures [the spaced on the URL's port]\n"
        "  --json             print the results as one JSON object\n"
        "  --json-file FILE   print the table and also write the JSON object to FILE\n"
        "  -h, --help         show this help\n";

static const char *json_file; /* --json-file */

static void on_signal(int sig)
{
        bench_stopping = 1;
}

static int parse_size(const char *s, size_t *ret)
{
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > 1000000)
                return -EINVAL;
        *ret = (size_t)v;
        return 0;
}

static int parse_measures(const char *list, unsigned *ret)
{
        static const struct {
                const char *name;
                unsigned bit;
        } names[] = { { "seq", BENCH_SEQUENTIAL },
                      { "conc", BENCH_CONCURRENT },
                      { "exec", BENCH_EXEC },
                      { "density", BENCH_DENSITY },
                      { "history", BENCH_HISTORY },
                      { "storage", BENCH_STORAGE },
                      { "stream", BENCH_STREAM } };
        _cleanup_free_ char *copy = strdup(list);
        unsigned bits = 0;
        if (!copy)
                return -ENOMEM;
        for (char *save = NULL, *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                size_t i = 0;
                while (i < ARRAY_SIZE(names) && strcmp(names[i].name, w) != 0)
                        i++;
                if (i == ARRAY_SIZE(names))
                        return -EINVAL;
                bits |= names[i].bit;
        }
        if (!bits)
                return -EINVAL;
        *ret = bits;
        return 0;
}

/* "1,1024": MiB sizes for the history measures. */
static int parse_sizes(const char *list, struct bench_config *cfg)
{
        _cleanup_free_ char *copy = strdup(list);
        size_t n = 0;
        if (!copy)
                return -ENOMEM;
        for (char *save = NULL, *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                size_t mb;
                if (n == BENCH_HISTORY_MAX_SIZES || parse_size(w, &mb) < 0 || mb > 65536)
                        return -EINVAL;
                cfg->history_sizes_mb[n++] = mb;
        }
        if (n == 0)
                return -EINVAL;
        cfg->history_nsizes = n;
        return 0;
}

static char *read_key_file(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char buf[256];
        if (!f || !fgets(buf, sizeof(buf), f))
                return NULL;
        buf[strcspn(buf, "\r\n")] = '\0';
        char *key = strdup(buf);
        explicit_bzero(buf, sizeof(buf));
        return key;
}

/* The port of an http://host:port URL; 80 when absent, 0 when unreadable. */
static unsigned url_port(const char *url)
{
        const char *host = strstr(url, "://");
        host = host ? host + 3 : url;
        size_t hostlen = strcspn(host, "/");
        const char *colon = memrchr(host, ':', hostlen);
        if (!colon)
                return 80;
        return (unsigned)strtoul(colon + 1, NULL, 10);
}

static bool name_ok(const char *s)
{
        return *s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == strlen(s);
}

/* spaced answers and the template is ready. */
static int preflight(const struct bench_config *cfg)
{
        struct bench_client *c = NULL;
        char path[128];
        long status;
        json_t *answer = NULL;
        int r = bench_client_new(cfg->url, cfg->key, &c);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "/v1/templates/%s", cfg->template_name);
        r = bench_client_call(c, "GET", path, NULL, &status, &answer);
        if (r < 0) {
                fprintf(stderr, "space-bench: cannot reach spaced: %s\n", bench_client_error(c));
        } else if (status != 200 || strcmp(json_string_value(json_object_get(answer, "state")) ?: "", "ready") != 0) {
                bench_client_set_error(c, status, answer);
                fprintf(stderr, "space-bench: template %s is not ready: %s\n", cfg->template_name,
                        status == 200 ? json_string_value(json_object_get(answer, "state")) : bench_client_error(c));
                r = -EPROTO;
        }
        json_decref(answer);
        bench_client_free(c);
        return r;
}

static int parse_args(int argc, char **argv, struct bench_config *cfg, char **ret_key)
{
        static const struct option opts[] = {
                { "url", required_argument, NULL, 'u' },      { "key", required_argument, NULL, 'k' },
                { "key-file", required_argument, NULL, 'K' }, { "exec-n", required_argument, NULL, 'e' },
                { "density", required_argument, NULL, 'd' },  { "template", required_argument, NULL, 't' },
                { "only", required_argument, NULL, 'o' },     { "spaced-pid", required_argument, NULL, 'p' },
                { "json", no_argument, NULL, 'j' },           { "json-file", required_argument, NULL, 'J' },
                { "history-n", required_argument, NULL, 'H' },  { "history-sizes", required_argument, NULL, 'S' },
                { "fork-count", required_argument, NULL, 'F' }, { "dirty-mb", required_argument, NULL, 'D' },
                { "storage-n", required_argument, NULL, 'N' },  { "storage-change-mb", required_argument, NULL, 'M' },
                { "storage-wait-s", required_argument, NULL, 'W' }, { "pool", required_argument, NULL, 'P' },
                { "storage-base-mb", required_argument, NULL, 'B' },
                { "stream-mb", required_argument, NULL, 1000 },  { "stream-runs", required_argument, NULL, 1001 },
                { "streams", required_argument, NULL, 1002 },    { "stream-sandboxes", required_argument, NULL, 1003 },
                { "resume-lines", required_argument, NULL, 1004 }, { "resume-clients", required_argument, NULL, 1005 },
                { "stream-exact-mb", required_argument, NULL, 1006 },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        _cleanup_erase_ char *key = getenv("SPACE_API_KEY") ? strdup(getenv("SPACE_API_KEY")) : NULL;
        int c, json = 0;
        while ((c = getopt_long(argc, argv, "n:c:h", opts, NULL)) != -1) {
                int r = 0;
                switch (c) {
                case 'u': cfg->url = optarg; break;
                case 'k':
                        erase_and_free(key);
                        key = strdup(optarg);
                        explicit_bzero(optarg, strlen(optarg)); /* out of `ps` as soon as we can */
                        break;
                case 'K':
                        erase_and_free(key);
                        key = read_key_file(optarg);
                        if (!key) {
                                fprintf(stderr, "space-bench: cannot read a key from %s: %m\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case 'n': r = parse_size(optarg, &cfg->n); break;
                case 'c': r = parse_size(optarg, &cfg->concurrency); break;
                case 'e': r = parse_size(optarg, &cfg->exec_n); break;
                case 'd': r = parse_size(optarg, &cfg->density); break;
                case 't': cfg->template_name = optarg; break;
                case 'o': r = parse_measures(optarg, &cfg->measures); break;
                case 'p': cfg->spaced_pid = (pid_t)atoi(optarg); break;
                case 'H': r = parse_size(optarg, &cfg->history_n); break;
                case 'S': r = parse_sizes(optarg, cfg); break;
                case 'F':
                        r = parse_size(optarg, &cfg->fork_count);
                        if (r == 0 && cfg->fork_count > 16)
                                r = -EINVAL;
                        break;
                case 'D':
                        if (strcmp(optarg, "0") == 0)
                                cfg->dirty_mb = 0;
                        else
                                r = parse_size(optarg, &cfg->dirty_mb);
                        break;
                case 'N': r = parse_size(optarg, &cfg->storage_n); break;
                case 'M':
                        r = parse_size(optarg, &cfg->storage_change_mb);
                        if (r == 0 && cfg->storage_change_mb > 1024)
                                r = -EINVAL;
                        break;
                case 'W': r = parse_size(optarg, &cfg->storage_wait_s); break;
                case 'B':
                        if (strcmp(optarg, "0") == 0)
                                cfg->storage_base_mb = 0;
                        else
                                r = parse_size(optarg, &cfg->storage_base_mb);
                        break;
                case 'P': cfg->pool = optarg; break;
                case 1000: r = parse_size(optarg, &cfg->stream_mb); break;
                case 1001:
                        r = parse_size(optarg, &cfg->stream_runs);
                        if (r == 0 && cfg->stream_runs > BENCH_STREAM_MAX_RUNS)
                                r = -EINVAL;
                        break;
                case 1006: r = parse_size(optarg, &cfg->stream_exact_mb); break;
                case 1002: r = parse_size(optarg, &cfg->streams); break;
                case 1003: r = parse_size(optarg, &cfg->stream_sandboxes); break;
                case 1004: r = parse_size(optarg, &cfg->resume_lines); break;
                case 1005:
                        r = parse_size(optarg, &cfg->resume_clients);
                        if (r == 0 && cfg->resume_clients > 64)
                                r = -EINVAL;
                        break;
                case 'j': json = 1; break;
                case 'J': json_file = optarg; break;
                case 'h': fputs(usage, stdout); exit(0);
                default: fputs(usage, stderr); return -EINVAL;
                }
                if (r < 0) {
                        fprintf(stderr, "space-bench: bad value for -%c: %s\n", c < 128 && c > ' ' ? c : '-', optarg);
                        return r;
                }
        }
        if (optind < argc || !key || !name_ok(cfg->template_name)) {
                fprintf(stderr, "space-bench: %s\n%s", !key ? "no API key (--key, --key-file or SPACE_API_KEY)" : "bad arguments", usage);
                return -EINVAL;
        }
        *ret_key = TAKE_PTR(key);
        return json;
}

static int run_measures(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        static const struct {
                unsigned bit;
                const char *what;
                int (*fn)(const struct bench_config *, struct bench_sandboxes *, struct bench_results *);
        } steps[] = {
                { BENCH_SEQUENTIAL, "sequential creates", bench_measure_sequential },
                { BENCH_CONCURRENT, "concurrent creates", bench_measure_concurrent },
                { BENCH_EXEC, "exec round trips", bench_measure_exec },
                { BENCH_DENSITY, "idle density", bench_measure_density },
                { BENCH_HISTORY, "snapshot, restore, fork", bench_measure_history },
                { BENCH_STORAGE, "storage per snapshot", bench_measure_storage },
                { BENCH_STREAM, "data plane (streamed commands)", bench_measure_stream },
        };
        int failed = 0;
        for (size_t i = 0; i < ARRAY_SIZE(steps) && !bench_stopping; i++) {
                if (!(cfg->measures & steps[i].bit))
                        continue;
                fprintf(stderr, "space-bench: %s...\n", steps[i].what);
                int r = steps[i].fn(cfg, set, res);
                if (r < 0) {
                        fprintf(stderr, "space-bench: %s failed: %s\n", steps[i].what, strerror(-r));
                        failed = 1;
                }
                /* Each measure starts from no sandboxes of ours. */
                r = bench_measure_destroy_all(cfg, set, res);
                if (r < 0)
                        fprintf(stderr, "space-bench: destroying: %s\n", strerror(-r));
        }
        return failed;
}

int main(int argc, char **argv)
{
        struct bench_config cfg = {
                .url = getenv("SPACE_URL") ?: "http://127.0.0.1:7070",
                .template_name = "busybox",
                .n = 100,
                .concurrency = 10,
                .exec_n = 1000,
                .density = 200,
                .measures = BENCH_SEQUENTIAL | BENCH_CONCURRENT | BENCH_EXEC | BENCH_DENSITY,
                .history_n = 50,
                .history_sizes_mb = { 1, 1024 },
                .history_nsizes = 2,
                .fork_count = 10,
                .dirty_mb = 64,
                .storage_n = 100,
                .storage_change_mb = 1,
                .stream_mb = 1024,
                .stream_exact_mb = 48,
                .stream_runs = 3,
                .streams = 1000,
                .stream_sandboxes = 10,
                .resume_lines = 200000,
                .resume_clients = 4,
        };
        _cleanup_erase_ char *key = NULL;
        int json = parse_args(argc, argv, &cfg, &key);
        if (json < 0)
                return 2;
        cfg.key = key;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || preflight(&cfg) < 0)
                return 2;
        if (cfg.spaced_pid <= 0) {
                int r = bench_proc_find_spaced(url_port(cfg.url), &cfg.spaced_pid);
                if (r < 0) {
                        fprintf(stderr, "space-bench: no spaced pid (%s): no memory figure for spaced; use --spaced-pid\n",
                                strerror(-r));
                        cfg.spaced_pid = 0;
                }
        }
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);

        struct bench_sandboxes set;
        struct bench_results res;
        struct utsname u;
        long hwm;
        uname(&u);
        bench_sandboxes_init(&set);
        bench_results_init(&res, cfg.concurrency);
        int failed = run_measures(&cfg, &set, &res);
        if (cfg.spaced_pid > 0)
                bench_proc_rss(cfg.spaced_pid, &res.spaced_rss_kb_end, &hwm);
        if (json) {
                bench_report_json(&cfg, &res, &u, stdout);
        } else {
                bench_report_text(&cfg, &res, &u);
                if (json_file) {
                        _cleanup_fclose_ FILE *f = fopen(json_file, "we");
                        if (!f || bench_report_json(&cfg, &res, &u, f) < 0) {
                                fprintf(stderr, "space-bench: cannot write %s: %m\n", json_file);
                                failed = 1;
                        }
                }
        }
        for (size_t i = 0; i < _BENCH_STAT_MAX; i++)
                if (res.stats[i].errors)
                        failed = 1;
        if (res.leftovers || ((cfg.measures & BENCH_STREAM) && bench_stream_failed(&res.stream)))
                failed = 1;
        bench_results_release(&res);
        bench_sandboxes_release(&set);
        curl_global_cleanup();
        return bench_stopping ? 130 : failed;
}
