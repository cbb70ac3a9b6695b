/* agent_spawn: fork + child-side setup + execvpe for one command. */
#include "space_agent/agent_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <termios.h>
#include <unistd.h>

#include <stdbool.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_exec_watch.h"

#define CHILD_REPORT_FD 3
#define CHILD_WATCH_FD 4

static _Noreturn void child_fail(int report_fd, enum agent_spawn_stage stage, int error)
{
        struct agent_spawn_report report = { .stage = stage, .error = error };

        /* A pipe write this small is atomic; nothing to do if it fails. */
        if (write(report_fd, &report, sizeof report) < 0) {
        }
        _exit(127);
}

static void child_reset_signals(void)
{
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t none;

        sigemptyset(&sa.sa_mask);
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)sigaction(sig, &sa, NULL); /* reserved libc signals fail: fine */

        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
}

static void child_close_from(int first)
{
#ifdef SYS_close_range
        if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
                return;
#endif
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536)
                max = 65536;
        for (int fd = first; fd < max; fd++)
                (void)close(fd);
}

/* Becomes user: groups first, then gid, then uid (after which no capability is left). */
static int child_become(const struct agent_spawn_user *user)
{
        if (syscall(SYS_setgroups, (size_t)user->n_groups, user->groups) < 0)
                return -1;
        if (syscall(SYS_setresgid, user->gid, user->gid, user->gid) < 0)
                return -1;
        if (syscall(SYS_setresuid, user->uid, user->uid, user->uid) < 0)
                return -1;
        return 0;
}

static void child_user_env(const struct agent_spawn_user *user)
{
        int replace = user->env_default;

        (void)setenv("HOME", user->home, replace);
        (void)setenv("USER", user->name, replace);
        (void)setenv("LOGNAME", user->name, replace);
}

