/* cli_stages.c: printing sl_stage_stats (see cli_stages.h). */
#include "cli_stages.h"

#include <inttypes.h>

#include "cli.h"

static double percent(double part, const sl_stage_stats *s)
{
    double whole = s->thread_ms > 0 ? s->thread_ms : (double)s->threads * s->elapsed_ms;
    return whole > 0 ? 100.0 * part / whole : 0.0;
}

void cli_stages_text(FILE *f, const sl_stage_stats *st, size_t n)
{
    fprintf(f, "%-44s %7s %9s %11s %6s %8s %8s %11s\n", "stage", "threads", "rows", "rows/s",
            "busy%", "waiting%", "blocked%", "queue");
    for (size_t i = 0; i < n; i++) {
        const sl_stage_stats *s = &st[i];
        char queue[32] = "-";
        double rate = s->elapsed_ms > 0 ? (double)s->rows / (s->elapsed_ms / 1e3) : 0;
        if (s->capacity > 0)
            snprintf(queue, sizeof queue, "%.1f/%zu", s->occupancy, s->capacity);
        if (s->threads == 0) {
            fprintf(f, "%-44.44s %7s %9" PRIu64 " %11.0f %26s %11s\n", s->name, "-", s->rows,
                    rate, "(in the next stage's time)", queue);
            continue;
        }
        fprintf(f, "%-44.44s %7d %9" PRIu64 " %11.0f %6.1f %8.1f %8.1f %11s\n", s->name,
                s->threads, s->rows, rate, percent(s->busy_ms, s),
                percent(s->wait_input_ms, s), percent(s->blocked_output_ms, s), queue);
    }
    if (n > 0) {
        char verdict[512];
        sl_stage_verdict(st, n, verdict, sizeof verdict);
        fprintf(f, "verdict: %s\n", verdict);
    }
}

void cli_stages_verdict_json(FILE *f, const sl_stage_stats *st, size_t n)
{
    char verdict[512];
    sl_stage_verdict(st, n, verdict, sizeof verdict);
    cli_json_string(f, verdict);
}

void cli_stages_json(FILE *f, const sl_stage_stats *st, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        const sl_stage_stats *s = &st[i];
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        cli_json_string(f, s->name);
        fprintf(f,
                ", \"threads\": %d, \"rows\": %" PRIu64 ", \"elapsed_ms\": %.3f, "
                "\"busy_ms\": %.3f, \"wait_input_ms\": %.3f, \"startup_wait_ms\": %.3f, "
                "\"blocked_output_ms\": %.3f, \"capacity\": %zu, \"occupancy\": %.3f, "
                "\"thread_ms\": %.3f}",
                s->threads, s->rows, s->elapsed_ms, s->busy_ms, s->wait_input_ms,
                s->startup_wait_ms, s->blocked_output_ms, s->capacity, s->occupancy,
                s->thread_ms);
    }
    fputc(']', f);
}
