#include "templates/build_network.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/host_command.h"
#include "templates/build_route_policy.h"
#include "templates/rootfs_path.h"

static const char *const names[2] = { "hosts", "resolv.conf" };

const char *build_network_default(void)
{
        static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/local/bin" };
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/slirp4netns", dirs[i]);
                if (access(path, X_OK) == 0)
                        return "slirp4netns";
        }
        return "none";
}

static int read_all(int fd, char **ret, size_t *ret_len)
{
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        ssize_t n;
        while (buf && (n = read(fd, buf + len, cap - len)) > 0) {
                len += (size_t)n;
                if (len == cap) {
                        if (cap >= (1 << 20))
                                break;
                        char *grown = realloc(buf, cap * 2);
                        if (!grown)
                                break;
                        buf = grown;
                        cap *= 2;
                }
        }
        if (!buf)
                return -ENOMEM;
        *ret = buf;
        *ret_len = len;
        return 0;
}

static int save(int etc, const char *name, struct build_network_file *f)
{
        struct stat st;
        memset(f, 0, sizeof(*f));
        f->saved = true;
        if (fstatat(etc, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        f->mode = st.st_mode & 07777;
        f->uid = st.st_uid;
        f->gid = st.st_gid;
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(etc, name, target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                f->kind = 'l';
                f->content = strndup(target, (size_t)n);
                f->len = (size_t)n;
                return f->content ? 0 : -ENOMEM;
        }
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        _cleanup_close_ int fd = openat(etc, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f->kind = 'f';
        return read_all(fd, &f->content, &f->len);
}

static int put(int etc, const char *name, const char *content, size_t len, mode_t mode)
{
        unlinkat(etc, name, 0);
        _cleanup_close_ int fd = openat(etc, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        return write(fd, content, len) == (ssize_t)len ? 0 : -EIO;
}

int build_network_prepare(struct build_network *n, const char *mode, int rootfd, struct space_error *err)
{
        memset(n, 0, sizeof(*n));
        n->helper_fd = -1;
        if (strcmp(mode, "slirp4netns") != 0)
                return 0;
        n->enabled = true;
        _cleanup_close_ int etc = rootfs_path_mkdirs(rootfd, "etc", 0, 0, false);
        if (etc < 0)
                return space_error_errno(err, etc, "open /etc of the layer");
        char *hosts = NULL;
        size_t hosts_len = 0;
        _cleanup_close_ int hfd = open("/etc/hosts", O_RDONLY | O_CLOEXEC);
        if (hfd < 0 || read_all(hfd, &hosts, &hosts_len) < 0) {
                free(hosts);
                hosts = strdup("127.0.0.1 localhost\n::1 localhost\n");
                hosts_len = hosts ? strlen(hosts) : 0;
        }
        static const char resolv[] = "nameserver 10.0.2.3\n";
        int r = 0;
        for (int i = 0; i < 2 && r == 0; i++)
                if ((r = save(etc, names[i], &n->files[i])) == 0)
                        r = i == 0 ? put(etc, names[i], hosts, hosts_len, 0644)
                                   : put(etc, names[i], resolv, sizeof(resolv) - 1, 0644);
        free(hosts);
        return r < 0 ? space_error_errno(err, r, "set up name resolution in the layer") : 0;
}

/* slirp4netns configures tap0 and a default route: wait until the route shows. */
static bool has_default_route(pid_t pid)
{
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/net/route", (int)pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                char iface[32], dest[16];
                if (sscanf(line, "%31s %15s", iface, dest) == 2 && strcmp(dest, "00000000") == 0)
                        return true;
        }
        return false;
}

int build_network_attach(struct build_network *n, pid_t sandbox_pid, const char *log_path, struct space_error *err)
{
        if (!n->enabled)
                return 0;
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", (int)sandbox_pid);
        /* --enable-sandbox and --enable-seccomp confine slirp4netns itself (its own mount
         * namespace, a syscall filter): it parses the sandbox's packets. Its stdin is a pipe
         * whose other end only spaced holds (helper_fd), and --exit-fd=0 ends it when that
         * closes: also when spaced is killed mid-build, where it would otherwise run on. */
        char *argv[] = { "slirp4netns",
                         "--configure",
                         "--mtu=65520",
                         "--disable-host-loopback",
                         "--enable-sandbox",
                         "--enable-seccomp",
                         "--exit-fd=0",
                         pid,
                         "tap0",
                         NULL };
        int r = host_command_spawn_piped(argv, false, log_path, &n->helper_fd, &n->helper_pid);
        if (r < 0)
                return space_error_errno(err, r, "start slirp4netns (install it or run spaced with --build-network none)");
        for (int i = 0; i < 500; i++) {
                if (has_default_route(sandbox_pid)) {
                        /* Fail closed: no step runs with a network that reaches private addresses. */
                        int q = build_route_policy_apply(sandbox_pid, log_path);
                        if (q != 0)
                                return space_error_set(err, SPACE_E_INTERNAL,
                                                       "could not refuse private destinations in the build network (%d)", q);
                        return 0;
                }
                nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        return space_error_set(err, SPACE_E_INTERNAL, "slirp4netns did not configure the build sandbox's network in 5 s");
}

void build_network_finish(struct build_network *n, int rootfd)
{
        if (n->helper_pid > 0) {
                host_command_wait(n->helper_pid, true);
                n->helper_pid = 0;
        }
        if (n->helper_fd >= 0) {
                close(n->helper_fd);
                n->helper_fd = -1;
        }
        _cleanup_close_ int etc = n->enabled ? rootfs_path_open(rootfd, "etc", O_DIRECTORY | O_RDONLY, 0) : -1;
        for (int i = 0; i < 2; i++) {
                struct build_network_file *f = &n->files[i];
                if (!f->saved)
                        continue;
                if (etc >= 0) {
                        unlinkat(etc, names[i], 0);
                        if (f->kind == 'l')
                                symlinkat(f->content, etc, names[i]);
                        else if (f->kind == 'f' && put(etc, names[i], f->content, f->len, f->mode) == 0)
                                fchmodat(etc, names[i], f->mode, 0);
                        if (f->kind)
                                fchownat(etc, names[i], f->uid, f->gid, AT_SYMLINK_NOFOLLOW);
                }
                free(f->content);
                memset(f, 0, sizeof(*f));
        }
        n->enabled = false;
}
