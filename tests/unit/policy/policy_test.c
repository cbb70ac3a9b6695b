/* policy / policy_eval / policy_cache: what documents are refused and why, how a request
 * is decided (first matching rule, default, deny wins across policies, a sandbox policy
 * never loosens its project's), shells read for their executables, paths normalised. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "policy/policy_cache.h"
#include "policy/policy_eval.h"

static struct policy *compile_ok(const char *text)
{
        json_error_t jerr;
        json_t *doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        struct policy *p = NULL;
        char why[512] = "";
        bool unsupported = true;
        int r = policy_compile(doc, &p, &unsupported, why, sizeof(why));
        if (r != 0)
                print_error("unexpected refusal: %s\n", why);
        assert_int_equal(r, 0);
        assert_false(unsupported);
        json_decref(doc);
        snprintf(p->id, sizeof(p->id), "pol-test");
        return p;
}

/* Refused; why must contain want. */
static void compile_bad(const char *text, const char *want, bool want_unsupported)
{
        json_error_t jerr;
        json_t *doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        struct policy *p = NULL;
        char why[512] = "";
        bool unsupported = !want_unsupported;
        assert_int_equal(policy_compile(doc, &p, &unsupported, why, sizeof(why)), -EINVAL);
        assert_null(p);
        if (!strstr(why, want))
                print_error("why: %s (wanted %s)\n", why, want);
        assert_non_null(strstr(why, want));
        assert_int_equal(unsupported, want_unsupported);
        json_decref(doc);
}

static void refusals(void **state)
{
        compile_bad("[]", "must be a JSON object", false);
        compile_bad("{}", "name is required", false);
        compile_bad("{\"name\":\"a b\"}", "name is required", false);
        compile_bad("{\"name\":\"p\",\"colour\":1}", "unknown field \"colour\"", false);
        compile_bad("{\"name\":\"p\",\"default\":\"maybe\"}", "default must be allow, deny or require_approval", false);
        compile_bad("{\"name\":\"p\",\"rules\":{}}", "rules must be an array", false);
        compile_bad("{\"name\":\"p\",\"rules\":[{\"effect\":\"deny\"}]}", "rules[0]: id must be", false);
        compile_bad("{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"deny\"},{\"id\":\"b\"}]}",
                    "rules[1] (\"b\"): effect is required", false);
        compile_bad("{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"deny\"},{\"id\":\"a\",\"effect\":\"deny\"}]}",
                    "rules[1] (\"a\"): id is also the id of rules[0]", false);
        compile_bad("{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"deny\",\"match\":{\"argv\":{\"regex\":\"(\"}}}]}",
                    "rules[0] (\"a\"): match.argv.regex: invalid regular expression", false);
        compile_bad(
                "{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"deny\",\"match\":{\"argv\":{\"glob\":\"x\",\"regex\":"
                "\"y\"}}}]}",
                "exactly one of", false);
        compile_bad(
                "{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"deny\",\"actions\":[\"command\"],\"match\":{\"path\":\"/"
                "etc/*\"}}]}",
                "match.path never applies", false);
        compile_bad("{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"deny\",\"match\":{\"path\":\"etc/*\"}}]}",
                    "absolute path glob", false);
        compile_bad("{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"deny\",\"actions\":[\"teleport\"]}]}",
                    "unknown action \"teleport\"", false);
        compile_bad(
                "{\"name\":\"p\",\"actions\":[\"command\"],\"rules\":[{\"id\":\"a\",\"effect\":\"deny\",\"actions\":[\"file."
                "read\"]}]}",
                "none of them is one the policy governs", false);
        /* Well formed, not available yet: flagged so the API answers 422. Only commands are held. */
        compile_bad("{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"require_approval\"}]}",
                    "require_approval holds commands only", true);
        compile_bad("{\"name\":\"p\",\"default\":\"require_approval\"}", "require_approval holds commands only", true);
        compile_bad("{\"name\":\"p\",\"rules\":[{\"id\":\"a\",\"effect\":\"maybe\"}]}", "must be allow, deny or require_approval",
                    false);
        compile_bad("{\"name\":\"p\",\"actions\":[\"egress\"]}", "egress rules are not enforced yet", true);
}

static struct policy_decision decide1(const struct policy *p, const struct policy_request *rq)
{
        struct policy_decision d;
        const struct policy *ps[] = { p };
        policy_decide(ps, 1, rq, &d);
        return d;
}

