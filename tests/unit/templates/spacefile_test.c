/* Unit tests of the Spacefile parser (src/templates/spacefile.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "templates/spacefile.h"

static struct spacefile parse_ok(const char *text)
{
        struct spacefile f = { 0 };
        struct spacefile_error err = { 0 };
        int r = spacefile_parse(text, strlen(text), &f, &err);
        if (r != 0)
                print_error("unexpected error at line %u: %s\n", err.line, err.message);
        assert_int_equal(r, 0);
        return f;
}

static struct spacefile_error parse_bad(const char *text)
{
        struct spacefile f = { .nsteps = 12345 };
        struct spacefile_error err = { 0 };
        assert_int_equal(spacefile_parse(text, strlen(text), &f, &err), -1);
        assert_int_equal(f.nsteps, 12345); /* untouched */
        assert_true(err.message[0] != '\0');
        return err;
}

static void test_every_instruction(void **state)
{
        struct spacefile f = parse_ok(
                "# a comment\n"
                "from debian\n"
                "\n"
                "ENV A=1 B=\"two words\" C='x y'\n"
                "ENV PATHX /opt/bin:/usr/bin\n"
                "WORKDIR /app\n"
                "COPY --chown=user:user --chmod=0640 a.txt b/ /app/\n"
                "RUN echo hi && \\\n"
                "    echo there\n"
                "RUN [\"/bin/sh\", \"-c\", \"echo exec\"]\n"
                "USER user\n"
                "LABEL org.example.v=1 maintainer=\"me\"\n");
        assert_int_equal(f.nsteps, 9);
        assert_int_equal(f.steps[0].kind, SPACEFILE_FROM);
        assert_string_equal(f.steps[0].value, "debian");
        assert_string_equal(f.steps[0].text, "FROM debian");
        assert_int_equal(f.steps[0].line, 2);

        assert_int_equal(f.steps[1].kind, SPACEFILE_ENV);
        assert_int_equal(f.steps[1].argc, 6);
        assert_string_equal(f.steps[1].argv[1], "1");
        assert_string_equal(f.steps[1].argv[2], "B");
        assert_string_equal(f.steps[1].argv[3], "two words");
        assert_string_equal(f.steps[1].argv[5], "x y");
        assert_int_equal(f.steps[2].argc, 2);
        assert_string_equal(f.steps[2].argv[0], "PATHX");
        assert_string_equal(f.steps[2].argv[1], "/opt/bin:/usr/bin");

        assert_int_equal(f.steps[3].kind, SPACEFILE_WORKDIR);
        assert_string_equal(f.steps[3].value, "/app");

        struct spacefile_step *c = &f.steps[4];
        assert_int_equal(c->kind, SPACEFILE_COPY);
        assert_string_equal(c->chown, "user:user");
        assert_true(c->has_chmod);
        assert_int_equal(c->chmod, 0640);
        assert_int_equal(c->argc, 3);
        assert_string_equal(c->argv[0], "a.txt");
        assert_string_equal(c->argv[2], "/app/");

        assert_int_equal(f.steps[5].kind, SPACEFILE_RUN);
        assert_string_equal(f.steps[5].value, "echo hi &&     echo there");
        assert_int_equal(f.steps[5].line, 8);
        assert_null(f.steps[5].argv);
        assert_int_equal(f.steps[6].argc, 3);
        assert_string_equal(f.steps[6].argv[2], "echo exec");
        assert_null(f.steps[6].value);
        assert_null(f.steps[6].argv[3]);

        assert_int_equal(f.steps[7].kind, SPACEFILE_USER);
        assert_string_equal(f.steps[7].value, "user");
        assert_int_equal(f.steps[8].kind, SPACEFILE_LABEL);
        spacefile_release(&f);
        spacefile_release(&f); /* twice is harmless */
}

