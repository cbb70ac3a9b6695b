/* agent_proc_figures: texts of the sandbox's own /proc views (see the header). */
#include "space_agent/agent_proc_figures.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_clock.h"

#define USER_HZ 100u
#define LOAD_STEP_US 5000000u

static const char *const file_names[_AGENT_PROC_MAX] = {
        [AGENT_PROC_MEMINFO] = "meminfo",
        [AGENT_PROC_STAT] = "stat",
        [AGENT_PROC_LOADAVG] = "loadavg",
        [AGENT_PROC_UPTIME] = "uptime",
};

const char *agent_proc_file_name(enum agent_proc_file f)
{
        return f < _AGENT_PROC_MAX ? file_names[f] : NULL;
}

void agent_proc_figures_init(struct agent_proc_figures *fig, uint64_t memory_bytes, unsigned cpus)
{
        *fig = (struct agent_proc_figures){
                .memory_bytes = memory_bytes,
                .cpus = cpus ? cpus : 1,
                .start_us = agent_clock_now_us(),
                .start_wall = time(NULL),
        };
        fig->load_at_us = fig->start_us;
}

/* What a walk over the pid namespace's processes finds. */
struct proc_scan {
        uint64_t anon_bytes;
        uint64_t user_ticks, system_ticks;
        unsigned total, running, blocked;
        long last_pid;
};

static ssize_t read_small(const char *path, char *buf, size_t size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return n;
}

/* /proc/PID/stat: the state and CPU times come after the last ')' (the name may hold any). */
static void scan_stat(long pid, struct proc_scan *s, bool self)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        if (read_small(path, buf, sizeof(buf)) <= 0)
                return;
        char *p = strrchr(buf, ')');
        if (!p || p[1] != ' ')
                return;
        p += 2;
        char state = *p;
        unsigned long long v[14] = { 0 };
        /* after the state: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
         * utime stime cutime cstime */
        int n = sscanf(p + 1, " %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13]);
        if (n != 14)
                return;
        s->total++;
        if (state == 'R' && !self)
                s->running++;
        else if (state == 'D')
                s->blocked++;
        /* A process's own times and those of the children it has reaped (dead, so counted
         * nowhere else; PID 1 reaps every orphan): at any moment each tick counts once. */
        s->user_ticks += v[10] + v[12];
        s->system_ticks += v[11] + v[13];
}

static void scan_statm(long pid, struct proc_scan *s, uint64_t page)
{
        char path[64], buf[256];
        snprintf(path, sizeof(path), "/proc/%ld/statm", pid);
        if (read_small(path, buf, sizeof(buf)) <= 0)
                return;
        unsigned long long size, resident, shared;
        if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) == 3 && resident > shared)
                s->anon_bytes += (resident - shared) * page;
}

static void scan_processes(struct proc_scan *s)
{
        *s = (struct proc_scan){ 0 };
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
        pid_t me = getpid();
        DIR *d = opendir("/proc");
        if (!d)
                return;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (!isdigit((unsigned char)e->d_name[0]))
                        continue;
                char *end;
                long pid = strtol(e->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                scan_stat(pid, s, pid == me);
                scan_statm(pid, s, page);
                if (pid > s->last_pid)
                        s->last_pid = pid;
        }
        closedir(d);
}

/* Bytes held by the sandbox's /tmp (a tmpfs: its pages count against the memory limit). */
static uint64_t tmpfs_bytes(void)
{
        struct statfs st;
        if (statfs("/tmp", &st) < 0 || st.f_blocks < st.f_bfree)
                return 0;
        return (uint64_t)(st.f_blocks - st.f_bfree) * (uint64_t)st.f_bsize;
}

/* The kernel's exponential averages, sampled whenever a view is read: whole 5 s steps
 * decay by the kernel's factors, the rest by its first-order term. */
static void load_update(struct agent_proc_figures *fig, unsigned running, uint64_t now)
{
        static const double step_decay[3] = { 0.920044, 0.983471, 0.994459 }; /* exp(-5/60), exp(-5/300), exp(-5/900) */
        static const double period_us[3] = { 60e6, 300e6, 900e6 };
        uint64_t dt = now > fig->load_at_us ? now - fig->load_at_us : 0;
        uint64_t steps = dt / LOAD_STEP_US;
        double rest = (double)(dt % LOAD_STEP_US);
        for (int i = 0; i < 3; i++) {
                double e = 1.0;
                for (uint64_t k = 0; k < steps && k < 2000 && e > 1e-9; k++)
                        e *= step_decay[i];
                double frac = rest / period_us[i];
                e *= frac < 1.0 ? 1.0 - frac : 0.0;
                fig->load[i] = fig->load[i] * e + (double)running * (1.0 - e);
        }
        fig->load_at_us = now;
}

struct text {
        char *buf;
        size_t len, size;
        int error;
};

__attribute__((format(printf, 2, 3))) static void text_add(struct text *t, const char *fmt, ...)
{
        if (t->error)
                return;
        for (;;) {
                va_list ap;
                va_start(ap, fmt);
                int n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        t->error = -EINVAL;
                        return;
                }
                if ((size_t)n < t->size - t->len) {
                        t->len += (size_t)n;
                        return;
                }
                size_t size = t->size * 2 + (size_t)n;
                char *b = realloc(t->buf, size);
                if (!b) {
                        t->error = -ENOMEM;
                        return;
                }
                t->buf = b;
                t->size = size;
        }
}