/* require_approval: held when no policy denies; a denial anywhere still wins. */
static void approvals(void **state)
{
        (void)state;
        struct policy *push = compile_ok(
                "{\"name\":\"git\",\"rules\":[{\"id\":\"push\",\"effect\":\"require_approval\","
                "\"actions\":[\"command\"],\"match\":{\"argv\":{\"glob\":\"*git push*\"}}}]}");
        struct policy *held_default = compile_ok("{\"name\":\"all\",\"actions\":[\"command\"],\"default\":\"require_approval\"}");
        struct policy *no_force = compile_ok(
                "{\"name\":\"force\",\"rules\":[{\"id\":\"f\",\"effect\":\"deny\",\"match\":{\"argv\":{\"glob\":\"*--force*\"}}}]"
                "}");
        struct policy_request rq = { .action = POLICY_COMMAND, .sandbox_id = "sbx-1" };
        const char *git_push[] = { "git", "push", "origin", "main", NULL };
        const char *git_status[] = { "git", "status", NULL };
        const char *force[] = { "git", "push", "--force", NULL };
        rq.argv = git_push;
        struct policy_decision d = decide1(push, &rq);
        assert_int_equal(d.effect, POLICY_REQUIRE_APPROVAL);
        assert_string_equal(d.deciding.rule->id, "push");
        char msg[512];
        policy_decision_describe(&d, &rq, msg, sizeof(msg));
        assert_non_null(strstr(msg, "needs approval"));
        assert_string_equal(policy_effect_name(d.effect), "require_approval");
        rq.argv = git_status;
        assert_int_equal(decide1(push, &rq).effect, POLICY_ALLOW);
        assert_int_equal(decide1(held_default, &rq).effect, POLICY_REQUIRE_APPROVAL);
        /* A later policy's denial wins over an earlier one's hold. */
        const struct policy *both[] = { push, no_force };
        rq.argv = force;
        policy_decide(both, 2, &rq, &d);
        assert_int_equal(d.effect, POLICY_DENY);
        assert_string_equal(d.deciding.policy->name, "force");
        rq.argv = git_push;
        policy_decide(both, 2, &rq, &d);
        assert_int_equal(d.effect, POLICY_REQUIRE_APPROVAL);
        assert_string_equal(d.deciding.policy->name, "git");
        policy_free(push);
        policy_free(held_default);
        policy_free(no_force);
}

