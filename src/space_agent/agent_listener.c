/* agent_listener: bind, park and unpark the agent's own listening socket (agent_listener.h). */
#include "space_agent/agent_listener.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_conn.h"
#include "space_agent/agent_server.h"

int agent_listener_open(const char *path)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        struct stat st;

        if (strlen(path) >= sizeof addr.sun_path)
                return -ENAMETOOLONG;
        strcpy(addr.sun_path, path);

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A stale socket from an earlier run is replaced; anything else is left alone. */
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void)unlink(path);
        if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
                return -errno;
        if (listen(fd, 128) < 0)
                return -errno;
        return TAKE_FD(fd);
}

void agent_listener_park(struct agent_server *s)
{
        if (!s->listen_path || s->parked)
                return;
        for (struct agent_conn *c = s->conns; c; c = c->next)
                agent_conn_close(c);
        agent_server_watch_close(s, &s->listen_watch);
        s->accept_paused = false;
        s->parked = true;
        /* Last: its absence tells spaced that nothing of the host is held any more. */
        (void)unlink(s->listen_path);
}

int agent_listener_unpark(struct agent_server *s)
{
        if (!s->parked)
                return 0;
        int fd = agent_listener_open(s->listen_path);
        if (fd < 0)
                return fd;
        int r = agent_server_listen(s, fd);
        if (r < 0)
                return r;
        s->parked = false;
        return 0;
}
