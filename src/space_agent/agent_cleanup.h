/* agent_cleanup: scoped-cleanup helpers for space-agent (see docs/STYLE: rule 4). */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static inline void agent_cleanup_freep(void *p)
{
        free(*(void **)p);
}

static inline void agent_cleanup_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

#define _cleanup_free_ __attribute__((cleanup(agent_cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(agent_cleanup_closep)))

/* Hand ownership on: returns the value and leaves NULL / -1 behind. */
#define TAKE_PTR(p)                         \
        ({                                  \
                __typeof__(p) _taken = (p); \
                (p) = NULL;                 \
                _taken;                     \
        })
#define TAKE_FD(fd)                \
        ({                         \
                int _taken = (fd); \
                (fd) = -1;         \
                _taken;            \
        })
