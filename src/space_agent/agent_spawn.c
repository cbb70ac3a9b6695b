/* agent_spawn: fork + child-side setup + execvpe for one command. */
#include "space_agent/agent_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"

#define CHILD_REPORT_FD 3

static _Noreturn void child_fail(int report_fd, enum agent_spawn_stage stage, int error) {
        struct agent_spawn_report report = { .stage = stage, .error = error };

        /* A pipe write this small is atomic; nothing to do if it fails. */
        if (write(report_fd, &report, sizeof report) < 0) {
        }
        _exit(127);
}

static void child_reset_signals(void) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t none;

        sigemptyset(&sa.sa_mask);
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &sa, NULL); /* reserved libc signals fail: fine */

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
}

static void child_close_from(int first) {
#ifdef SYS_close_range
        if (syscall(SYS_close_range, (unsigned) first, ~0U, 0) == 0)
                return;
#endif
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536)
                max = 65536;
        for (int fd = first; fd < max; fd++)
                (void) close(fd);
}

/* Runs in the forked child; never returns. The agent guarantees fds 0-2 are open, so the
 * pipe fds are all >= 3 and the dup2s below cannot clobber one another. */
static _Noreturn void child_run(const struct agent_exec_request *req, int in_fd, int out_fd, int err_fd,
                                int report_fd) {
        if (setsid() < 0)
                child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
        child_reset_signals();
        /* spaced shields the agent from the OOM killer; commands must not inherit that, or a
         * memory hog could never be killed. Raising the score needs no privilege. */
        int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (oom >= 0) {
                (void) !write(oom, "0\n", 2);
                close(oom);
        }

        if (in_fd < 0) {
                in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (in_fd < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
        }
        if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
                child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);

        if (report_fd != CHILD_REPORT_FD) {
                if (dup3(report_fd, CHILD_REPORT_FD, O_CLOEXEC) < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
                report_fd = CHILD_REPORT_FD;
        }
        child_close_from(CHILD_REPORT_FD + 1);

        if (chdir(req->cwd) < 0)
                child_fail(report_fd, AGENT_SPAWN_STAGE_CHDIR, errno);

        /* execvpe searches the PATH of the current environment, so make that the command's. */
        environ = req->envp;
        execvpe(req->argv[0], req->argv, req->envp);
        child_fail(report_fd, AGENT_SPAWN_STAGE_EXEC, errno);
}

static int pipe_make(int fds[2]) {
        return pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
}

static int fd_set_nonblock(int fd) {
        int flags = fcntl(fd, F_GETFL);

        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int agent_spawn_start(const struct agent_exec_request *req, struct agent_spawn_fds *ret_fds, pid_t *ret_pid) {
        _cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1, err_r = -1, err_w = -1;
        _cleanup_close_ int rep_r = -1, rep_w = -1;
        int p[2], r;

        if ((r = pipe_make(p)) < 0)
                return r;
        out_r = p[0], out_w = p[1];
        if ((r = pipe_make(p)) < 0)
                return r;
        err_r = p[0], err_w = p[1];
        if ((r = pipe_make(p)) < 0)
                return r;
        rep_r = p[0], rep_w = p[1];
        if (req->has_stdin) {
                if ((r = pipe_make(p)) < 0)
                        return r;
                in_r = p[0], in_w = p[1];
        }

        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child_run(req, in_r, out_w, err_w, rep_w);

        /* Parent: the write ends now belong to the child. */
        int fds[] = { in_w, out_r, err_r, rep_r };
        for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
                if (fds[i] >= 0 && (r = fd_set_nonblock(fds[i])) < 0) {
                        /* Cannot watch it: do not leave a command we cannot collect. */
                        kill(pid, SIGKILL);
                        return r;
                }

        *ret_fds = (struct agent_spawn_fds) {
                .stdin_fd = TAKE_FD(in_w),
                .stdout_fd = TAKE_FD(out_r),
                .stderr_fd = TAKE_FD(err_r),
                .report_fd = TAKE_FD(rep_r),
        };
        *ret_pid = pid;
        return 0;
}

void agent_spawn_report_format(const struct agent_spawn_report *report, const struct agent_exec_request *req,
                               char *buf, size_t size) {
        const char *what = "setup", *subject = req->argv[0];

        if (report->stage == AGENT_SPAWN_STAGE_CHDIR)
                what = "chdir", subject = req->cwd;
        else if (report->stage == AGENT_SPAWN_STAGE_EXEC)
                what = "exec";

        snprintf(buf, size, "%s \"%s\": %s", what, subject, strerror(report->error));
}
