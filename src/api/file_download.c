/* file_download: a file's bytes streamed from the agent as a response body (file_download.h). */
#include "api/file_download.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_protocol/agent_file_fetch.h"
#include "api/file_request.h"
#include "spaced/log.h"

struct file_download {
        struct agent_file_fetch fetch;
        char path[PATH_MAX];
};

static ssize_t download_read(void *cls, char *buf, size_t max)
{
        struct file_download *d = cls;
        ssize_t n = agent_file_fetch_read(&d->fetch, buf, max);
        if (n < 0) {
                log_warn("file.download", "path=%s error=%s: %s", d->path, strerror((int)-n), d->fetch.message);
                return -1;
        }
        return n;
}

static void download_free(void *cls)
{
        struct file_download *d = cls;
        agent_file_fetch_release(&d->fetch);
        free(d);
}

int file_download_respond(int agent, uint64_t offset, uint64_t len, const char *path, struct api_response *resp)
{
        struct file_download *d = calloc(1, sizeof(*d));
        if (!d) {
                close(agent);
                return -ENOMEM;
        }
        snprintf(d->path, sizeof(d->path), "%s", path);
        int r = agent_file_fetch_start(&d->fetch, agent, offset, len, FILE_REQUEST_TIMEOUT_MS);
        if (r < 0) {
                download_free(d);
                return r;
        }
        resp->stream = (struct api_stream){ .read = download_read, .free = download_free, .cls = d, .sized = true, .size = len };
        return 0;
}