/* The terminal side of a pseudo-terminal becomes the controlling terminal and stdio. */
static int child_attach_pty(const char *slave_path, const struct agent_spawn_user *user)
{
        int fd = open(slave_path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -1;
        if (ioctl(fd, TIOCSCTTY, 0) < 0)
                return -1;
        if (user && fchown(fd, user->uid, user->gid) < 0) {
                /* Not fatal: the terminal stays root's, which only limits what the user may do to it. */
        }
        if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
                return -1;
        return 0;
}

struct child_fds {
        int in, out, err, report;
        int watch;              /* WATCH_EXEC: the socket the listener goes through, else -1 */
        const char *slave_path; /* set: run on this pseudo-terminal instead */
};

/* Runs in the forked child; never returns. The agent guarantees fds 0-2 are open, so the
 * pipe fds are all >= 3 and the dup2s below cannot clobber one another. */
static _Noreturn void child_run(const struct agent_exec_request *req, const struct agent_spawn_user *user, struct child_fds fds)
{
        int report_fd = fds.report;

        if (setsid() < 0)
                child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
        child_reset_signals();
        /* Commands are the OOM killer's first choice, the agent (PID 1: its death ends the
         * sandbox) its last. spaced lowers the agent's score to -1000 where the host allows
         * (CAP_SYS_RESOURCE); where it does not, the agent stays at 0, so commands take the
         * highest score instead. Raising a score needs no privilege, and a command cannot
         * lower it again. */
        int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (oom >= 0) {
                (void)!write(oom, "1000\n", 5);
                close(oom);
        }

        if (fds.slave_path) {
                if (child_attach_pty(fds.slave_path, user) < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
        } else {
                int in_fd = fds.in;
                if (in_fd < 0) {
                        in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                        if (in_fd < 0)
                                child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
                }
                if (dup2(in_fd, 0) < 0 || dup2(fds.out, 1) < 0 || dup2(fds.err, 2) < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
        }

        if (report_fd != CHILD_REPORT_FD) {
                if (dup3(report_fd, CHILD_REPORT_FD, O_CLOEXEC) < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
                report_fd = CHILD_REPORT_FD;
        }
        if (fds.watch >= 0) {
                if (dup3(fds.watch, CHILD_WATCH_FD, O_CLOEXEC) < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_SETUP, errno);
                fds.watch = CHILD_WATCH_FD;
        }
        child_close_from(fds.watch >= 0 ? CHILD_WATCH_FD + 1 : CHILD_REPORT_FD + 1);

        if (user && child_become(user) < 0)
                child_fail(report_fd, AGENT_SPAWN_STAGE_USER, errno);

        const char *cwd = req->cwd_set || !user ? req->cwd : user->home;
        if (chdir(cwd) < 0) {
                if (req->cwd_set || chdir("/") < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_CHDIR, errno);
        }

        /* execvpe searches the PATH of the current environment, so make that the command's. */
        environ = req->envp;
        if (user)
                child_user_env(user);
        if (fds.watch >= 0) {
                /* A user change made the process undumpable: the agent reads it as that user. */
                if (user)
                        (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
                /* Last: from here every exec, this one's PATH search included, is checked. */
                int r = agent_exec_watch_install(fds.watch);
                if (r < 0)
                        child_fail(report_fd, AGENT_SPAWN_STAGE_WATCH, -r);
                close(fds.watch);
        }
        execvpe(req->argv[0], req->argv, environ);
        child_fail(report_fd, AGENT_SPAWN_STAGE_EXEC, errno);
}

static int pipe_make(int fds[2])
{
        return pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
}

static int fd_set_nonblock(int fd)
{
        int flags = fcntl(fd, F_GETFL);

        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

/* A pseudo-terminal master, unlocked and sized; its terminal's path in slave_path. */
static int pty_open(const struct agent_exec_request *req, char *slave_path, size_t size)
{
        _cleanup_close_ int fd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        int unlock = 0;
        unsigned n = 0;

        if (fd < 0)
                return -errno;
        if (ioctl(fd, TIOCSPTLCK, &unlock) < 0 || ioctl(fd, TIOCGPTN, &n) < 0)
                return -errno;
        snprintf(slave_path, size, "/dev/pts/%u", n);
        int r = agent_spawn_pty_resize(fd, req->tty_cols, req->tty_rows);
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}

int agent_spawn_pty_resize(int pty_fd, uint32_t cols, uint32_t rows)
{
        struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };

        return ioctl(pty_fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

int agent_spawn_start(const struct agent_exec_request *req, const struct agent_spawn_user *user, struct agent_spawn_fds *ret_fds,
                      pid_t *ret_pid)
{
        _cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1, err_r = -1, err_w = -1;
        _cleanup_close_ int rep_r = -1, rep_w = -1, pty = -1, slave = -1, watch_parent = -1, watch_child = -1;
        char slave_path[64];
        bool on_pty = req->tty_cols && req->tty_rows;
        int p[2], r;

        if ((r = pipe_make(p)) < 0)
                return r;
        rep_r = p[0], rep_w = p[1];
        if (req->watch_exec) {
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
                        return -errno;
                watch_parent = p[0], watch_child = p[1];
        }
        if (on_pty) {
                pty = pty_open(req, slave_path, sizeof slave_path);
                if (pty < 0)
                        return pty;
                slave = open(slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (slave < 0)
                        return -errno;
        } else {
                if ((r = pipe_make(p)) < 0)
                        return r;
                out_r = p[0], out_w = p[1];
                if ((r = pipe_make(p)) < 0)
                        return r;
                err_r = p[0], err_w = p[1];
                if (req->has_stdin || req->stdin_open) {
                        if ((r = pipe_make(p)) < 0)
                                return r;
                        in_r = p[0], in_w = p[1];
                }
                /* Bigger reads per wake-up when a command writes a lot. */
                (void)fcntl(out_r, F_SETPIPE_SZ, 1 << 20);
        }

        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child_run(req, user,
                          (struct child_fds){ .in = in_r,
                                              .out = out_w,
                                              .err = err_w,
                                              .report = rep_w,
                                              .watch = watch_child,
                                              .slave_path = on_pty ? slave_path : NULL });

        /* Parent: the write ends now belong to the child. */
        int listener = -1;
        if (watch_parent >= 0) {
                close(TAKE_FD(watch_child));
                /* The child sends it before its exec, or exits (its report says why). Bounded: a
                 * child stopped by a signal from inside the sandbox must not stop the agent. */
                struct timeval bound = { .tv_sec = 5 };
                (void)setsockopt(watch_parent, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
                listener = agent_exec_watch_receive(watch_parent);
                if (listener < 0 && listener != -ECONNRESET) {
                        kill(pid, SIGKILL);
                        return listener;
                }
        }
        int fds[] = { in_w, out_r, err_r, rep_r, pty };
        for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
                if (fds[i] >= 0 && (r = fd_set_nonblock(fds[i])) < 0) {
                        /* Cannot watch it: do not leave a command we cannot collect. */
                        kill(pid, SIGKILL);
                        if (listener >= 0)
                                close(listener);
                        return r;
                }

        *ret_fds = (struct agent_spawn_fds){
                .stdin_fd = TAKE_FD(in_w),
                .stdout_fd = TAKE_FD(out_r),
                .stderr_fd = TAKE_FD(err_r),
                .report_fd = TAKE_FD(rep_r),
                .pty_fd = TAKE_FD(pty),
                .pty_slave_fd = TAKE_FD(slave),
                .exec_listener_fd = listener,
        };
        *ret_pid = pid;
        return 0;
}

static int user_groups(const char *name, gid_t gid, struct agent_spawn_user *u)
{
        int n = AGENT_SPAWN_MAX_GROUPS;

        if (getgrouplist(name, gid, u->groups, &n) < 0) {
                /* More than fit: keep the first ones (the primary group is among them). */
                n = AGENT_SPAWN_MAX_GROUPS;
        }
        u->n_groups = n;
        return 0;
}

int agent_spawn_user_resolve(const char *user, struct agent_spawn_user *ret)
{
        struct agent_spawn_user u = { 0 };
        struct passwd *pw;
        char *end;

        errno = 0;
        unsigned long id = strtoul(user, &end, 10);
        bool numeric = *user && *end == '\0';
        pw = numeric ? getpwuid((uid_t)id) : getpwnam(user);
        if (!pw) {
                if (!numeric)
                        return -ENOENT;
                /* A uid without a passwd entry: run as it, with its own gid, home "/". */
                u.uid = (uid_t)id;
                u.gid = (gid_t)id;
                u.groups[0] = u.gid;
                u.n_groups = 1;
                snprintf(u.name, sizeof u.name, "%lu", id);
                snprintf(u.home, sizeof u.home, "/");
                *ret = u;
                return 0;
        }
        if (strlen(pw->pw_name) >= sizeof u.name || strlen(pw->pw_dir) >= sizeof u.home)
                return -ENAMETOOLONG;
        u.uid = pw->pw_uid;
        u.gid = pw->pw_gid;
        snprintf(u.name, sizeof u.name, "%s", pw->pw_name);
        snprintf(u.home, sizeof u.home, "%s", pw->pw_dir[0] ? pw->pw_dir : "/");
        user_groups(u.name, u.gid, &u);
        *ret = u;
        return 0;
}

void agent_spawn_report_format(const struct agent_spawn_report *report, const struct agent_exec_request *req, char *buf,
                               size_t size)
{
        const char *what = "setup", *subject = req->argv[0];

        if (report->stage == AGENT_SPAWN_STAGE_CHDIR)
                what = "chdir", subject = req->cwd;
        else if (report->stage == AGENT_SPAWN_STAGE_USER)
                what = "become user", subject = req->user ? req->user : "?";
        else if (report->stage == AGENT_SPAWN_STAGE_EXEC)
                what = "exec";
        else if (report->stage == AGENT_SPAWN_STAGE_WATCH)
                what = "watch the execs of";

        snprintf(buf, size, "%s \"%s\": %s", what, subject, strerror(report->error));
}
