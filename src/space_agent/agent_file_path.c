/* agent_file_path: path checks and confined resolution with openat2() (agent_file_walk.c
 * where the kernel has none). */
#include "space_agent/agent_file_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_file_walk.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* struct open_how and the RESOLVE_ flags from linux/openat2.h (musl has no header). */
struct agent_open_how {
        uint64_t flags;
        uint64_t mode;
        uint64_t resolve;
};

#define AGENT_RESOLVE_NO_MAGICLINKS 0x02
#define AGENT_RESOLVE_IN_ROOT 0x10

static int root_fd = -1;

int agent_file_root_set(const char *dir)
{
        int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (root_fd >= 0)
                close(root_fd);
        root_fd = fd;
        return 0;
}

static int root_get(void)
{
        if (root_fd < 0) {
                int r = agent_file_root_set("/");
                if (r < 0)
                        return r;
        }
        return root_fd;
}

int agent_file_path_normalize(const uint8_t *data, size_t len, char *ret, size_t size)
{
        size_t out = 0;

        if (len == 0 || data[0] != '/' || memchr(data, 0, len))
                return -EINVAL;
        if (len >= PATH_MAX || len >= size)
                return -ENAMETOOLONG;
        for (size_t i = 0; i < len;) {
                while (i < len && data[i] == '/')
                        i++;
                size_t start = i;
                while (i < len && data[i] != '/')
                        i++;
                size_t n = i - start;
                if (n == 0 || (n == 1 && data[start] == '.'))
                        continue;
                if (n == 2 && data[start] == '.' && data[start + 1] == '.') {
                        /* Drop the last component (and its '/'); at the root this does nothing. */
                        if (out > 0) {
                                do
                                        out--;
                                while (out > 0 && ret[out] != '/');
                        }
                        continue;
                }
                ret[out++] = '/';
                memcpy(ret + out, data + start, n);
                out += n;
        }
        if (out == 0)
                ret[out++] = '/';
        ret[out] = 0;
        return 0;
}

int agent_file_open(const char *path, int flags, mode_t mode, bool follow)
{
        struct agent_open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW)),
                .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                .resolve = AGENT_RESOLVE_IN_ROOT | AGENT_RESOLVE_NO_MAGICLINKS,
        };
        int root = root_get();
        const char *rel = path[1] ? path + 1 : ".";

        if (root < 0)
                return root;
        static bool no_openat2;
        long fd = no_openat2 ? -1 : syscall(SYS_openat2, root, rel, &how, sizeof how);
        if (fd < 0 && !no_openat2 && errno == ENOSYS)
                no_openat2 = true; /* gVisor: the same confinement, one component at a time */
        if (no_openat2)
                return agent_file_walk_open(root, rel, flags, mode, follow);
        return fd < 0 ? -errno : (int)fd;
}

int agent_file_open_parent(const char *path, const char **ret_name)
{
        char parent[PATH_MAX];
        const char *slash = strrchr(path, '/');

        if (!slash || !slash[1])
                return -EINVAL; /* "/" has no parent */
        size_t n = (size_t)(slash - path);
        if (n == 0)
                n = 1; /* parent of "/x" is "/" */
        memcpy(parent, path, n);
        parent[n] = 0;
        int fd = agent_file_open(parent, O_PATH | O_DIRECTORY, 0, true);
        if (fd < 0)
                return fd;
        *ret_name = slash + 1;
        return fd;
}

int agent_file_mkdir_parents(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
        char prefix[PATH_MAX];
        size_t len = strlen(path);

        for (size_t i = 1; i <= len; i++) {
                if (i < len && path[i] != '/')
                        continue;
                memcpy(prefix, path, i);
                prefix[i] = 0;
                const char *name;
                _cleanup_close_ int dir = agent_file_open_parent(prefix, &name);
                if (dir < 0)
                        return dir;
                if (mkdirat(dir, name, mode) < 0) {
                        if (errno != EEXIST)
                                return -errno;
                } else if ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
                        int r = -errno;
                        (void)unlinkat(dir, name, AT_REMOVEDIR);
                        return r;
                }
                /* It exists now: it must be a directory (or a symlink to one inside the root). */
                _cleanup_close_ int check = agent_file_open(prefix, O_PATH | O_DIRECTORY, 0, true);
                if (check < 0)
                        return check;
        }
        return 0;
}
