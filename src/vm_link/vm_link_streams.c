#include "vm_link/vm_link_streams.h"

#include <errno.h>
#include <unistd.h>

void vm_link_streams_init(struct vm_link_streams *s)
{
        for (int i = 0; i < VM_LINK_MAX_STREAMS; i++) {
                s->fd[i] = -1;
                s->pending[i] = (struct vm_link_buffer){ 0 };
                s->closing[i] = false;
        }
}

int vm_link_streams_find(const struct vm_link_streams *s, uint32_t id)
{
        for (int i = 0; i < VM_LINK_MAX_STREAMS; i++)
                if (s->fd[i] >= 0 && s->id[i] == id)
                        return i;
        return -1;
}

int vm_link_streams_find_fd(const struct vm_link_streams *s, int fd)
{
        for (int i = 0; fd >= 0 && i < VM_LINK_MAX_STREAMS; i++)
                if (s->fd[i] == fd)
                        return i;
        return -1;
}

int vm_link_streams_add(struct vm_link_streams *s, uint32_t id, int fd)
{
        for (int i = 0; i < VM_LINK_MAX_STREAMS; i++)
                if (s->fd[i] < 0) {
                        s->id[i] = id;
                        s->fd[i] = fd;
                        return i;
                }
        return -ENOSPC;
}

void vm_link_streams_drop(struct vm_link_streams *s, int slot)
{
        if (slot < 0 || slot >= VM_LINK_MAX_STREAMS || s->fd[slot] < 0)
                return;
        close(s->fd[slot]);
        s->fd[slot] = -1;
        vm_link_buffer_release(&s->pending[slot]);
        s->closing[slot] = false;
}

void vm_link_streams_drop_all(struct vm_link_streams *s)
{
        for (int i = 0; i < VM_LINK_MAX_STREAMS; i++)
                vm_link_streams_drop(s, i);
}
