#include "bench_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"

extern char **environ;

/* Runs argv (PATH searched) to its end, its stdout into buf (NUL-terminated, cut at size - 1;
 * the rest is read and dropped), stderr to /dev/null. Returns its exit status, or -errno. */
static int run_capture(char *const argv[], char *buf, size_t size)
{
        int fds[2];
        if (size == 0 || pipe2(fds, O_CLOEXEC) < 0)
                return -EINVAL;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        pid_t pid;
        int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        if (r != 0) {
                close(fds[0]);
                return -r;
        }
        size_t len = 0;
        char sink[4096];
        for (;;) {
                bool room = len + 1 < size;
                ssize_t n = read(fds[0], room ? buf + len : sink, room ? size - 1 - len : sizeof(sink));
                if (n > 0 && room)
                        len += (size_t)n;
                if (n > 0 || (n < 0 && errno == EINTR))
                        continue;
                break;
        }
        close(fds[0]);
        buf[len] = '\0';
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The integer after `key` on the line that holds it (after `after`, when given), or -1. */
static int64_t field(const char *text, const char *after, const char *key)
{
        const char *p = after ? strstr(text, after) : text;
        if (!p || !(p = strstr(p, key)))
                return -1;
        return strtoll(p + strlen(key), NULL, 10);
}

int bench_pool_usage(const char *pool, struct bench_pool_usage *ret)
{
        struct bench_pool_usage u = { 0 };
        struct statvfs st;
        _cleanup_close_ int fd = open(pool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) < 0 || fstatvfs(fd, &st) < 0) {
                int r = -errno;
                fprintf(stderr, "space-bench: pool %s: %s\n", pool, strerror(-r));
                return r;
        }
        u.statfs_used = (int64_t)(st.f_blocks - st.f_bfree) * (int64_t)st.f_frsize;
        char out[8192];
        char *argv[] = { "btrfs", "filesystem", "usage", "-b", (char *)pool, NULL };
        int r = run_capture(argv, out, sizeof(out));
        if (r != 0) {
                fprintf(stderr, "space-bench: btrfs filesystem usage -b %s: %s\n", pool, r < 0 ? strerror(-r) : "failed");
                return r < 0 ? r : -EIO;
        }
        u.raw_used = field(out, "Overall:", "Used:");
        u.data_used = field(out, "\nData,", "Used:");
        u.metadata_used = field(out, "\nMetadata,", "Used:");
        const char *ratio = strstr(out, "Metadata ratio:");
        u.metadata_ratio = ratio ? strtod(ratio + strlen("Metadata ratio:"), NULL) : 0;
        if (u.raw_used < 0 || u.data_used < 0 || u.metadata_used < 0) {
                fprintf(stderr, "space-bench: cannot read btrfs filesystem usage -b %s\n", pool);
                return -EPROTO;
        }
        u.ok = true;
        *ret = u;
        return 0;
}

int bench_pool_subvolume_sync(const char *pool, int timeout_s)
{
        char out[256], t[32];
        snprintf(t, sizeof(t), "%ds", timeout_s);
        char *argv[] = { "timeout", t, "btrfs", "subvolume", "sync", (char *)pool, NULL };
        int r = run_capture(argv, out, sizeof(out));
        return r == 0 ? 0 : r < 0 ? r : r == 124 ? -ETIMEDOUT : -EIO;
}
