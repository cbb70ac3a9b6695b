#include "fault_plan.h"

#include <stdio.h>
#include <string.h>

void fault_plan_init(struct fault_plan *p)
{
        memset(p, 0, sizeof(*p));
        pthread_mutex_init(&p->lock, NULL);
}

void fault_plan_destroy(struct fault_plan *p)
{
        pthread_mutex_destroy(&p->lock);
}

void fault_plan_arm(struct fault_plan *p, enum fault_mode mode, long n, const char *only)
{
        pthread_mutex_lock(&p->lock);
        p->mode = mode;
        p->fail_at = n;
        snprintf(p->only, sizeof(p->only), "%s", only ? only : "");
        p->steps = 0;
        p->fired = false;
        p->fired_at[0] = '\0';
        pthread_mutex_unlock(&p->lock);
}

void fault_plan_disarm(struct fault_plan *p)
{
        pthread_mutex_lock(&p->lock);
        p->mode = FAULT_OFF;
        pthread_mutex_unlock(&p->lock);
}

enum fault_verdict fault_plan_check(struct fault_plan *p, const char *source, const char *what, bool counted)
{
        if (!p)
                return FAULT_PASS;
        enum fault_verdict v = FAULT_PASS;
        pthread_mutex_lock(&p->lock);
        if (p->mode == FAULT_CRASH && p->fired) {
                v = FAULT_VANISH;
        } else if (p->mode != FAULT_OFF && (p->only[0] ? strcmp(p->only, what) == 0 : counted) && ++p->steps == p->fail_at) {
                p->fired = true;
                snprintf(p->fired_at, sizeof(p->fired_at), "%s:%s", source, what);
                v = p->mode == FAULT_CRASH ? FAULT_VANISH : FAULT_FAIL;
        }
        pthread_mutex_unlock(&p->lock);
        return v;
}

bool fault_plan_fired(struct fault_plan *p)
{
        pthread_mutex_lock(&p->lock);
        bool f = p->fired;
        pthread_mutex_unlock(&p->lock);
        return f;
}

long fault_plan_steps(struct fault_plan *p)
{
        pthread_mutex_lock(&p->lock);
        long n = p->steps;
        pthread_mutex_unlock(&p->lock);
        return n;
}
