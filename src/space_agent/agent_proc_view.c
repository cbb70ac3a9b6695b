/* agent_proc_view: a read-only FUSE server for the /proc views (see the header), run as a
 * process of its own: the agent's own file operations (a download of /proc/meminfo, a
 * listing of /proc) would otherwise wait on themselves. Requests come from processes of
 * the sandbox (hostile like everything inside it): every message is checked against its
 * declared length, unknown ones get ENOSYS, and the open-file table is bounded. */
#include "space_agent/agent_proc_view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "space_agent/agent_fuse_abi.h"

#define VIEW_MAX_OPEN 64
#define VIEW_MAX_WRITE 4096
#define VIEW_READ_BUFFER 16384 /* the kernel refuses reads of less than 8 KiB */

struct view_handle {
        bool used;
        char *text;
        size_t len;
};

struct view_file {
        int fd;
        enum agent_proc_file kind;
        struct proc_view *view;
        size_t size; /* the text's length, once known (it never changes); 0 until then */
};

struct proc_view {
        struct agent_proc_figures figures;
        struct view_file files[_AGENT_PROC_MAX];
        struct view_handle handles[VIEW_MAX_OPEN];
};

static void reply(int fd, uint64_t unique, int error, const void *data, size_t len)
{
        struct fuse_abi_out_header h = { .len = (uint32_t)(sizeof(h) + (error ? 0 : len)), .error = error, .unique = unique };
        struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)data, error ? 0 : len } };
        /* A reply the kernel refuses (the request was interrupted meanwhile) needs nothing more. */
        (void)writev(fd, iov, error || !len ? 1 : 2);
}

/* The size is the text's length, which never changes for a file (fixed-width figures):
 * sendfile(2) and splice read only that far. Made once, at the first stat or open. */
static void attr_fill(struct view_file *f, struct fuse_abi_attr *a)
{
        struct proc_view *v = f->view;
        if (!f->size) {
                char *text = NULL;
                if (agent_proc_figures_text(&v->figures, f->kind, &text, &f->size) < 0)
                        f->size = 0;
                free(text);
        }
        *a = (struct fuse_abi_attr){
                .ino = FUSE_ABI_ROOT_ID,
                .size = f->size,
                .mode = S_IFREG | 0444,
                .nlink = 1,
                .blksize = 4096,
                .atime = (uint64_t)v->figures.start_wall,
                .mtime = (uint64_t)v->figures.start_wall,
                .ctime = (uint64_t)v->figures.start_wall,
        };
}

static void on_init(struct view_file *f, const struct fuse_abi_in_header *h, const void *body, size_t len)
{
        const struct fuse_abi_init_in *in = body;
        if (len < sizeof(*in) || in->major != FUSE_ABI_MAJOR) {
                reply(f->fd, h->unique, -EPROTO, NULL, 0);
                return;
        }
        struct fuse_abi_init_out out = {
                .major = FUSE_ABI_MAJOR,
                .minor = in->minor < FUSE_ABI_MINOR ? in->minor : FUSE_ABI_MINOR,
                .max_readahead = in->max_readahead,
                .max_background = 4,
                .congestion_threshold = 3,
                .max_write = VIEW_MAX_WRITE,
                .time_gran = 1,
                .max_pages = 1,
        };
        reply(f->fd, h->unique, 0, &out, sizeof(out));
}

static void on_open(struct view_file *f, const struct fuse_abi_in_header *h, const void *body, size_t len)
{
        struct proc_view *v = f->view;
        const struct fuse_abi_open_in *in = body;
        if (len < sizeof(*in) || h->nodeid != FUSE_ABI_ROOT_ID) {
                reply(f->fd, h->unique, -EINVAL, NULL, 0);
                return;
        }
        if ((in->flags & O_ACCMODE) != O_RDONLY || (in->flags & O_TRUNC)) {
                reply(f->fd, h->unique, -EACCES, NULL, 0);
                return;
        }
        size_t slot = 0;
        while (slot < VIEW_MAX_OPEN && v->handles[slot].used)
                slot++;
        if (slot == VIEW_MAX_OPEN) {
                reply(f->fd, h->unique, -ENFILE, NULL, 0);
                return;
        }
        struct view_handle *hd = &v->handles[slot];
        int r = agent_proc_figures_text(&v->figures, f->kind, &hd->text, &hd->len);
        if (r < 0) {
                reply(f->fd, h->unique, r, NULL, 0);
                return;
        }
        hd->used = true;
        f->size = hd->len;
        struct fuse_abi_open_out out = { .fh = slot + 1, .open_flags = FUSE_ABI_FOPEN_DIRECT_IO };
        reply(f->fd, h->unique, 0, &out, sizeof(out));
}

static struct view_handle *handle_of(struct proc_view *v, uint64_t fh)
{
        if (fh < 1 || fh > VIEW_MAX_OPEN || !v->handles[fh - 1].used)
                return NULL;
        return &v->handles[fh - 1];
}

static void on_read(struct view_file *f, const struct fuse_abi_in_header *h, const void *body, size_t len)
{
        const struct fuse_abi_read_in *in = body;
        struct view_handle *hd = len >= sizeof(*in) ? handle_of(f->view, in->fh) : NULL;
        if (!hd) {
                reply(f->fd, h->unique, -EBADF, NULL, 0);
                return;
        }
        size_t off = in->offset < hd->len ? (size_t)in->offset : hd->len;
        size_t n = hd->len - off < in->size ? hd->len - off : in->size;
        struct fuse_abi_out_header oh = { .len = (uint32_t)(sizeof(oh) + n), .unique = h->unique };
        struct iovec iov[2] = { { &oh, sizeof(oh) }, { hd->text + off, n } };
        (void)writev(f->fd, iov, n ? 2 : 1);
}

