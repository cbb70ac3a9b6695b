/* Unit tests of ns_agent_image: the sealed memfd copy every sandbox executes. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/namespaces/ns_agent_image.h"

static void test_copy_is_sealed(void **state)
{
        (void)state;
        char path[] = "/tmp/ns-agent-image-XXXXXX";
        int src = mkstemp(path);
        assert_true(src >= 0);
        static const char body[] = "#!/bin/sh\nexit 7\n";
        assert_int_equal(write(src, body, sizeof(body) - 1), sizeof(body) - 1);
        close(src);

        int fd = ns_agent_image_open(path);
        unlink(path);
        assert_true(fd >= 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        char got[64] = { 0 };
        assert_int_equal(pread(fd, got, sizeof(got), 0), sizeof(body) - 1);
        assert_string_equal(got, body);
        int seals = fcntl(fd, F_GET_SEALS);
        int want = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
        assert_int_equal(seals & want, want);
        /* What a sandbox root reaching it through /proc/1/exe would try. */
        assert_int_equal(pwrite(fd, "x", 1, 0), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(ftruncate(fd, 0), -1);
        assert_int_equal(ftruncate(fd, 4096), -1);
        assert_int_equal(fcntl(fd, F_ADD_SEALS, 0), -1);
        assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        int w = open(proc, O_WRONLY | O_CLOEXEC);
        if (w >= 0) {
                assert_int_equal(write(w, "x", 1), -1);
                assert_int_equal(errno, EPERM);
                close(w);
        }
        assert_int_equal(pread(fd, got, sizeof(got), 0), sizeof(body) - 1);
        assert_string_equal(got, body);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0555);
        close(fd);
}

static void test_refuses_what_is_not_a_file(void **state)
{
        (void)state;
        assert_int_equal(ns_agent_image_open("/nonexistent/space-agent"), -ENOENT);
        assert_int_equal(ns_agent_image_open("/tmp"), -ENOEXEC);
        assert_int_equal(ns_agent_image_open("/dev/null"), -ENOEXEC);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_copy_is_sealed),
                cmocka_unit_test(test_refuses_what_is_not_a_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
