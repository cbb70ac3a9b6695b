#include "spaced/host_command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/wallclock.h"

extern char **environ;

static void keep_tail(char *out, size_t out_size, size_t *len, const char *buf, size_t n)
{
        if (out_size == 0)
                return;
        size_t cap = out_size - 1;
        if (n >= cap) {
                memcpy(out, buf + n - cap, cap);
                *len = cap;
        } else {
                if (*len + n > cap) {
                        size_t drop = *len + n - cap;
                        memmove(out, out + drop, *len - drop);
                        *len -= drop;
                }
                memcpy(out + *len, buf, n);
                *len += n;
        }
        out[*len] = '\0';
}

/* posix_spawnp with stdin from in_fd (or /dev/null when -1), stdout and stderr to out_fd and
 * err_fd, an empty signal mask and its own process group (so a timeout can kill the lot).
 * Returns 0 or a positive errno, as posix_spawn does. */
static int spawn_with(char *const argv[], int in_fd, int out_fd, int err_fd, pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        if (in_fd < 0)
                posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        else
                posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
        posix_spawnattr_init(&attr);
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attr, 0);
        int r = posix_spawnp(ret_pid, argv[0], &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return r;
}

static int run(char *const argv[], const char *log_path, char *out, size_t out_size, int timeout_s, bool (*stop)(void *),
               void *cls)
{
        int pipefd[2] = { -1, -1 };
        _cleanup_close_ int outfd = -1;
        int r;

        if (out) {
                if (pipe2(pipefd, O_CLOEXEC) < 0)
                        return -errno;
        } else {
                outfd = log_path ? open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640)
                                 : open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (outfd < 0)
                        return -errno;
        }
        int target = out ? pipefd[1] : outfd;
        pid_t pid;
        r = spawn_with(argv, -1, target, target, &pid);
        if (pipefd[1] >= 0)
                close(pipefd[1]);
        if (r != 0) {
                if (pipefd[0] >= 0)
                        close(pipefd[0]);
                return -r;
        }

        int64_t deadline = timeout_s > 0 ? monotonic_now_us() + (int64_t)timeout_s * 1000000 : 0;
        bool killed = false;
        size_t len = 0;
        if (out && out_size)
                out[0] = '\0';
        if (pipefd[0] >= 0) {
                char buf[4096];
                for (;;) {
                        struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
                        int wait_ms = 1000;
                        if (poll(&p, 1, wait_ms) > 0) {
                                ssize_t n = read(pipefd[0], buf, sizeof(buf));
                                if (n > 0) {
                                        keep_tail(out, out_size, &len, buf, (size_t)n);
                                        continue;
                                }
                                if (n == 0 || errno != EINTR)
                                        break;
                        }
                        if (deadline && monotonic_now_us() > deadline && !killed) {
                                kill(-pid, SIGKILL);
                                killed = true;
                        }
                }
                close(pipefd[0]);
        }
        int status;
        for (;;) {
                pid_t w = waitpid(pid, &status, deadline || stop ? WNOHANG : 0);
                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR)
                        return -errno;
                if (w == 0) {
                        if (!killed && ((deadline && monotonic_now_us() > deadline) || (stop && stop(cls)))) {
                                kill(-pid, SIGKILL);
                                killed = true;
                        }
                        struct timespec ts = { 0, 20 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                }
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

int host_command_run(char *const argv[], const char *log_path, char *out, size_t out_size, int timeout_s)
{
        return run(argv, log_path, out, out_size, timeout_s, NULL, NULL);
}

int host_command_run_until(char *const argv[], const char *log_path, int timeout_s, bool (*stop)(void *), void *cls)
{
        return run(argv, log_path, NULL, 0, timeout_s, stop, cls);
}

int host_command_spawn_piped(char *const argv[], bool want_stdout, const char *err_path, int *ret_fd, pid_t *ret_pid)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_close_ int errfd = err_path ? open(err_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640)
                                             : open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (errfd < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        pid_t pid;
        int r = want_stdout ? spawn_with(argv, -1, p[1], errfd, &pid) : spawn_with(argv, p[0], errfd, errfd, &pid);
        close(want_stdout ? p[1] : p[0]);
        int mine = want_stdout ? p[0] : p[1];
        if (r != 0) {
                close(mine);
                return -r;
        }
        *ret_fd = mine;
        *ret_pid = pid;
        return 0;
}

int host_command_wait(pid_t pid, bool kill_first)
{
        if (kill_first)
                kill(-pid, SIGKILL);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