static void test_sudo(void **state)
{
        struct spacefile f = parse_ok("FROM busybox\nsudo ON\nSUDO off\n");
        assert_int_equal(f.nsteps, 3);
        assert_int_equal(f.steps[1].kind, SPACEFILE_SUDO);
        assert_string_equal(f.steps[1].value, "ON");
        assert_string_equal(f.steps[1].text, "SUDO ON");
        assert_string_equal(f.steps[2].value, "off");
        assert_string_equal(spacefile_kind_name(SPACEFILE_SUDO), "SUDO");
        spacefile_release(&f);
}

static void test_labels(void **state)
{
        struct spacefile f = parse_ok("FROM busybox\nLABEL a.b/c=1 d=\"e f\"\n");
        assert_int_equal(f.steps[1].kind, SPACEFILE_LABEL);
        assert_int_equal(f.steps[1].argc, 4);
        assert_string_equal(f.steps[1].argv[0], "a.b/c");
        assert_string_equal(f.steps[1].argv[3], "e f");
        spacefile_release(&f);
}

/* IDLE <after_s> [hibernate|stop]: the seconds normalised, the action hibernate when left out. */
static void test_idle(void **state)
{
        struct spacefile f = parse_ok("FROM busybox\nIDLE 0900\nidle 0 stop\n");
        assert_int_equal(f.nsteps, 3);
        assert_int_equal(f.steps[1].kind, SPACEFILE_IDLE);
        assert_int_equal(f.steps[1].argc, 2);
        assert_string_equal(f.steps[1].argv[0], "900");
        assert_string_equal(f.steps[1].argv[1], "hibernate");
        assert_string_equal(f.steps[2].argv[0], "0");
        assert_string_equal(f.steps[2].argv[1], "stop");
        assert_string_equal(spacefile_kind_name(SPACEFILE_IDLE), "IDLE");
        spacefile_release(&f);
}

static void test_continuations_and_comments(void **state)
{
        /* Comment lines and blank lines inside a continuation are skipped, CRLF is accepted,
         * trailing blanks after the backslash do not end the instruction. */
        struct spacefile f =
                parse_ok("FROM busybox\r\nRUN a \\  \r\n# inside\r\n\r\n  b\\\n  c\r\n   # indented comment\nRUN d \\");
        assert_int_equal(f.nsteps, 3);
        assert_string_equal(f.steps[1].value, "a   b  c");
        assert_string_equal(f.steps[1].text, "RUN a   b  c");
        assert_int_equal(f.steps[1].line, 2);
        assert_string_equal(f.steps[2].value, "d");
        spacefile_release(&f);
}

static void test_the_text_is_canonical(void **state)
{
        /* The cache key is built from text: keyword case and surrounding blanks do not matter. */
        struct spacefile a = parse_ok("FROM busybox\nrun   echo  x   \n");
        struct spacefile b = parse_ok("# changed comment\nFROM busybox\n\nRUN echo  x\n");
        assert_string_equal(a.steps[1].text, b.steps[1].text);
        spacefile_release(&a);
        spacefile_release(&b);
}

static void test_run_json_that_is_not_an_array_is_shell(void **state)
{
        struct spacefile f = parse_ok("FROM busybox\nRUN [ -f /etc/passwd ] && echo yes\nRUN [\"a\", 1]\n");
        assert_string_equal(f.steps[1].value, "[ -f /etc/passwd ] && echo yes");
        assert_string_equal(f.steps[2].value, "[\"a\", 1]");
        spacefile_release(&f);
}

static void test_copy_json_form(void **state)
{
        struct spacefile f = parse_ok("FROM busybox\nCOPY [\"with space.txt\", \"/dst/\"]\n");
        assert_int_equal(f.steps[1].argc, 2);
        assert_string_equal(f.steps[1].argv[0], "with space.txt");
        assert_null(f.steps[1].chown);
        assert_false(f.steps[1].has_chmod);
        spacefile_release(&f);
}

