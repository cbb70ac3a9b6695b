/* agent_job_requests: JOB_START, JOB_SUBSCRIBE, JOB_ACK and the job controls. */
#include "space_agent/agent_job_requests.h"

#include <errno.h>
#include <string.h>

#include "space_agent/agent_conn.h"
#include "space_agent/agent_exec_watch.h"
#include "space_agent/agent_job.h"
#include "space_agent/agent_subscriber.h"

static void reply_ok(struct agent_conn *c)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_OK);
        agent_conn_reply(c, &w);
}

static void on_start(struct agent_conn *c, const struct agent_frame *f, uint8_t **payload)
{
        const char *reason = NULL;
        struct agent_job *job;
        struct agent_frame_writer w;

        int r = agent_job_start(c->server, f, payload, &job, &reason);
        if (r < 0) {
                agent_conn_reply_error(c, -r, reason);
                return;
        }
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_STARTED);
        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, job->req.job_id);
        agent_frame_writer_put_u32(&w, AGENT_F_JOB_PID, (uint32_t)job->pid);
        agent_conn_reply(c, &w);
}

static void on_subscribe(struct agent_conn *c)
{
        struct agent_frame_writer w;

        agent_subscriber_attach(c->server, c);
        c->subscriber = true;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_SUBSCRIBED);
        for (struct agent_job *j = c->server->jobs; j; j = j->next)
                if (!j->dead)
                        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, j->req.job_id);
        agent_conn_reply(c, &w); /* events follow once it is out */
}

/* spaced's answer to a JOB_EXEC_CHECK; only the subscriber gives one. No reply. */
static void on_exec_verdict(struct agent_conn *c, const struct agent_frame *f)
{
        uint64_t id = 0;
        uint8_t allow = 0;
        const uint8_t *msg = NULL;
        uint32_t msg_len = 0;

        if (!c->subscriber || agent_frame_get_u64(f, AGENT_F_EXEC_CHECK_ID, &id) != 1 ||
            agent_frame_get_u8(f, AGENT_F_EXEC_ALLOW, &allow) != 1)
                return;
        (void)agent_frame_find(f, AGENT_F_MESSAGE, &msg, &msg_len);
        agent_exec_watch_verdict(c->server, id, allow == 1, msg, msg_len);
}

/* The job a control frame names; replies ENOENT itself when there is none. */
static struct agent_job *named_job(struct agent_conn *c, const struct agent_frame *f)
{
        const uint8_t *id;
        uint32_t len;
        struct agent_job *job = NULL;

        if (agent_frame_find(f, AGENT_F_JOB_ID, &id, &len) == 1)
                job = agent_job_find(c->server, id, len);
        if (!job)
                agent_conn_reply_error(c, ENOENT, "no such job");
        return job;
}

static void on_ack(struct agent_conn *c, const struct agent_frame *f)
{
        const uint8_t *id;
        uint32_t len;
        uint64_t seq;

        /* No reply: acknowledgements are fire-and-forget on the output channel. */
        if (agent_frame_find(f, AGENT_F_JOB_ID, &id, &len) != 1 || agent_frame_get_u64(f, AGENT_F_SEQ, &seq) != 1)
                return;
        struct agent_job *job = agent_job_find(c->server, id, len);
        if (job)
                agent_job_ack(job, seq);
        agent_subscriber_flush(c->server);
}

static void reply_result(struct agent_conn *c, int r, const char *what)
{
        if (r < 0)
                agent_conn_reply_error(c, -r, what);
        else
                reply_ok(c);
}

static void on_input(struct agent_conn *c, const struct agent_frame *f)
{
        const uint8_t *data = NULL;
        uint32_t len = 0;
        struct agent_job *job = named_job(c, f);

        if (!job)
                return;
        (void)agent_frame_find(f, AGENT_F_DATA, &data, &len);
        int r = agent_job_input(job, data, len);
        reply_result(c, r, r == -EAGAIN ? "stdin buffer full, retry" : r == -EPIPE ? "stdin is closed" : NULL);
}

static void on_signal(struct agent_conn *c, const struct agent_frame *f)
{
        int32_t sig = 0;
        struct agent_job *job = named_job(c, f);

        if (!job)
                return;
        if (agent_frame_get_i32(f, AGENT_F_SIGNAL, &sig) != 1) {
                agent_conn_reply_error(c, EINVAL, "JOB_SIGNAL needs SIGNAL");
                return;
        }
        int r = agent_job_signal(job, sig);
        reply_result(c, r, r == -ESRCH ? "the job has exited" : NULL);
}

static void on_resize(struct agent_conn *c, const struct agent_frame *f)
{
        uint32_t cols = 0, rows = 0;
        struct agent_job *job = named_job(c, f);

        if (!job)
                return;
        if (agent_frame_get_u32(f, AGENT_F_TTY_COLS, &cols) != 1 || agent_frame_get_u32(f, AGENT_F_TTY_ROWS, &rows) != 1) {
                agent_conn_reply_error(c, EINVAL, "JOB_RESIZE needs TTY_COLS and TTY_ROWS");
                return;
        }
        int r = agent_job_resize(job, cols, rows);
        reply_result(c, r, r == -ENOTTY ? "the job has no terminal" : NULL);
}

void agent_job_requests_handle(struct agent_conn *c, const struct agent_frame *f, uint8_t **payload)
{
        struct agent_job *job;

        switch (f->type) {
        case AGENT_MSG_JOB_START:
                on_start(c, f, payload);
                break;
        case AGENT_MSG_JOB_SUBSCRIBE:
                on_subscribe(c);
                break;
        case AGENT_MSG_JOB_ACK:
                on_ack(c, f);
                break;
        case AGENT_MSG_JOB_EXEC_VERDICT:
                on_exec_verdict(c, f);
                break;
        case AGENT_MSG_JOB_INPUT:
                on_input(c, f);
                break;
        case AGENT_MSG_JOB_CLOSE_STDIN:
                if ((job = named_job(c, f)))
                        reply_result(c, agent_job_close_stdin(job), NULL);
                break;
        case AGENT_MSG_JOB_SIGNAL:
                on_signal(c, f);
                break;
        case AGENT_MSG_JOB_RESIZE:
                on_resize(c, f);
                break;
        }
}
