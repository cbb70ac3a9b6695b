/* space-policy-bench: the cost of one policy decision (policy/policy_eval.h) on a command,
 * with a policy of N rules none of which matches (every rule is tried) against no policy at
 * all, alternated in one run. What the exec round trip adds for policies, without the noise
 * of the round trip itself (bench/policy_bench.py measures that). See docs/benchmarks.md.
 *
 * Usage: space-policy-bench [RULES [ROUNDS]] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "policy/policy.h"
#include "policy/policy_eval.h"

static int64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

static json_t *document(int n)
{
        json_t *rules = json_array();
        for (int i = 0; i < n; i++) {
                char id[16], word[32], pat[64];
                snprintf(id, sizeof(id), "r%d", i);
                snprintf(word, sizeof(word), "nothing-%d", i);
                json_t *m;
                switch (i % 4) {
                case 0:
                        snprintf(pat, sizeof(pat), "nothing-%d*", i);
                        m = json_pack("{s:s}", "executable", pat);
                        break;
                case 1:
                        m = json_pack("{s:{s:[s,s]}}", "argv", "prefix", word, "--flag");
                        break;
                case 2:
                        snprintf(pat, sizeof(pat), "*nothing-%d *", i);
                        m = json_pack("{s:{s:s}}", "argv", "glob", pat);
                        break;
                default:
                        snprintf(pat, sizeof(pat), "(^| )nothing-%d( |$)", i);
                        m = json_pack("{s:{s:s}}", "argv", "regex", pat);
                }
                json_array_append_new(rules, json_pack("{s:s, s:s, s:o}", "id", id, "effect", "deny", "match", m));
        }
        return json_pack("{s:s, s:[s], s:o}", "name", "bench", "actions", "command", "rules", rules);
}

int main(int argc, char **argv)
{
        int nrules = argc > 1 ? atoi(argv[1]) : 100, rounds = argc > 2 ? atoi(argv[2]) : 200000;
        json_t *doc = document(nrules);
        struct policy *p = NULL;
        char why[512];
        if (policy_compile(doc, &p, NULL, why, sizeof(why)) < 0) {
                fprintf(stderr, "space-policy-bench: %s\n", why);
                return 1;
        }
        json_decref(doc);
        const char *args[] = { "/bin/sh", "-c", "cd /workspace && git status && ls -la | head", NULL };
        struct policy_request rq = { .action = POLICY_COMMAND, .sandbox_id = "sb-1", .templ = "base", .argv = args, .user = "root" };
        const struct policy *set[] = { p };
        int64_t *with = calloc((size_t)rounds, sizeof(*with)), *without = calloc((size_t)rounds, sizeof(*without));
        struct policy_decision d;
        for (int i = 0; i < rounds; i++) {
                int64_t t0 = now_ns();
                policy_decide(set, 1, &rq, &d);
                int64_t t1 = now_ns();
                policy_decide(set, 0, &rq, &d);
                int64_t t2 = now_ns();
                with[i] = t1 - t0;
                without[i] = t2 - t1;
                if (d.effect != POLICY_ALLOW) {
                        fprintf(stderr, "space-policy-bench: a rule matched\n");
                        return 1;
                }
        }
        qsort(with, (size_t)rounds, sizeof(*with), cmp);
        qsort(without, (size_t)rounds, sizeof(*without), cmp);
        printf("policy decision, %d rules: p50=%.2f p99=%.2f us; no policy: p50=%.2f p99=%.2f us (n=%d each)\n", nrules,
               (double)with[rounds / 2] / 1000.0, (double)with[rounds * 99 / 100] / 1000.0, (double)without[rounds / 2] / 1000.0,
               (double)without[rounds * 99 / 100] / 1000.0, rounds);
        free(with);
        free(without);
        policy_free(p);
        return 0;
}