static void test_errors_name_the_line(void **state)
{
        static const struct {
                const char *text;
                unsigned line;
                const char *needle;
        } cases[] = {
                { "", 0, "empty" },
                { "# only a comment\n", 0, "empty" },
                { "RUN echo\n", 1, "first instruction" },
                { "FROM a\nFROM b\n", 2, "only one FROM" },
                { "FROM a AS b\n", 1, "one template" },
                { "FROM a\nCMD [\"x\"]\n", 2, "not a Spacefile instruction" },
                { "FROM a\nARG X=1\n", 2, "not a Spacefile instruction" },
                { "FROM a\nRUN\n", 2, "needs an argument" },
                { "FROM a\nCOPY onlyone\n", 2, "source and a destination" },
                { "FROM a\nCOPY a b c\n", 2, "ending in /" },
                { "FROM a\nCOPY --from=x a b\n", 2, "--from" },
                { "FROM a\nCOPY --chmod=999 a b\n", 2, "octal" },
                { "FROM a\nCOPY --chmod=12345 a b\n", 2, "octal" },
                { "FROM a\nCOPY --owner=x a b\n", 2, "unknown COPY option" },
                { "FROM a\nENV 1A=x\n", 2, "valid" },
                { "FROM a\nENV A\n", 2, "ENV needs" },
                { "FROM a\nENV A=\"x\n", 2, "unterminated" },
                { "FROM a\nLABEL noequals\n", 2, "key=value" },
                { "FROM a\nUSER a b\n", 2, "USER takes" },
                { "FROM a\nIDLE\n", 2, "needs an argument" },
                { "FROM a\nIDLE soon\n", 2, "IDLE takes seconds" },
                { "FROM a\nIDLE -5\n", 2, "IDLE takes seconds" },
                { "FROM a\nIDLE 604801\n", 2, "IDLE takes seconds" },
                { "FROM a\nIDLE 99999999999999999999\n", 2, "IDLE takes seconds" },
                { "FROM a\nIDLE 60 destroy\n", 2, "hibernate or stop" },
                { "FROM a\nIDLE 60 stop now\n", 2, "IDLE takes seconds" },
                { "FROM a\nSUDO maybe\n", 2, "SUDO takes on or off" },
                { "FROM a\nSUDO on off\n", 2, "SUDO takes on or off" },
                { "FROM a\n\n\nRUN x \\\n y\nBOGUS\n", 6, "BOGUS" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct spacefile_error err = parse_bad(cases[i].text);
                if (err.line != cases[i].line || !strstr(err.message, cases[i].needle))
                        print_error("case %zu: line %u message %s\n", i, err.line, err.message);
                assert_int_equal(err.line, cases[i].line);
                assert_non_null(strstr(err.message, cases[i].needle));
        }
}

static void test_limits(void **state)
{
        char nul[] = "FROM a\nRUN x\0y\n";
        struct spacefile f = { 0 };
        struct spacefile_error err = { 0 };
        assert_int_equal(spacefile_parse(nul, sizeof(nul) - 1, &f, &err), -1);
        assert_non_null(strstr(err.message, "NUL"));

        size_t n = 300;
        char *many = malloc(n * 8 + 16);
        strcpy(many, "FROM a\n");
        for (size_t i = 0; i < n; i++)
                strcat(many, "RUN x\n");
        assert_int_equal(spacefile_parse(many, strlen(many), &f, &err), -1);
        assert_non_null(strstr(err.message, "more than"));
        free(many);
        assert_int_equal(spacefile_parse("FROM a", SPACEFILE_MAX_BYTES + 1, &f, &err), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_instruction),
                cmocka_unit_test(test_labels),
                cmocka_unit_test(test_idle),
                cmocka_unit_test(test_sudo),
                cmocka_unit_test(test_continuations_and_comments),
                cmocka_unit_test(test_the_text_is_canonical),
                cmocka_unit_test(test_run_json_that_is_not_an_array_is_shell),
                cmocka_unit_test(test_copy_json_form),
                cmocka_unit_test(test_errors_name_the_line),
                cmocka_unit_test(test_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
