#include "agent_protocol/agent_files_client.h"

#include "agent_protocol/agent_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"

void agent_file_reply_release(struct agent_file_reply *r)
{
        free(r->buf);
        r->buf = NULL;
}

int agent_files_send(int fd, enum agent_msg_type type, const struct agent_file_args *a)
{
        struct agent_frame_writer w;

        agent_frame_writer_begin(&w, type);
        if (a) {
                if (a->path)
                        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, a->path);
                if (a->dest)
                        agent_frame_writer_put_str(&w, AGENT_F_FILE_DEST, a->dest);
                if (a->user)
                        agent_frame_writer_put_str(&w, AGENT_F_FILE_USER, a->user);
                if (a->owner)
                        agent_frame_writer_put_str(&w, AGENT_F_FILE_OWNER, a->owner);
                if (a->has_mode)
                        agent_frame_writer_put_u32(&w, AGENT_F_FILE_MODE, a->mode);
                if (a->has_uid)
                        agent_frame_writer_put_u32(&w, AGENT_F_FILE_UID, a->uid);
                if (a->has_gid)
                        agent_frame_writer_put_u32(&w, AGENT_F_FILE_GID, a->gid);
                if (a->depth)
                        agent_frame_writer_put_u32(&w, AGENT_F_FILE_DEPTH, a->depth);
                if (a->parents)
                        agent_frame_writer_put_u8(&w, AGENT_F_FILE_PARENTS, 1);
                if (a->recursive)
                        agent_frame_writer_put_u8(&w, AGENT_F_FILE_RECURSIVE, 1);
                if (a->sync)
                        agent_frame_writer_put_u8(&w, AGENT_F_FILE_SYNC, 1);
                if (a->with_entry)
                        agent_frame_writer_put_u8(&w, AGENT_F_FILE_WITH_ENTRY, 1);
                if (a->excl)
                        agent_frame_writer_put_u8(&w, AGENT_F_FILE_EXCL, 1);
                if (a->with_meta)
                        agent_frame_writer_put_u8(&w, AGENT_F_FILE_WITH_META, 1);
                if (a->meta_len)
                        agent_frame_writer_put(&w, AGENT_F_FILE_META, a->meta, a->meta_len);
        }
        int r = agent_frame_writer_finish(&w);
        if (r == 0)
                r = agent_frame_send(fd, &w);
        agent_frame_writer_release(&w);
        return r;
}

int agent_files_read(int fd, struct agent_file_reply *ret, char *msg, size_t msg_size)
{
        uint8_t header[AGENT_FRAME_HEADER_SIZE];
        uint8_t type;

        /* The socket's receive timeout bounds the whole reply, not each read of it. */
        int64_t deadline = agent_client_socket_deadline(fd);
        *ret = (struct agent_file_reply){ 0 };
        int r = agent_client_read_exact(fd, header, sizeof(header), deadline);
        if (r < 0)
                return r;
        int64_t len = agent_frame_header_decode(header, &type);
        /* Only a listing may be large; anything else of this size is not an honest agent. */
        if (len >= 0 && (uint64_t)len > (type == AGENT_MSG_FILE_ENTRIES ? AGENT_CLIENT_LIST_MAX : AGENT_CLIENT_REPLY_MAX))
                len = -EMSGSIZE;
        if (len < 0)
                return (int)len;
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!buf || (r = agent_client_read_exact(fd, buf, (size_t)len, deadline)) < 0) {
                free(buf);
                return buf ? r : -ENOMEM;
        }
        ret->frame = (struct agent_frame){ .type = type, .payload = buf, .payload_len = (uint32_t)len };
        ret->buf = buf;
        if (type == AGENT_MSG_ERROR) {
                int32_t e = EIO;
                const uint8_t *data;
                uint32_t mlen;
                agent_frame_get_i32(&ret->frame, AGENT_F_ERRNO, &e);
                if (msg && msg_size) {
                        if (agent_frame_find(&ret->frame, AGENT_F_MESSAGE, &data, &mlen) == 1)
                                snprintf(msg, msg_size, "%.*s", (int)mlen, (const char *)data);
                        else
                                snprintf(msg, msg_size, "%s", strerror(e > 0 ? e : EIO));
                }
                agent_file_reply_release(ret);
                return e > 0 ? -e : -EIO;
        }
        return 0;
}

int agent_files_call(int fd, enum agent_msg_type type, const struct agent_file_args *args, enum agent_msg_type want,
                     struct agent_file_reply *ret, char *msg, size_t msg_size)
{
        int r = agent_files_send(fd, type, args);
        if (r < 0)
                return r;
        r = agent_files_read(fd, ret, msg, msg_size);
        if (r < 0)
                return r;
        if (ret->frame.type != want) {
                agent_file_reply_release(ret);
                return -EPROTO;
        }
        return 0;
}

static uint64_t le64(const uint8_t *p)
{
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

static uint32_t le32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int agent_files_next_entry(const struct agent_frame *f, size_t *cursor, struct agent_file_entry *ret)
{
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        bool started = false;
        int r;

        for (;;) {
                size_t before = *cursor;
                r = agent_frame_next_field(f, cursor, &tag, &data, &len);
                if (r < 0)
                        return r;
                if (r == 0)
                        return started ? 1 : 0;
                if (tag == AGENT_F_FILE_PATH) {
                        if (started) {
                                *cursor = before; /* the next entry begins here */
                                return 1;
                        }
                        started = true;
                        *ret = (struct agent_file_entry){ .path = (const char *)data, .path_len = len };
                        continue;
                }
                if (!started)
                        continue;
#define STR(tag_, field)                         \
        case tag_:                               \
                ret->field = (const char *)data; \
                ret->field##_len = len;          \
                break;
#define INT(tag_, field, size, conv)    \
        case tag_:                      \
                if (len != size)        \
                        return -EPROTO; \
                ret->field = conv;      \
                break;
                switch (tag) {
                        STR(AGENT_F_FILE_NAME, name)
                        STR(AGENT_F_FILE_OWNER, owner)
                        STR(AGENT_F_FILE_GROUP, group)
                        INT(AGENT_F_FILE_TYPE, type, 1, data[0])
                        INT(AGENT_F_FILE_SIZE, size, 8, le64(data))
                        INT(AGENT_F_FILE_MTIME_MS, mtime_ms, 8, le64(data))
                        INT(AGENT_F_FILE_MODE, mode, 4, le32(data))
                        INT(AGENT_F_FILE_UID, uid, 4, le32(data))
                        INT(AGENT_F_FILE_GID, gid, 4, le32(data))
                case AGENT_F_FILE_LINK:
                        ret->link = (const char *)data;
                        ret->link_len = len;
                        ret->has_link = true;
                        break;
                case AGENT_F_FILE_META:
                        if (len == 0 || data[len - 1] != 0)
                                return -EPROTO;
                        ret->meta = data;
                        ret->meta_len = len;
                        break;
                }
#undef STR
#undef INT
        }
}
