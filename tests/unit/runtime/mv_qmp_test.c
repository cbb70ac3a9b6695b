/* Unit tests of mv_qmp.c against a socket pair standing for QEMU's monitor: what QEMU
 * answers is written ahead on the other end. Replies, errors and events are read as QMP
 * defines them; a long line, a reply that is not an object, a NUL in a line, a bad
 * greeting, an event flood and silence are errors, never hangs or misreads. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/microvm/mv_qmp.h"

#define GREETING \
        "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}}, \"capabilities\": [\"oob\"]}}\r\n"
#define OK "{\"return\": {}}\r\n"

static int peer = -1;
static struct mv_qmp qmp;

/* a qmp attached to a socket whose other end already holds `said` */
static int attach(const char *said, size_t len, struct space_error *err)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        peer = sv[1];
        assert_int_equal(write(peer, said, len), (ssize_t)len);
        return mv_qmp_attach(&qmp, sv[0], 200, err);
}

static int teardown(void **state)
{
        mv_qmp_close(&qmp);
        if (peer >= 0)
                close(peer);
        peer = -1;
        return 0;
}

static void say(const char *s)
{
        assert_int_equal(write(peer, s, strlen(s)), (ssize_t)strlen(s));
}

static void test_greeting_then_commands(void **state)
{
        struct space_error err = { 0 };
        const char *said = GREETING OK;
        assert_int_equal(attach(said, strlen(said), &err), 0);
        say("{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": \"STOP\"}\r\n" OK);
        assert_int_equal(mv_qmp_execute(&qmp, "stop", NULL, -1, NULL, 200, &err), 0);
        say("{\"return\": {\"status\": \"paused\", \"running\": false}}\r\n");
        json_t *rv = NULL;
        assert_int_equal(mv_qmp_execute(&qmp, "query-status", NULL, -1, &rv, 200, &err), 0);
        assert_string_equal(json_string_value(json_object_get(rv, "status")), "paused");
        json_decref(rv);
        /* what the client sent: one command per line */
        char sent[512];
        ssize_t n = read(peer, sent, sizeof(sent) - 1);
        assert_true(n > 0);
        sent[n] = '\0';
        assert_non_null(strstr(sent, "{\"execute\":\"qmp_capabilities\"}\n"));
        assert_non_null(strstr(sent, "{\"execute\":\"stop\"}\n"));
}

static void test_error_reply(void **state)
{
        struct space_error err = { 0 };
        const char *said = GREETING OK;
        assert_int_equal(attach(said, strlen(said), &err), 0);
        say("{\"error\": {\"class\": \"GenericError\", \"desc\": \"no such thing\"}}\r\n");
        assert_int_equal(mv_qmp_execute(&qmp, "cont", NULL, -1, NULL, 200, &err), -1);
        assert_non_null(strstr(err.message, "no such thing"));
}

static void test_save_waits_for_completed(void **state)
{
        struct space_error err = { 0 };
        const char *said = GREETING OK;
        assert_int_equal(attach(said, strlen(said), &err), 0);
        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        say(OK OK "{\"return\": {\"status\": \"active\"}}\r\n{\"return\": {\"status\": \"completed\"}}\r\n");
        assert_int_equal(mv_qmp_save(&qmp, fd, 1000, &err), 0);
        say(OK OK "{\"return\": {\"status\": \"failed\", \"error-desc\": \"disk full\"}}\r\n");
        assert_int_equal(mv_qmp_save(&qmp, fd, 1000, &err), -1);
        assert_non_null(strstr(err.message, "disk full"));
        say(OK OK "{\"return\": {\"status\": \"something-new\"}}\r\n");
        assert_int_equal(mv_qmp_load(&qmp, fd, 1000, &err), -1);
        close(fd);
}

static void test_hostile_answers(void **state)
{
        static const char *const bad[] = {
                "[1, 2]\r\n",                                                           /* not an object */
                "{\"return\": {}, \"error\": {\"class\": \"x\", \"desc\": \"y\"}}\r\n", /* both */
                "{\"error\": \"just a string\"}\r\n",
                "{\"surprise\": 1}\r\n",
                "{\"return\": {}}\0{\"return\": {}}\r\n",
                "{\"return\": {}, \"return\": {}}\r\n", /* duplicate key */
        };
        /* the NUL case is sent whole, NUL included: its length is the literal's, less its own terminator */
        static const size_t bad_len[] = { 0, 0, 0, 0, sizeof("{\"return\": {}}\0{\"return\": {}}\r\n") - 1, 0 };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct space_error err = { 0 };
                const char *said = GREETING OK;
                assert_int_equal(attach(said, strlen(said), &err), 0);
                size_t len = bad_len[i] ? bad_len[i] : strlen(bad[i]);
                assert_int_equal(write(peer, bad[i], len), (ssize_t)len);
                assert_int_equal(mv_qmp_execute(&qmp, "stop", NULL, -1, NULL, 200, &err), -1);
                teardown(NULL);
        }
}

static void test_bad_greeting_and_long_line(void **state)
{
        struct space_error err = { 0 };
        const char *said = OK;
        assert_int_equal(attach(said, strlen(said), &err), -1);
        teardown(NULL);
        said = GREETING OK;
        assert_int_equal(attach(said, strlen(said), &err), 0);
        char *line = malloc(MV_QMP_LINE_MAX + 16);
        memset(line, ' ', MV_QMP_LINE_MAX + 15);
        line[MV_QMP_LINE_MAX + 15] = '\0';
        int fl = fcntl(peer, F_GETFL);
        fcntl(peer, F_SETFL, fl | O_NONBLOCK);
        (void)!write(peer, line, MV_QMP_LINE_MAX + 15); /* as much as the socket takes */
        free(line);
        assert_int_equal(mv_qmp_execute(&qmp, "stop", NULL, -1, NULL, 500, &err), -1);
}

static void test_event_flood_and_silence(void **state)
{
        struct space_error err = { 0 };
        const char *said = GREETING OK;
        assert_int_equal(attach(said, strlen(said), &err), 0);
        for (int i = 0; i <= MV_QMP_EVENTS_MAX; i++)
                say("{\"event\": \"X\"}\n");
        say(OK);
        assert_int_equal(mv_qmp_execute(&qmp, "stop", NULL, -1, NULL, 500, &err), -1);
        assert_non_null(strstr(err.message, "events"));
        teardown(NULL);
        assert_int_equal(attach(said, strlen(said), &err), 0);
        assert_int_equal(mv_qmp_execute(&qmp, "stop", NULL, -1, NULL, 100, &err), -1);
        assert_int_equal(err.code, SPACE_E_TIMEOUT);
        teardown(NULL);
        /* QEMU gone */
        assert_int_equal(attach(said, strlen(said), &err), 0);
        close(peer);
        peer = -1;
        assert_int_equal(mv_qmp_execute(&qmp, "stop", NULL, -1, NULL, 100, &err), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_greeting_then_commands, teardown),
                cmocka_unit_test_teardown(test_error_reply, teardown),
                cmocka_unit_test_teardown(test_save_waits_for_completed, teardown),
                cmocka_unit_test_teardown(test_hostile_answers, teardown),
                cmocka_unit_test_teardown(test_bad_greeting_and_long_line, teardown),
                cmocka_unit_test_teardown(test_event_flood_and_silence, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