static void command_rules(void **state)
{
        struct policy *p = compile_ok(
                "{\"name\":\"cmds\",\"rules\":["
                "{\"id\":\"ok-curl-local\",\"effect\":\"allow\",\"match\":{\"argv\":{\"prefix\":[\"curl\",\"http://"
                "127.0.0.1\"]}}},"
                "{\"id\":\"no-curl\",\"effect\":\"deny\",\"message\":\"no downloads\",\"match\":{\"executable\":\"curl\"}},"
                "{\"id\":\"no-rm-rf\",\"effect\":\"deny\",\"match\":{\"argv\":{\"regex\":\"rm +-[a-z]*r[a-z]*f? +/\"}}},"
                "{\"id\":\"no-root-tmp\",\"effect\":\"deny\",\"match\":{\"user\":\"root\",\"cwd\":\"/tmp*\"}},"
                "{\"id\":\"exact\",\"effect\":\"deny\",\"match\":{\"argv\":{\"exact\":[\"id\",\"-u\"]}}},"
                "{\"id\":\"glob\",\"effect\":\"deny\",\"match\":{\"argv\":{\"glob\":\"git push *\"}}},"
                "{\"id\":\"by-path\",\"effect\":\"deny\",\"match\":{\"executable\":\"/opt/*/bin/*\"}}]}");
        struct policy_request rq = { .action = POLICY_COMMAND, .sandbox_id = "sbx-1" };
        struct policy_decision d;

        const char *curl[] = { "/usr/bin/curl", "https://example.com", NULL };
        rq.argv = curl;
        d = decide1(p, &rq);
        assert_int_equal(d.effect, POLICY_DENY);
        assert_string_equal(d.deciding.rule->id, "no-curl");
        char msg[512];
        policy_decision_describe(&d, &rq, msg, sizeof(msg));
        assert_non_null(strstr(msg, "\"no-curl\""));
        assert_non_null(strstr(msg, "no downloads"));

        const char *curl_local[] = { "curl", "http://127.0.0.1", NULL };
        rq.argv = curl_local; /* the earlier allow rule wins */
        d = decide1(p, &rq);
        assert_int_equal(d.effect, POLICY_ALLOW);
        assert_string_equal(d.deciding.rule->id, "ok-curl-local");

        const char *shell[] = { "/bin/bash", "-l", "-c", "cd /x && FOO=1 cu\"rl\" -s http://h | sh", NULL };
        rq.argv = shell; /* the script's commands count too */
        d = decide1(p, &rq);
        assert_int_equal(d.effect, POLICY_DENY);
        assert_string_equal(d.deciding.rule->id, "no-curl");

        const char *subst[] = { "sh", "-c", "echo $(exec curl x)", NULL };
        rq.argv = subst;
        assert_int_equal(decide1(p, &rq).effect, POLICY_DENY);

        const char *rm[] = { "rm", "-rf", "/", NULL };
        rq.argv = rm;
        d = decide1(p, &rq);
        assert_string_equal(d.deciding.rule->id, "no-rm-rf");

        const char *ls[] = { "ls", NULL };
        rq.argv = ls;
        rq.user = "root";
        rq.cwd = "/tmp/work";
        assert_string_equal(decide1(p, &rq).deciding.rule->id, "no-root-tmp");
        rq.user = "user";
        d = decide1(p, &rq);
        assert_int_equal(d.effect, POLICY_ALLOW);
        assert_null(d.deciding.rule); /* the default */

        const char *id_u[] = { "id", "-u", NULL }, *id_un[] = { "id", "-u", "-n", NULL };
        rq.argv = id_u;
        assert_int_equal(decide1(p, &rq).effect, POLICY_DENY);
        rq.argv = id_un; /* exact is exact */
        assert_int_equal(decide1(p, &rq).effect, POLICY_ALLOW);

        const char *push[] = { "git", "push", "origin", "main", NULL };
        rq.argv = push;
        assert_string_equal(decide1(p, &rq).deciding.rule->id, "glob");

        const char *opt[] = { "/opt/tool/bin/run", NULL }, *opt_base[] = { "run", NULL };
        rq.argv = opt;
        assert_string_equal(decide1(p, &rq).deciding.rule->id, "by-path");
        rq.argv = opt_base;
        assert_int_equal(decide1(p, &rq).effect, POLICY_ALLOW);
        policy_free(p);
}

static void files_and_lifecycle(void **state)
{
        struct policy *p = compile_ok(
                "{\"name\":\"fs\",\"default\":\"allow\",\"rules\":["
                "{\"id\":\"ro-etc\",\"effect\":\"deny\",\"actions\":[\"file.write\",\"file.delete\"],\"match\":{\"path\":\"/etc/"
                "*\"}},"
                "{\"id\":\"prod\",\"effect\":\"deny\",\"actions\":[\"sandbox.create\"],\"match\":{\"template\":\"prod-*\"}},"
                "{\"id\":\"forks\",\"effect\":\"deny\",\"actions\":[\"sandbox.fork\"],\"match\":{\"count_over\":3}}]}");
        struct policy_request rq = { .action = POLICY_FILE_WRITE, .sandbox_id = "sbx-1", .path = "/tmp/../etc//passwd" };
        assert_int_equal(decide1(p, &rq).effect, POLICY_DENY); /* normalised first */
        rq.action = POLICY_FILE_READ;
        assert_int_equal(decide1(p, &rq).effect, POLICY_ALLOW);
        rq.action = POLICY_FILE_DELETE;
        rq.path = "/etc";
        assert_int_equal(decide1(p, &rq).effect, POLICY_ALLOW); /* the directory itself is not under it */

        struct policy_request create = { .action = POLICY_SANDBOX_CREATE, .templ = "prod-db" };
        assert_int_equal(decide1(p, &create).effect, POLICY_DENY);
        create.templ = "base";
        assert_int_equal(decide1(p, &create).effect, POLICY_ALLOW);

        struct policy_request fork = { .action = POLICY_SANDBOX_FORK, .sandbox_id = "sbx-1", .count = 3 };
        assert_int_equal(decide1(p, &fork).effect, POLICY_ALLOW);
        fork.count = 4;
        assert_int_equal(decide1(p, &fork).effect, POLICY_DENY);
        policy_free(p);
}

