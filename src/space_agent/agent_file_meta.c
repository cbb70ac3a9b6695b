/* agent_file_meta: user metadata as "user.e2b.*" extended attributes (see the header). */
#include "space_agent/agent_file_meta.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <sys/xattr.h>

#define META_PREFIX "user.e2b."
#define META_NAMES_MAX 65536 /* the kernel's XATTR_LIST_MAX */
#define META_VALUE_MAX 4096  /* what one upload may set in all (docs/e2b.md) */
#define META_NAME_MAX 255    /* XATTR_NAME_MAX */

void agent_file_meta_put(struct agent_frame_writer *w, int dir, const char *name_in_dir)
{
        static char names[META_NAMES_MAX];
        static uint8_t out[2 * META_VALUE_MAX + 256];
        const size_t plen = strlen(META_PREFIX);
        char path[PATH_MAX + 32];
        size_t used = 0;

        /* Through the directory's descriptor: the agent's root may not be "/" (--root). */
        if (snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dir, name_in_dir) >= (int)sizeof path)
                return;
        ssize_t n = llistxattr(path, names, sizeof names);
        if (n <= 0)
                return;
        for (ssize_t at = 0; at < n; at += (ssize_t)strlen(names + at) + 1) {
                const char *name = names + at;
                size_t klen = strlen(name);
                if (klen <= plen || strncmp(name, META_PREFIX, plen) != 0)
                        continue;
                klen -= plen;
                if (used + klen + 2 > sizeof out)
                        break;
                memcpy(out + used, name + plen, klen + 1);
                ssize_t v = lgetxattr(path, name, out + used + klen + 1, sizeof out - used - klen - 2);
                if (v < 0 || memchr(out + used + klen + 1, 0, (size_t)v))
                        continue; /* unreadable, too large, or not text: left out */
                out[used + klen + 1 + (size_t)v] = 0;
                used += klen + 1 + (size_t)v + 1;
        }
        if (used)
                agent_frame_writer_put(w, AGENT_F_FILE_META, out, used);
}

int agent_file_meta_check(const uint8_t *pairs, uint32_t len)
{
        uint32_t strings = 0;
        if (len == 0 || pairs[len - 1] != 0)
                return -EINVAL;
        for (uint32_t i = 0; i < len; i++)
                strings += pairs[i] == 0;
        if (strings % 2 != 0 || pairs[0] == 0)
                return -EINVAL;
        return 0;
}

int agent_file_meta_set(int fd, const uint8_t *pairs, uint32_t len)
{
        char name[META_NAME_MAX + 1];
        for (uint32_t at = 0; at < len;) {
                const char *key = (const char *)pairs + at;
                const char *value = key + strlen(key) + 1;
                size_t vlen = strlen(value);
                if (!*key || strlen(META_PREFIX) + strlen(key) > META_NAME_MAX)
                        return -EINVAL;
                memcpy(name, META_PREFIX, strlen(META_PREFIX));
                memcpy(name + strlen(META_PREFIX), key, strlen(key) + 1);
                if (fsetxattr(fd, name, value, vlen, 0) < 0)
                        return -errno;
                at = (uint32_t)(value + vlen + 1 - (const char *)pairs);
        }
        return 0;
}
