#include <inttypes.h>
#include <stdio.h>

#include "bench_stream_parts.h"

static double mib(long kb)
{
        return kb < 0 ? -1.0 : (double)kb / 1024.0;
}

static void print_throughput(const struct bench_stream_throughput *tp)
{
        printf("\nstream throughput: %zu MiB of NULs from `dd bs=1M` on stdout, SSE read and base64-decoded by one "
               "client: median %.1f MB/s (10^6 B/s; %zu of %zu runs exact)\n",
               tp->mb, tp->median_mb_per_s, tp->ok, tp->runs);
        for (size_t i = 0; i < tp->runs; i++)
                printf("  run %zu: %.1f MB/s, %" PRIu64 " bytes in %" PRIu64 " stdout events (%.1f KiB each), %" PRIu64
                       " records dropped%s\n",
                       i + 1, tp->mb_per_s[i], tp->bytes[i], tp->events[i],
                       tp->events[i] ? (double)tp->bytes[i] / 1024.0 / (double)tp->events[i] : 0.0, tp->dropped[i],
                       tp->dropped[i] ? (tp->accounted[i] ? " (received + dropped x record size = the output)"
                                                          : " (received + dropped do not add up)")
                                      : "");
}

static json_t *throughput_json(const struct bench_stream_throughput *tp)
{
        json_t *runs = json_array();
        for (size_t i = 0; runs && i < tp->runs; i++)
                json_array_append_new(runs, json_pack("{s:f, s:I, s:I, s:I, s:b}", "mb_per_s", tp->mb_per_s[i], "bytes",
                                                      (json_int_t)tp->bytes[i], "events", (json_int_t)tp->events[i],
                                                      "dropped", (json_int_t)tp->dropped[i], "accounted", tp->accounted[i]));
        return json_pack("{s:I, s:I, s:I, s:f, s:o?}", "mb", (json_int_t)tp->mb, "runs", (json_int_t)tp->runs, "exact",
                         (json_int_t)tp->ok, "median_mb_per_s", tp->median_mb_per_s, "samples", runs);
}

void bench_stream_report_text(const struct bench_config *cfg, const struct bench_stream_results *st)
{
        const struct bench_stream_fanout *f = &st->fan;
        const struct bench_stream_resume *r = &st->res;
        print_throughput(&st->tp[0]);
        print_throughput(&st->tp[1]);
        printf("\nstreams at once: %zu wanted in %zu sandboxes; %zu started (%.1f s), %zu connected (%.1f s), "
               "%zu got their line and %zu exit 0 after stdin (%.1f s); %zu errors, %" PRIu64 " id gaps\n",
               f->wanted, f->sandboxes, f->started, f->start_s, f->connected, f->connect_s, f->lines, f->exits,
               f->release_s, f->errors, f->id_gaps);
        if (f->lines != f->started)
                printf("WARNING: %zu streams ended with an exit but without their line (see stderr: the log has it)\n",
                       f->started - f->lines);
        printf("spaced: VmRSS %.1f MiB / %ld threads before, %.1f MiB / %ld threads with all connected, %.1f MiB / "
               "%ld threads after; VmHWM %.1f MiB\n",
               mib(f->rss_kb_before), f->threads_before, mib(f->rss_kb_connected), f->threads_connected,
               mib(f->rss_kb_after), f->threads_after, mib(f->hwm_kb));
        printf("\nresumed streams: %zu lines, %zu clients reconnecting every 1-32 events: %" PRIu64 " connections, %" PRIu64
               " output events, lost %" PRIu64 ", dup %" PRIu64 ", %zu of %zu copies exact, %" PRIu64
               " mismatched, %zu connection errors, %.1f s (the command ran %.1f s)\n",
               r->lines, r->clients, r->connections, r->events, r->lost, r->dup, r->complete, r->clients, r->mismatched,
               r->errors, r->seconds, r->command_ms / 1e3);
        printf("  connect -> first event, mean by where it resumed (quarters of the ids): %.2f / %.2f / %.2f / %.2f ms\n",
               r->first_ms_by_quarter[0], r->first_ms_by_quarter[1], r->first_ms_by_quarter[2], r->first_ms_by_quarter[3]);
}

json_t *bench_stream_report_json(const struct bench_config *cfg, const struct bench_stream_results *st)
{
        const struct bench_stream_fanout *f = &st->fan;
        const struct bench_stream_resume *r = &st->res;
        return json_pack("{s:o?, s:o?, "
                         "s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, "
                         "s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:[f, f, f, f]}}",
                         "throughput", throughput_json(&st->tp[0]), "throughput_within_log", throughput_json(&st->tp[1]),
                         "fanout", "wanted", (json_int_t)f->wanted, "sandboxes", (json_int_t)f->sandboxes, "started",
                         (json_int_t)f->started, "connected", (json_int_t)f->connected, "lines", (json_int_t)f->lines,
                         "exits", (json_int_t)f->exits, "errors", (json_int_t)f->errors, "id_gaps", (json_int_t)f->id_gaps, "start_s", f->start_s,
                         "connect_s", f->connect_s, "release_s", f->release_s, "rss_kb_before",
                         (json_int_t)f->rss_kb_before, "threads_before", (json_int_t)f->threads_before,
                         "rss_kb_connected", (json_int_t)f->rss_kb_connected, "threads_connected",
                         (json_int_t)f->threads_connected, "rss_kb_after", (json_int_t)f->rss_kb_after, "threads_after",
                         (json_int_t)f->threads_after, "hwm_kb", (json_int_t)f->hwm_kb,
                         "resume", "lines", (json_int_t)r->lines, "clients", (json_int_t)r->clients, "connections",
                         (json_int_t)r->connections, "events", (json_int_t)r->events, "lost", (json_int_t)r->lost, "dup",
                         (json_int_t)r->dup, "complete", (json_int_t)r->complete, "mismatched",
                         (json_int_t)r->mismatched, "errors", (json_int_t)r->errors, "seconds", r->seconds,
                         "command_ms", r->command_ms, "first_ms_by_quarter", r->first_ms_by_quarter[0],
                         r->first_ms_by_quarter[1], r->first_ms_by_quarter[2], r->first_ms_by_quarter[3]);
}

bool bench_stream_failed(const struct bench_stream_results *st)
{
        const struct bench_stream_fanout *f = &st->fan;
        const struct bench_stream_resume *r = &st->res;
        return st->tp[1].ok != st->tp[1].runs || f->errors || f->id_gaps || f->started != f->wanted ||
               f->lines != f->started || f->exits != f->started || r->complete != r->clients || r->errors || r->lost ||
               r->dup || r->mismatched;
}
