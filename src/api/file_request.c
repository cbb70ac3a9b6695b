/* file_request: shared parts of the file routes. */
#include "api/file_request.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "api/api_render.h"
#include "api/api_routes.h"
#include "api/output_encoding.h"
#include "runtime/runtime_registry.h"
#include "spaced/spaced_context.h"

int file_target_load(struct api_request *req, struct file_target *ret, struct space_error *err)
{
        *ret = (struct file_target){ 0 };
        if (api_load_sandbox(req, &ret->sb, err) < 0)
                return -1;
        ret->loaded = true;
        if (ret->sb.state != SANDBOX_RUNNING)
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s; files need it running", ret->sb.id,
                                       sandbox_state_name(ret->sb.state));
        ret->runtimes = &req->ctx->runtimes;
        return runtime_registry_for(ret->runtimes, &ret->sb, err) ? 0 : -1;
}

void file_target_release(struct file_target *t)
{
        if (t->loaded)
                sandbox_release(&t->sb);
        t->loaded = false;
}

int file_agent_connect(const struct runtime_registry *runtimes, const struct sandbox *sb, int timeout_ms, struct space_error *err)
{
        int fd = runtime_registry_agent_connect(runtimes, sb, timeout_ms, err);
        if (fd == -EPROTONOSUPPORT)
                return -1;
        if (fd < 0)
                return space_error_set(err, SPACE_E_UNAVAILABLE, "the sandbox's agent is not answering (%s)", strerror(-fd));
        return fd;
}

int file_target_connect(const struct file_target *t, int timeout_ms, struct space_error *err)
{
        return file_agent_connect(t->runtimes, &t->sb, timeout_ms, err);
}

int file_path_check(const char *what, const char *path, size_t len, struct space_error *err)
{
        if (!path || len == 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s is required", what);
        if (memchr(path, 0, len))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s must not contain NUL bytes", what);
        if (path[0] != '/')
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s must be an absolute path", what);
        if (len >= PATH_MAX)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s is longer than %d bytes", what, PATH_MAX - 1);
        return 0;
}

struct query_find {
        const char *name;
        const char *value;
        size_t len;
        int count;
};

static enum MHD_Result query_find_cb(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size, const char *value,
                                     size_t value_size)
{
        struct query_find *q = cls;
        if (key && strlen(q->name) == key_size && memcmp(key, q->name, key_size) == 0) {
                q->count++;
                q->value = value;
                q->len = value ? value_size : 0;
        }
        return MHD_YES;
}

/* The raw (decoded) value with its length, so an encoded NUL (%00) is seen. */
static int query_raw(const struct api_request *req, const char *name, const char **ret, size_t *ret_len, struct space_error *err)
{
        struct query_find q = { .name = name };
        MHD_get_connection_values_n(req->conn, MHD_GET_ARGUMENT_KIND, query_find_cb, &q);
        if (q.count > 1)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "query parameter %s is given more than once", name);
        *ret = q.count ? q.value : NULL;
        *ret_len = q.len;
        return 0;
}

int file_query_path(const struct api_request *req, const char *name, const char **ret, struct space_error *err)
{
        const char *v;
        size_t len;
        if (query_raw(req, name, &v, &len, err) < 0 || file_path_check(name, v, len, err) < 0)
                return -1;
        *ret = v;
        return 0;
}

bool file_user_name_ok(const char *s)
{
        size_t n = s ? strlen(s) : 0;
        return n > 0 && n < 256 && !strpbrk(s, ":\n");
}

int file_query_user(const struct api_request *req, const char **ret, struct space_error *err)
{
        const char *v;
        size_t len;
        if (query_raw(req, "user", &v, &len, err) < 0)
                return -1;
        if (!v)
                return 0;
        if (memchr(v, 0, len) || !file_user_name_ok(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "user must be a user name or uid of the sandbox");
        *ret = v;
        return 0;
}

int file_mode_parse(const char *s, uint32_t *ret)
{
        size_t n = strlen(s);
        uint32_t v = 0;
        if (n == 0 || n > 4) /* the spec's ^[0-7]{1,4}$: 07777 is refused */
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '7')
                        return -EINVAL;
                v = v * 8 + (uint32_t)(s[i] - '0');
        }
        if (v > 07777)
                return -EINVAL;
        *ret = v;
        return 0;
}

