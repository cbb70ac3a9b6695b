/* space-agent: PID 1 of a sandbox. Serves the agent protocol (docs/agent-protocol.md) on an
 * inherited listening unix socket (--listen-fd N) or on one it binds (--listen PATH). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_file_path.h"
#include "space_agent/agent_listener.h"
#include "space_agent/agent_proc_view.h"
#include "space_agent/agent_server.h"

#ifndef SPACE_VERSION
#define SPACE_VERSION "0.1.0"
#endif

/* stderr is /dev/null inside a sandbox; this is for people running the agent by hand. */
static void log_error(const char *what, int error)
{
        dprintf(STDERR_FILENO, "space-agent: level=error msg=\"%s\" error=\"%s\"\n", what, strerror(error));
}

static void usage(int fd)
{
        dprintf(fd,
                "usage: space-agent --listen-fd N | --listen PATH [--root DIR] [--proc-view FD ...] | --version\n"
                "  --listen-fd N   serve on the inherited listening unix socket N\n"
                "  --proc-view FD  serve the /proc views on the FUSE descriptors FD..FD+3\n"
                "                  (meminfo, stat, loadavg, uptime; a closed one is skipped)\n"
                "  --memory-bytes N, --cpus N   the limits those views show\n"
                "  --listen PATH   bind and listen on the unix socket PATH\n"
                "  --root DIR      resolve file requests inside DIR (default /)\n"
                "  --version       print the version and exit\n");
}

/* Commands get our fds 0-2 replaced by pipes; keep them occupied so a pipe never lands there. */
static void stdio_ensure_open(void)
{
        for (int fd = 0; fd <= 2; fd++) {
                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                int nfd = open("/dev/null", O_RDWR);
                if (nfd >= 0 && nfd != fd) {
                        (void)dup2(nfd, fd);
                        close(nfd);
                }
        }
}

/* Only SIGKILL from outside may end PID 1; children get default dispositions back. */
static int signals_setup(void)
{
        static const int ignored[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU };
        struct sigaction ign = { .sa_handler = SIG_IGN }, dfl = { .sa_handler = SIG_DFL };

        sigemptyset(&ign.sa_mask);
        sigemptyset(&dfl.sa_mask);
        for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
                if (sigaction(ignored[i], &ign, NULL) < 0)
                        return -errno;
        /* An inherited SIG_IGN for SIGCHLD would auto-reap children and lose exit statuses. */
        if (sigaction(SIGCHLD, &dfl, NULL) < 0)
                return -errno;
        return 0;
}

static int listen_fd_check(int fd)
{
        int accepting = 0;
        socklen_t len = sizeof accepting;

        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0)
                return -errno;
        return accepting ? 0 : -EINVAL;
}

static int parse_fd(const char *s)
{
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);

        if (errno || end == s || *end || v < 0 || v > 1 << 20)
                return -EINVAL;
        return (int)v;
}

static int parse_u64(const char *s, uint64_t *ret)
{
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end || *s == '-')
                return -EINVAL;
        *ret = v;
        return 0;
}

int main(int argc, char **argv)
{
        const char *listen_path = NULL, *root = NULL;
        int listen_fd = -1, proc_view_fd = -1, r;
        uint64_t memory_bytes = 0, cpus = 1;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (!strcmp(a, "--version")) {
                        dprintf(STDOUT_FILENO, "space-agent %s\n", SPACE_VERSION);
                        return 0;
                } else if (!strcmp(a, "--help")) {
                        usage(STDOUT_FILENO);
                        return 0;
                } else if (!strcmp(a, "--listen-fd") && i + 1 < argc) {
                        listen_fd = parse_fd(argv[++i]);
                        if (listen_fd < 0) {
                                log_error("bad --listen-fd", EINVAL);
                                return 2;
                        }
                } else if (!strcmp(a, "--listen") && i + 1 < argc) {
                        listen_path = argv[++i];
                } else if (!strcmp(a, "--proc-view") && i + 1 < argc) {
                        proc_view_fd = parse_fd(argv[++i]);
                        if (proc_view_fd < 3) {
                                log_error("bad --proc-view", EINVAL);
                                return 2;
                        }
                } else if (!strcmp(a, "--memory-bytes") && i + 1 < argc) {
                        if (parse_u64(argv[++i], &memory_bytes) < 0) {
                                log_error("bad --memory-bytes", EINVAL);
                                return 2;
                        }
                } else if (!strcmp(a, "--cpus") && i + 1 < argc) {
                        if (parse_u64(argv[++i], &cpus) < 0 || cpus < 1 || cpus > 4096) {
                                log_error("bad --cpus", EINVAL);
                                return 2;
                        }
                } else if (!strcmp(a, "--root") && i + 1 < argc) {
                        root = argv[++i];
                } else {
                        usage(STDERR_FILENO);
                        return 2;
                }
        }
        if ((listen_fd < 0) == !listen_path) {
                usage(STDERR_FILENO);
                return 2;
        }

        /* Taken before anything else opens a descriptor: a closed one stays -1. */
        int view_fds[_AGENT_PROC_MAX];
        for (int i = 0; i < _AGENT_PROC_MAX; i++)
                view_fds[i] = proc_view_fd >= 3 && fcntl(proc_view_fd + i, F_GETFD) >= 0 ? proc_view_fd + i : -1;

        stdio_ensure_open();
        /* Without its views a sandbox still works: /proc then shows the host's figures. */
        if (proc_view_fd >= 3 && (r = agent_proc_view_start(view_fds, memory_bytes, (unsigned)cpus)) < 0)
                log_error("cannot serve the /proc views", -r);
        if (root && (r = agent_file_root_set(root)) < 0) {
                log_error("cannot open --root", -r);
                return 1;
        }
        r = signals_setup();
        if (r < 0) {
                log_error("cannot set up signals", -r);
                return 1;
        }
        /* Outside a pid namespace, still collect our commands' orphans. */
        if (getpid() != 1)
                (void)prctl(PR_SET_CHILD_SUBREAPER, 1);

        if (listen_path) {
                listen_fd = agent_listener_open(listen_path);
                if (listen_fd < 0) {
                        log_error("cannot listen", -listen_fd);
                        return 1;
                }
        } else {
                r = listen_fd_check(listen_fd);
                if (r < 0) {
                        log_error("--listen-fd is not a listening socket", -r);
                        return 1;
                }
        }

        struct agent_server server;
        r = agent_server_init(&server, listen_fd, listen_path);
        if (r < 0) {
                log_error("cannot start the server", -r);
                return 1;
        }
        r = agent_server_run(&server);
        log_error("event loop failed", -r);
        return 1;
}