/* Every number is printed at a fixed width (and clamped to it), so each file's length
 * never changes: sendfile(2) on a FUSE file reads only up to the size stat reported. */
#define WIDE_MAX 9999999999ULL
static unsigned long long wide(uint64_t v)
{
        return v > WIDE_MAX ? WIDE_MAX : (unsigned long long)v;
}

static void meminfo_text(const struct agent_proc_figures *fig, const struct proc_scan *s, struct text *t)
{
        uint64_t total = fig->memory_bytes;
        if (!total) {
                struct sysinfo si;
                total = sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
        }
        uint64_t shmem = tmpfs_bytes();
        uint64_t used = s->anon_bytes + shmem;
        uint64_t free_b = used < total ? total - used : 0;
        text_add(t,
                 "MemTotal:       %10llu kB\nMemFree:        %10llu kB\nMemAvailable:   %10llu kB\n"
                 "Buffers:        %10llu kB\nCached:         %10llu kB\nSwapCached:     %10llu kB\n"
                 "Active:         %10llu kB\nInactive:       %10llu kB\nSwapTotal:      %10llu kB\n"
                 "SwapFree:       %10llu kB\nShmem:          %10llu kB\nSReclaimable:   %10llu kB\n",
                 wide(total / 1024), wide(free_b / 1024), wide(free_b / 1024), 0ULL, wide(shmem / 1024), 0ULL, wide(used / 1024),
                 0ULL, 0ULL, 0ULL, wide(shmem / 1024), 0ULL);
}

static uint64_t uptime_us(const struct agent_proc_figures *fig, uint64_t now)
{
        return now > fig->start_us ? now - fig->start_us : 0;
}

static void stat_text(const struct agent_proc_figures *fig, const struct proc_scan *s, uint64_t now, struct text *t)
{
        uint64_t elapsed = uptime_us(fig, now) / (1000000 / USER_HZ) * fig->cpus;
        uint64_t busy = s->user_ticks + s->system_ticks;
        uint64_t idle = elapsed > busy ? elapsed - busy : 0;
        text_add(t, "cpu  %10llu 0 %10llu %10llu 0 0 0 0 0 0\n", wide(s->user_ticks), wide(s->system_ticks), wide(idle));
        for (unsigned i = 0; i < fig->cpus; i++) {
                /* the totals spread evenly, the remainder on cpu0 */
                uint64_t u = s->user_ticks / fig->cpus + (i ? 0 : s->user_ticks % fig->cpus);
                uint64_t y = s->system_ticks / fig->cpus + (i ? 0 : s->system_ticks % fig->cpus);
                uint64_t d = idle / fig->cpus + (i ? 0 : idle % fig->cpus);
                text_add(t, "cpu%-4u %10llu 0 %10llu %10llu 0 0 0 0 0 0\n", i, wide(u), wide(y), wide(d));
        }
        text_add(t, "intr 0\nctxt 0\nbtime %10llu\nprocesses %10llu\nprocs_running %10llu\nprocs_blocked %10llu\nsoftirq 0\n",
                 wide((uint64_t)fig->start_wall), wide((uint64_t)s->last_pid), wide(s->running + 1u), wide(s->blocked));
}

static double load_shown(double v)
{
        return v < 0 ? 0 : v > 9999.99 ? 9999.99 : v;
}

int agent_proc_figures_text(struct agent_proc_figures *fig, enum agent_proc_file f, char **ret, size_t *ret_len)
{
        if (f >= _AGENT_PROC_MAX)
                return -EINVAL;
        struct proc_scan s;
        scan_processes(&s);
        uint64_t now = agent_clock_now_us();
        load_update(fig, s.running, now);

        struct text t = { .size = 1024 };
        t.buf = malloc(t.size);
        if (!t.buf)
                return -ENOMEM;
        switch (f) {
        case AGENT_PROC_MEMINFO:
                meminfo_text(fig, &s, &t);
                break;
        case AGENT_PROC_STAT:
                stat_text(fig, &s, now, &t);
                break;
        case AGENT_PROC_LOADAVG:
                /* the reader itself is running, as the kernel counts it */
                text_add(&t, "%7.2f %7.2f %7.2f %10llu/%-10llu %10llu\n", load_shown(fig->load[0]), load_shown(fig->load[1]),
                         load_shown(fig->load[2]), wide(s.running + 1u), wide(s.total), wide((uint64_t)s.last_pid));
                break;
        case AGENT_PROC_UPTIME: {
                uint64_t up = uptime_us(fig, now);
                uint64_t busy_us = (s.user_ticks + s.system_ticks) * (1000000 / USER_HZ);
                uint64_t all = up * fig->cpus;
                uint64_t idle = all > busy_us ? all - busy_us : 0;
                text_add(&t, "%10llu.%02llu %10llu.%02llu\n", wide(up / 1000000), (unsigned long long)(up % 1000000 / 10000),
                         wide(idle / 1000000), (unsigned long long)(idle % 1000000 / 10000));
                break;
        }
        default:
                break;
        }
        if (t.error) {
                free(t.buf);
                return t.error;
        }
        *ret = t.buf;
        *ret_len = t.len;
        return 0;
}
