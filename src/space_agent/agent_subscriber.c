/* agent_subscriber: pushing job events to spaced's output channel. */
#include "space_agent/agent_subscriber.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>

#include <stdlib.h>

#include "space_agent/agent_conn.h"
#include "space_agent/agent_exec_watch.h"
#include "space_agent/agent_job.h"

/* Forgets the event half written to a subscriber that is gone. */
static void drop_current(struct agent_server *s)
{
        if (s->sub_event && s->sub_event->orphan)
                free(s->sub_event);
        s->sub_event = NULL;
        s->sub_off = 0;
}

void agent_subscriber_attach(struct agent_server *s, struct agent_conn *c)
{
        if (s->subscriber != c) {
                if (s->subscriber)
                        agent_conn_close(s->subscriber);
                s->subscriber = c;
                drop_current(s);
        }
        agent_exec_watch_rewind(s);
        /* The same connection again: an event half written to it is completed first (the
         * JOB_SUBSCRIBED reply waits for it), then everything unacknowledged follows. */
        for (struct agent_job *j = s->jobs; j; j = j->next)
                if (!j->dead)
                        agent_job_rewind(j);
}

void agent_subscriber_detach(struct agent_server *s, struct agent_conn *c)
{
        if (s->subscriber != c)
                return;
        s->subscriber = NULL;
        drop_current(s);
}

bool agent_subscriber_pending(const struct agent_server *s)
{
        return s->sub_event != NULL;
}

/* Writes the rest of the current event: 1 done, 0 socket full, -1 connection failed. */
static int write_current(struct agent_server *s)
{
        struct agent_job_event *ev = s->sub_event;

        while (s->sub_off < ev->len) {
                ssize_t n =
                        send(s->subscriber->watch.fd, ev->frame + s->sub_off, ev->len - s->sub_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                if (n < 0)
                        return -1;
                s->sub_off += (size_t)n;
        }
        if (ev->orphan)
                free(ev);
        s->sub_event = NULL;
        s->sub_off = 0;
        return 1;
}

/* Takes the next unsent event of job as the current one; false when it has none. */
static bool take_next(struct agent_server *s, struct agent_job *job)
{
        if (job->dead || !job->unsent)
                return false;
        s->sub_event = job->unsent;
        s->sub_off = 0;
        job->unsent = job->unsent->next;
        return true;
}

void agent_subscriber_flush(struct agent_server *s)
{
        struct agent_conn *c = s->subscriber;

        if (!c || c->dead)
                return;
        if (c->reply.data) {
                /* A reply waits to go out on the channel (agent_conn sends it once no event
                 * is half written): complete the current event, start no other. */
                if (s->sub_event && write_current(s) < 0) {
                        agent_conn_close(c);
                        return;
                }
                agent_conn_update_events(c);
                return;
        }
        for (;;) {
                if (s->sub_event) {
                        int r = write_current(s);
                        if (r < 0) {
                                agent_conn_close(c);
                                return;
                        }
                        if (r == 0)
                                break;
                }
                /* Exec checks first: a process waits on each. */
                if (!s->sub_event && (s->sub_event = agent_exec_watch_take_unsent(s))) {
                        s->sub_off = 0;
                        continue;
                }
                /* One event per job per pass, so a chatty job cannot starve the others. */
                bool any = false;
                for (struct agent_job *j = s->jobs; j; j = j->next) {
                        if (s->sub_event) {
                                int r = write_current(s);
                                if (r < 0) {
                                        agent_conn_close(c);
                                        return;
                                }
                                if (r == 0)
                                        goto full;
                        }
                        any |= take_next(s, j);
                }
                if (!any && !s->sub_event)
                        break;
        }
full:
        agent_conn_update_events(c);
}
