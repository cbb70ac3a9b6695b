#include "templates/build_job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "agent_protocol/agent_job_client.h"
#include "cleanup.h"
#include "runtime/runtime_driver.h"
#include "templates/build_log.h"

#define BUILD_JOB_ID "build-step"

int build_job_run(const struct runtime_driver *d, const struct sandbox *sb, char **argv, char **envp, const char *cwd,
                  const char *user, uint32_t timeout_ms, struct build_log *log, struct build_job_result *ret, char *msg,
                  size_t msg_size)
{
        struct agent_frame subscribed;
        uint8_t *subscribed_buf = NULL;
        /* Subscribe first, so that no output of the job can come before we listen. */
        _cleanup_close_ int fd = d->ops->agent_connect(d, sb, 5000);
        if (fd < 0)
                return fd;
        int r = agent_job_client_subscribe(fd, &subscribed, &subscribed_buf);
        free(subscribed_buf);
        if (r < 0)
                return r;
        /* A hung agent must not hang the build: give up a minute after the job's own limit. */
        struct timeval tv = { .tv_sec = timeout_ms / 1000 + 60 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        struct agent_job_spec spec = {
                .job_id = BUILD_JOB_ID,
                .argv = argv,
                .envp = envp,
                .cwd = cwd,
                .user = user,
                .timeout_ms = timeout_ms,
        };
        uint32_t pid = 0;
        _cleanup_close_ int control = d->ops->agent_connect(d, sb, AGENT_JOB_CLIENT_TIMEOUT_MS);
        if (control < 0)
                return control;
        r = agent_job_client_start(control, &spec, &pid, msg, msg_size);
        if (r < 0)
                return r;
        char last = '\n';
        for (;;) {
                struct agent_frame f;
                _cleanup_free_ uint8_t *buf = NULL;
                if ((r = agent_client_read(fd, AGENT_CLIENT_EVENT_MAX, 0, &f, &buf)) < 0)
                        return r; /* the sandbox was killed (a cancelled build) or the agent died */
                uint64_t seq = 0;
                if (agent_frame_get_u64(&f, AGENT_F_SEQ, &seq) != 1)
                        continue;
                if (f.type == AGENT_MSG_JOB_OUTPUT) {
                        const uint8_t *data = NULL;
                        uint32_t len = 0;
                        if (agent_frame_find(&f, AGENT_F_DATA, &data, &len) == 1 && len > 0) {
                                build_log_append(log, data, len);
                                last = (char)data[len - 1];
                        }
                        (void)agent_job_client_ack(fd, BUILD_JOB_ID, seq);
                } else if (f.type == AGENT_MSG_JOB_EXIT) {
                        int32_t code = 0, sig = 0, error = 0;
                        uint8_t timed_out = 0;
                        const uint8_t *m = NULL;
                        uint32_t mlen = 0;
                        agent_frame_get_i32(&f, AGENT_F_EXIT_CODE, &code);
                        agent_frame_get_i32(&f, AGENT_F_TERM_SIGNAL, &sig);
                        agent_frame_get_u8(&f, AGENT_F_TIMED_OUT, &timed_out);
                        agent_frame_get_i32(&f, AGENT_F_ERRNO, &error);
                        (void)agent_frame_find(&f, AGENT_F_MESSAGE, &m, &mlen);
                        (void)agent_job_client_ack(fd, BUILD_JOB_ID, seq);
                        if (last != '\n')
                                build_log_append(log, "\n", 1);
                        if (mlen)
                                build_log_printf(log, "%.*s", (int)mlen, (const char *)m);
                        *ret = (struct build_job_result){ .exit_code = code, .term_signal = sig, .timed_out = timed_out != 0 };
                        return 0;
                }
        }
}