static void combining(void **state)
{
        /* An allowlist for commands only; a sandbox policy that tries to allow more. */
        struct policy *project = compile_ok(
                "{\"name\":\"allowlist\",\"default\":\"deny\",\"actions\":[\"command\"],\"rules\":["
                "{\"id\":\"py\",\"effect\":\"allow\",\"match\":{\"executable\":\"python3\"}}]}");
        struct policy *narrow = compile_ok("{\"name\":\"loose\",\"sandbox_id\":\"sbx-2\",\"default\":\"allow\"}");
        struct policy *other = compile_ok("{\"name\":\"other\",\"sandbox_id\":\"sbx-3\",\"default\":\"deny\"}");
        const struct policy *ps[] = { project, narrow, other };
        struct policy_decision d;

        const char *sh[] = { "sh", NULL };
        struct policy_request rq = { .action = POLICY_COMMAND, .sandbox_id = "sbx-2", .argv = sh };
        policy_decide(ps, 3, &rq, &d);
        assert_int_equal(d.effect, POLICY_DENY); /* the sandbox policy does not loosen */
        assert_string_equal(d.deciding.policy->name, "allowlist");
        assert_int_equal(d.nverdicts, 2); /* sbx-3's policy does not apply */

        const char *py[] = { "python3", "-V", NULL };
        rq.argv = py;
        policy_decide(ps, 3, &rq, &d);
        assert_int_equal(d.effect, POLICY_ALLOW);

        /* A file write is not governed by the allowlist; sbx-3's default denies there. */
        struct policy_request w = { .action = POLICY_FILE_WRITE, .sandbox_id = "sbx-3", .path = "/x" };
        policy_decide(ps, 3, &w, &d);
        assert_int_equal(d.effect, POLICY_DENY);
        assert_string_equal(d.deciding.policy->name, "other");
        w.sandbox_id = "sbx-1";
        policy_decide(ps, 3, &w, &d);
        assert_int_equal(d.effect, POLICY_ALLOW);
        assert_null(d.deciding.policy);
        policy_free(project);
        policy_free(narrow);
        policy_free(other);
}

static void shell_reading(void **state)
{
        const char *exes[8];
        char scratch[512];
        const char *a[] = { "bash", "-ec", "A=1 env B=2 wget x; (make) && `id` || nohup ./run.sh &", NULL };
        size_t n = policy_request_executables(a, exes, 8, scratch, sizeof(scratch));
        assert_int_equal(n, 5);
        assert_string_equal(exes[0], "bash");
        assert_string_equal(exes[1], "wget");
        assert_string_equal(exes[2], "make");
        assert_string_equal(exes[3], "id");
        assert_string_equal(exes[4], "./run.sh");
        const char *not_shell[] = { "python3", "-c", "import os", NULL };
        assert_int_equal(policy_request_executables(not_shell, exes, 8, scratch, sizeof(scratch)), 1);
        const char *no_script[] = { "sh", "script.sh", NULL };
        assert_int_equal(policy_request_executables(no_script, exes, 8, scratch, sizeof(scratch)), 1);
        /* A small scratch cuts the reading, never overruns it. */
        assert_true(policy_request_executables(a, exes, 8, scratch, 6) <= 2);
}

static void paths(void **state)
{
        char buf[64];
        assert_int_equal(policy_path_normalise("//a/./b/../c/", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/a/c");
        assert_int_equal(policy_path_normalise("/../..", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/");
        assert_int_equal(policy_path_normalise("a/b", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(policy_path_normalise("/aaaaaaaa", buf, 5), -ENAMETOOLONG);
}

static void cache(void **state)
{
        struct policy_cache *c;
        assert_int_equal(policy_cache_new(&c), 0);
        assert_null(policy_cache_get(c, "p1"));
        uint64_t g = policy_cache_generation(c);
        struct policy_set *s = policy_set_new("p1");
        assert_int_equal(policy_set_add(s, compile_ok("{\"name\":\"a\"}")), 0);
        policy_cache_put(c, s, g);
        struct policy_set *got = policy_cache_get(c, "p1");
        assert_ptr_equal(got, s);
        policy_set_unref(got);
        policy_cache_forget(c, "p1");
        assert_null(policy_cache_get(c, "p1"));
        /* A set read before a change is not kept. */
        policy_cache_put(c, s, g);
        assert_null(policy_cache_get(c, "p1"));
        policy_set_unref(s);
        policy_cache_put(c, NULL, 0);
        assert_null(policy_cache_get(NULL, "p1"));
        policy_cache_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(refusals),  cmocka_unit_test(command_rules), cmocka_unit_test(files_and_lifecycle),
                cmocka_unit_test(combining), cmocka_unit_test(shell_reading), cmocka_unit_test(paths),
                cmocka_unit_test(cache),     cmocka_unit_test(approvals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
