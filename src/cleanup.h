/* Scoped cleanup helpers: attach a destructor to a variable so every return path frees it.
 * Hand ownership on with TAKE_PTR / TAKE_FD. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void cleanup_freep(void *p)
{
        free(*(void **)p);
}
static inline void cleanup_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void cleanup_fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(cleanup_freep)
#define _cleanup_close_ _cleanup_(cleanup_closep)
#define _cleanup_fclose_ _cleanup_(cleanup_fclosep)

#define TAKE_PTR(p)                          \
        ({                                   \
                __typeof__(p) _taken_ = (p); \
                (p) = NULL;                  \
                _taken_;                     \
        })
#define TAKE_FD(fd)                    \
        ({                             \
                int _taken_fd_ = (fd); \
                (fd) = -1;             \
                _taken_fd_;            \
        })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Wipe a secret, then free it. */
static inline void erase_and_free(char *s)
{
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}
static inline void cleanup_erase_and_freep(char **s)
{
        erase_and_free(*s);
}
#define _cleanup_erase_ _cleanup_(cleanup_erase_and_freep)

/* jansson references (docs/conventions.md, "JSON references"): a variable that owns a
 * reference (from json_object(), json_loads(), json_pack(), a *_new() function, or
 * json_incref()) is declared _cleanup_json_ and handed on with TAKE_PTR(); a borrowed one
 * (json_object_get(), json_array_get(), a const json_t * parameter) is never decref'd.
 * Only where jansson is on the include path: space-agent (musl) has no JSON. */
#if __has_include(<jansson.h>)
#include <jansson.h>
static inline void cleanup_json_decrefp(json_t **j)
{
        json_decref(*j); /* NULL is fine */
}
#define _cleanup_json_ _cleanup_(cleanup_json_decrefp)

/* jansson's memory is erased when freed: a parsed request body, a policy line to the egress
 * gateway may hold a secret's value (docs/network.md), and jansson frees its strings itself.
 * Installed once at the start of spaced and space-egress, before any JSON is made. */
#include <malloc.h>
static inline void json_erasing_free(void *p)
{
        if (p)
                explicit_bzero(p, malloc_usable_size(p));
        free(p);
}
static inline void json_erase_on_free(void)
{
        json_set_alloc_funcs(malloc, json_erasing_free);
}
#endif
