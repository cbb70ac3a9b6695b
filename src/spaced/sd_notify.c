#include "spaced/sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sd_notify_send(const char *state)
{
        const char *path = getenv("NOTIFY_SOCKET");
        if (!path || !*path)
                return 0;
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        size_t len = strlen(path);
        if ((path[0] != '/' && path[0] != '@') || len >= sizeof(addr.sun_path))
                return -EINVAL;
        memcpy(addr.sun_path, path, len);
        if (path[0] == '@')
                addr.sun_path[0] = '\0';
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
        ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&addr, alen);
        int r = n < 0 ? -errno : 0;
        close(fd);
        return r;
}