static void on_release(struct view_file *f, const struct fuse_abi_in_header *h, const void *body, size_t len)
{
        const struct fuse_abi_release_in *in = body;
        struct view_handle *hd = len >= sizeof(*in) ? handle_of(f->view, in->fh) : NULL;
        if (hd) {
                free(hd->text);
                *hd = (struct view_handle){ 0 };
        }
        reply(f->fd, h->unique, 0, NULL, 0);
}

static void dispatch(struct view_file *f, const struct fuse_abi_in_header *h, const void *body, size_t len)
{
        switch (h->opcode) {
        case FUSE_ABI_INIT:
                on_init(f, h, body, len);
                break;
        case FUSE_ABI_GETATTR: {
                struct fuse_abi_attr_out out = { .attr_valid = 1 };
                attr_fill(f, &out.attr);
                reply(f->fd, h->unique, 0, &out, sizeof(out));
                break;
        }
        case FUSE_ABI_OPEN:
                on_open(f, h, body, len);
                break;
        case FUSE_ABI_READ:
                on_read(f, h, body, len);
                break;
        case FUSE_ABI_RELEASE:
                on_release(f, h, body, len);
                break;
        case FUSE_ABI_FLUSH:
                reply(f->fd, h->unique, 0, NULL, 0);
                break;
        case FUSE_ABI_STATFS: {
                struct fuse_abi_statfs_out out = { .bsize = 4096, .frsize = 4096, .namelen = 255 };
                reply(f->fd, h->unique, 0, &out, sizeof(out));
                break;
        }
        case FUSE_ABI_FORGET:
        case FUSE_ABI_BATCH_FORGET:
        case FUSE_ABI_INTERRUPT: /* every request is answered at once: nothing to interrupt */
                break;
        case FUSE_ABI_DESTROY:
        default:
                reply(f->fd, h->unique, -ENOSYS, NULL, 0);
                break;
        }
}

/* Serves what one descriptor has queued; false once its mount is gone (ENODEV). */
static bool serve(struct view_file *f)
{
        static char buf[VIEW_READ_BUFFER] __attribute__((aligned(8)));
        for (int i = 0; i < 64; i++) {
                ssize_t n = read(f->fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR || errno == ENOENT) /* ENOENT: the request was interrupted */
                                continue;
                        return errno == EAGAIN;
                }
                struct fuse_abi_in_header h;
                if ((size_t)n < sizeof(h))
                        continue;
                memcpy(&h, buf, sizeof(h));
                if (h.len < sizeof(h) || h.len > (size_t)n) {
                        reply(f->fd, h.unique, -EIO, NULL, 0);
                        continue;
                }
                dispatch(f, &h, buf + sizeof(h), h.len - sizeof(h));
        }
        return true;
}

static void close_all_but(const int fds[_AGENT_PROC_MAX])
{
        unsigned from = 3;
        for (int i = 0; i < _AGENT_PROC_MAX; i++) {
                if (fds[i] < 0)
                        continue;
                if ((unsigned)fds[i] > from)
                        (void)syscall(SYS_close_range, from, (unsigned)fds[i] - 1, 0);
                from = (unsigned)fds[i] + 1 > from ? (unsigned)fds[i] + 1 : from;
        }
        (void)syscall(SYS_close_range, from, ~0U, 0);
}

static _Noreturn void server_main(const int fds[_AGENT_PROC_MAX], uint64_t memory_bytes, unsigned cpus)
{
        static struct proc_view v;
        struct pollfd pfd[_AGENT_PROC_MAX];
        sigset_t none;

        (void)prctl(PR_SET_NAME, "space-proc-view");
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        close_all_but(fds);
        agent_proc_figures_init(&v.figures, memory_bytes, cpus);
        for (int i = 0; i < _AGENT_PROC_MAX; i++) {
                v.files[i] = (struct view_file){ .fd = fds[i], .kind = (enum agent_proc_file)i, .view = &v };
                pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
                if (fds[i] >= 0) {
                        int fl = fcntl(fds[i], F_GETFL);
                        if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_NONBLOCK) < 0)
                                _exit(1);
                }
        }
        for (;;) {
                int live = 0;
                for (int i = 0; i < _AGENT_PROC_MAX; i++)
                        live += pfd[i].fd >= 0;
                if (!live)
                        _exit(0);
                if (poll(pfd, _AGENT_PROC_MAX, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(1);
                }
                for (int i = 0; i < _AGENT_PROC_MAX; i++) {
                        if (pfd[i].fd < 0 || !pfd[i].revents)
                                continue;
                        if (!serve(&v.files[i]) || (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))) {
                                close(pfd[i].fd);
                                pfd[i].fd = -1;
                        }
                }
        }
}

int agent_proc_view_start(const int fds[_AGENT_PROC_MAX], uint64_t memory_bytes, unsigned cpus)
{
        pid_t pid = fork();
        if (pid == 0)
                server_main(fds, memory_bytes, cpus);
        int r = pid < 0 ? -errno : 0;
        for (int i = 0; i < _AGENT_PROC_MAX; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        return r;
}