int file_error_from_agent(struct space_error *err, int r, const char *msg)
{
        const char *m = msg && msg[0] ? msg : strerror(-r);
        switch (-r) {
        case ENOENT:
                return space_error_set(err, SPACE_E_NOT_FOUND, "%s", m);
        case EEXIST:
                return space_error_set(err, SPACE_E_ALREADY_EXISTS, "%s", m);
        case ENOTEMPTY:
        case EBUSY:
                return space_error_set(err, SPACE_E_CONFLICT, "%s", m);
        case EACCES:
        case EPERM:
        case EROFS:
                return space_error_set(err, SPACE_E_PERMISSION_DENIED, "%s", m);
        case ENOSPC:
        case ENOMEM: /* an upload to the sandbox's memory (tmpfs) beyond its limit */
        case EDQUOT:
        case EFBIG:
                return space_error_set(err, SPACE_E_PAYLOAD_TOO_LARGE, "%s", m);
        case EINVAL:
        case ENOTDIR:
        case EISDIR:
        case ENAMETOOLONG:
        case ELOOP:
        case EXDEV:
        case ESRCH:
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s", m);
        case ECONNREFUSED:
        case ECONNRESET:
        case EPIPE:
        case EAGAIN:
                return space_error_set(err, SPACE_E_UNAVAILABLE, "the sandbox's agent did not answer (%s)", strerror(-r));
        }
        return space_error_set(err, SPACE_E_INTERNAL, "%s", m);
}

static const char *const type_names[] = { "other", "file", "directory", "symlink" };

json_t *file_render_entry(const struct agent_file_entry *e)
{
        char mode[8];
        snprintf(mode, sizeof(mode), "%04o", e->mode & 07777);
        json_t *j = json_pack("{s:o, s:o, s:s, s:I, s:s, s:I, s:I, s:o, s:o, s:o}", "name",
                              output_encoding_utf8((const uint8_t *)e->name, e->name_len), "path",
                              output_encoding_utf8((const uint8_t *)e->path, e->path_len), "type",
                              type_names[e->type < 4 ? e->type : 0], "size", (json_int_t)e->size, "mode", mode, "uid",
                              (json_int_t)e->uid, "gid", (json_int_t)e->gid, "owner",
                              e->owner ? output_encoding_utf8((const uint8_t *)e->owner, e->owner_len) : json_null(), "group",
                              e->group ? output_encoding_utf8((const uint8_t *)e->group, e->group_len) : json_null(),
                              "modified_at", api_render_time((int64_t)e->mtime_ms));
        if (j && e->has_link)
                json_object_set_new(j, "symlink_target", output_encoding_utf8((const uint8_t *)e->link, e->link_len));
        return j;
}

void file_owner_args(const char *owner, long long uid, long long gid, struct agent_file_args *a)
{
        a->owner = owner;
        if (uid >= 0) {
                a->has_uid = true;
                a->uid = (uint32_t)uid;
        }
        if (gid >= 0) {
                a->has_gid = true;
                a->gid = (uint32_t)gid;
        }
}

static bool parse_u64(const char *s, size_t n, uint64_t *ret)
{
        uint64_t v = 0;
        if (n == 0 || n > 19)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        *ret = v;
        return true;
}

int file_range_parse(const char *header, uint64_t size, uint64_t *ret_offset, uint64_t *ret_len)
{
        uint64_t first, last;
        if (!header || strncmp(header, "bytes=", 6) != 0 || strchr(header, ','))
                return 0;
        const char *spec = header + 6, *dash = strchr(spec, '-');
        if (!dash)
                return 0;
        size_t first_len = (size_t)(dash - spec), last_len = strlen(dash + 1);
        if (first_len == 0) {
                /* bytes=-N: the last N bytes */
                if (!parse_u64(dash + 1, last_len, &last))
                        return 0;
                if (last == 0 || size == 0)
                        return -ERANGE;
                *ret_len = last < size ? last : size;
                *ret_offset = size - *ret_len;
                return 1;
        }
        if (!parse_u64(spec, first_len, &first))
                return 0;
        if (last_len == 0)
                last = UINT64_MAX;
        else if (!parse_u64(dash + 1, last_len, &last) || last < first)
                return 0;
        if (first >= size)
                return -ERANGE;
        if (last >= size)
                last = size - 1;
        *ret_offset = first;
        *ret_len = last - first + 1;
        return 1;
}
