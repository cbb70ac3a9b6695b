#include "cli/cli_build_progress.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t enabled, shown;
static volatile sig_atomic_t step, total;
static volatile time_t step_started;
static char line[160]; /* the start of the current log line, across pieces */
static size_t line_len;
static char title[64]; /* the step's instruction, shortened; read by the handler */
static volatile sig_atomic_t title_len;

static size_t put_uint(char *buf, unsigned long v)
{
        char tmp[24];
        size_t n = 0, out = 0;
        do
                tmp[n++] = (char)('0' + v % 10);
        while ((v /= 10) && n < sizeof(tmp));
        while (n)
                buf[out++] = tmp[--n];
        return out;
}

/* Async-signal-safe: only write(2) and clock_gettime. */
static void on_tick(int sig)
{
        if (!enabled || step <= 0)
                return;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        char buf[256];
        size_t n = 0;
        memcpy(buf + n, "\r\033[K[", 5);
        n += 5;
        n += put_uint(buf + n, (unsigned long)step);
        buf[n++] = '/';
        n += put_uint(buf + n, (unsigned long)total);
        buf[n++] = ']';
        buf[n++] = ' ';
        memcpy(buf + n, title, (size_t)title_len);
        n += (size_t)title_len;
        buf[n++] = ' ';
        n += put_uint(buf + n, (unsigned long)(now.tv_sec - step_started));
        buf[n++] = 's';
        (void)!write(STDERR_FILENO, buf, n);
        shown = 1;
}

void cli_build_progress_start(void)
{
        if (!isatty(STDERR_FILENO))
                return;
        struct sigaction sa = { .sa_handler = on_tick, .sa_flags = SA_RESTART };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = { .it_interval = { 1, 0 }, .it_value = { 1, 0 } };
        setitimer(ITIMER_REAL, &it, NULL);
        enabled = 1;
}

void cli_build_progress_clear(void)
{
        if (enabled && shown) {
                (void)!write(STDERR_FILENO, "\r\033[K", 4);
                shown = 0;
        }
}

/* "#3 [3/5] RUN make" starts step 3 of 5. */
static void on_line(void)
{
        unsigned n = 0, m = 0;
        int off = 0;
        line[line_len < sizeof(line) ? line_len : sizeof(line) - 1] = '\0';
        char word[16] = "";
        if (sscanf(line, "#%*u %15s", word) == 1 &&
            (strcmp(word, "DONE") == 0 || strcmp(word, "CACHED") == 0 || strcmp(word, "ERROR") == 0)) {
                step = 0; /* the step is over: nothing to show until the next */
                return;
        }
        if (sscanf(line, "#%*u [%u/%u] %n", &n, &m, &off) != 2 || off <= 0)
                return;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        enabled = 0; /* the handler must not read a half-written title */
        size_t t = strlen(line + off);
        if (t > 48)
                t = 48;
        memcpy(title, line + off, t);
        title_len = (sig_atomic_t)t;
        step = (sig_atomic_t)n;
        total = (sig_atomic_t)m;
        step_started = now.tv_sec;
        enabled = 1;
}

void cli_build_progress_feed(const char *data, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                if (data[i] == '\n') {
                        on_line();
                        line_len = 0;
                } else if (line_len < sizeof(line) - 1) {
                        line[line_len++] = data[i];
                }
        }
}

void cli_build_progress_stop(void)
{
        if (!isatty(STDERR_FILENO))
                return;
        struct itimerval off = { 0 };
        setitimer(ITIMER_REAL, &off, NULL);
        cli_build_progress_clear();
        enabled = 0;
        signal(SIGALRM, SIG_DFL);
}
