/* agent_test_harness: starting the real space-agent and talking to it from cmocka tests. */
#include "agent_test_harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct agent_test_agent agent_test = { .pid = -1 };
int agent_test_skipped;

int agent_test_exit(int failed)
{
        return failed ? 1 : agent_test_skipped ? 77 : 0;
}

int agent_test_init(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: %s PATH-TO-space-agent\n", argv[0]);
                return 2;
        }
        agent_test.path = argv[1];
        signal(SIGPIPE, SIG_IGN);
        return 0;
}

uint64_t agent_test_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void agent_test_sleep_ms(long ms)
{
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

void agent_test_path_in_dir(const char *name, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", agent_test.dir, name);
}

static int try_connect(void)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        strcpy(addr.sun_path, agent_test.sock_path);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int agent_test_connect_timeout(int timeout_s)
{
        int fd = try_connect();
        assert_true(fd >= 0);
        struct timeval tv = { .tv_sec = timeout_s };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        return fd;
}

int agent_test_connect(void)
{
        return agent_test_connect_timeout(20);
}

int agent_test_setup(void **state)
{
        strcpy(agent_test.dir, "/tmp/space-agent-test-XXXXXX");
        if (!mkdtemp(agent_test.dir))
                return -1;
        agent_test_path_in_dir("agent.sock", agent_test.sock_path, sizeof agent_test.sock_path);

        agent_test.pid = fork();
        if (agent_test.pid < 0)
                return -1;
        if (agent_test.pid == 0) {
                int null = open("/dev/null", O_RDWR);
                dup2(null, 0);
                dup2(null, 1);
                /* Hostile inheritance the agent must undo: ignored SIGCHLD, blocked signals. */
                sigset_t mask;
                sigfillset(&mask);
                sigprocmask(SIG_BLOCK, &mask, NULL);
                signal(SIGCHLD, SIG_IGN);
                if (agent_test.root)
                        execl(agent_test.path, "space-agent", "--listen", agent_test.sock_path, "--root", agent_test.root,
                              (char *)NULL);
                else
                        execl(agent_test.path, "space-agent", "--listen", agent_test.sock_path, (char *)NULL);
                _exit(127);
        }
        for (int i = 0; i < 500; i++) {
                int fd = try_connect();
                if (fd >= 0) {
                        close(fd);
                        return 0;
                }
                if (waitpid(agent_test.pid, NULL, WNOHANG) == agent_test.pid) {
                        agent_test.pid = -1;
                        return -1;
                }
                agent_test_sleep_ms(10);
        }
        return -1;
}

int agent_test_teardown(void **state)
{
        if (agent_test.pid > 0) {
                kill(agent_test.pid, SIGKILL);
                waitpid(agent_test.pid, NULL, 0);
                agent_test.pid = -1;
        }
        /* Tests leave only plain files behind. */
        DIR *d = opendir(agent_test.dir);
        if (d) {
                struct dirent *e;
                while ((e = readdir(d)))
                        (void)unlinkat(dirfd(d), e->d_name, 0);
                closedir(d);
        }
        rmdir(agent_test.dir);
        return 0;
}

void agent_test_reply_release(struct agent_test_reply *r)
{
        free(r->buf);
        r->buf = NULL;
}

void agent_test_send(int fd, struct agent_frame_writer *w)
{
        assert_int_equal(agent_frame_writer_finish(w), 0);
        assert_int_equal(agent_frame_send(fd, w), 0);
        agent_frame_writer_release(w);
}

void agent_test_read(int fd, struct agent_test_reply *r)
{
        assert_int_equal(agent_frame_read(fd, &r->f, &r->buf), 0);
}

int32_t agent_test_get_i32(const struct agent_test_reply *r, uint16_t tag)
{
        int32_t v = -12345;
        assert_int_equal(agent_frame_get_i32(&r->f, tag, &v), 1);
        return v;
}

uint32_t agent_test_get_u32(const struct agent_test_reply *r, uint16_t tag)
{
        uint32_t v = 0;
        assert_int_equal(agent_frame_get_u32(&r->f, tag, &v), 1);
        return v;
}

uint64_t agent_test_get_u64(const struct agent_test_reply *r, uint16_t tag)
{
        uint64_t v = 0;
        assert_int_equal(agent_frame_get_u64(&r->f, tag, &v), 1);
        return v;
}

uint8_t agent_test_get_u8(const struct agent_test_reply *r, uint16_t tag)
{
        uint8_t v = 0xee;
        assert_int_equal(agent_frame_get_u8(&r->f, tag, &v), 1);
        return v;
}

uint32_t agent_test_get_bytes(const struct agent_test_reply *r, uint16_t tag, const uint8_t **data)
{
        uint32_t len = 0;
        assert_int_equal(agent_frame_find(&r->f, tag, data, &len), 1);
        return len;
}

void agent_test_assert_str(const struct agent_test_reply *r, uint16_t tag, const char *expected)
{
        const uint8_t *data;
        uint32_t len = agent_test_get_bytes(r, tag, &data);
        assert_int_equal(len, strlen(expected));
        assert_memory_equal(data, expected, len);
}

void agent_test_assert_error(const struct agent_test_reply *r, int error)
{
        assert_int_equal(r->f.type, AGENT_MSG_ERROR);
        assert_int_equal(agent_test_get_i32(r, AGENT_F_ERRNO), error);
}

void agent_test_wait_pid_gone(pid_t pid)
{
        for (int i = 0; i < 500; i++) {
                if (kill(pid, 0) < 0 && errno == ESRCH)
                        return;
                agent_test_sleep_ms(10);
        }
        fail_msg("pid %d still runs", (int)pid);
}

long agent_test_rss_kib(pid_t pid)
{
        char path[64], line[256];
        long kib = -1;

        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof line, f))
                if (!strncmp(line, "VmRSS:", 6))
                        kib = strtol(line + 6, NULL, 10);
        fclose(f);
        return kib;
}
