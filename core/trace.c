/* trace.c: the profiler's tracks and the Chrome trace writer (see
 * sluice/profiler.h and core/trace.h). A track is one thread's ring of
 * fixed-size events; opening a track and interning a name take the
 * profiler's lock, recording takes none. */
#include "core/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"

#define DEFAULT_EVENTS_PER_THREAD 65536

enum { EVENT_SLICE, EVENT_COUNTER };

typedef struct trace_event {
    const char *name;
    double t0_ms;
    double t1_ms;     /* a slice's end; a counter's value */
    int64_t epoch;
    int64_t batch;    /* -1: none */
    int kind;
} trace_event;

struct sl__track {
    sl__track *next;
    char name[96];
    int tid;
    trace_event *ring;
    size_t cap;
    uint64_t written; /* events recorded; the newest cap of them are kept */
};

typedef struct interned {
    struct interned *next;
    char s[];
} interned;

struct sl_profiler {
    pthread_mutex_t lock;
    size_t events_per_thread;
    double origin_ms; /* time 0 of the trace: when the profiler was made */
    sl__track *tracks; /* newest first */
    int ntracks;
    interned *strings;
};

int sl_profiler_new(sl_profiler **out, size_t events_per_thread)
{
    sl_profiler *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return SL_ENOMEM;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return SL_ENOMEM;
    }
    p->events_per_thread = events_per_thread ? events_per_thread : DEFAULT_EVENTS_PER_THREAD;
    p->origin_ms = sl__now_ms();
    *out = p;
    return SL_OK;
}

void sl_profiler_free(sl_profiler *p)
{
    if (!p)
        return;
    while (p->tracks) {
        sl__track *t = p->tracks;
        p->tracks = t->next;
        free(t->ring);
        free(t);
    }
    while (p->strings) {
        interned *s = p->strings;
        p->strings = s->next;
        free(s);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

sl__track *sl__track_open(sl_profiler *p, const char *thread_name)
{
    sl__track *t;
    if (!p)
        return NULL;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ring = malloc(p->events_per_thread * sizeof *t->ring);
    if (!t->ring) {
        free(t);
        return NULL;
    }
    t->cap = p->events_per_thread;
    snprintf(t->name, sizeof t->name, "%s", thread_name);
    pthread_mutex_lock(&p->lock);
    t->tid = ++p->ntracks;
    t->next = p->tracks;
    p->tracks = t;
    pthread_mutex_unlock(&p->lock);
    return t;
}

const char *sl__trace_intern(sl_profiler *p, const char *s)
{
    size_t n;
    interned *in;
    if (!p)
        return NULL;
    n = strlen(s) + 1;
    pthread_mutex_lock(&p->lock);
    for (in = p->strings; in; in = in->next)
        if (strcmp(in->s, s) == 0)
            break;
    if (!in && (in = malloc(sizeof *in + n)) != NULL) {
        memcpy(in->s, s, n);
        in->next = p->strings;
        p->strings = in;
    }
    pthread_mutex_unlock(&p->lock);
    return in ? in->s : "?";
}

static void record(sl__track *t, int kind, const char *name, double t0, double t1, int64_t epoch,
                   int64_t batch)
{
    trace_event *e = &t->ring[t->written % t->cap];
    e->name = name;
    e->t0_ms = t0;
    e->t1_ms = t1;
    e->epoch = epoch;
    e->batch = batch;
    e->kind = kind;
    t->written++;
}

void sl__trace_slice(sl__track *t, const char *name, double t0_ms, double t1_ms, int64_t epoch,
                     int64_t batch)
{
    if (t)
        record(t, EVENT_SLICE, name, t0_ms, t1_ms, epoch, batch);
}

void sl__trace_counter(sl__track *t, const char *name, double t_ms, double value)
{
    if (t)
        record(t, EVENT_COUNTER, name, t_ms, value, -1, -1);
}

void sl_profiler_counts(sl_profiler *p, uint64_t *recorded, uint64_t *dropped)
{
    *recorded = *dropped = 0;
    pthread_mutex_lock(&p->lock);
    for (const sl__track *t = p->tracks; t; t = t->next) {
        *recorded += t->written;
        if (t->written > t->cap)
            *dropped += t->written - t->cap;
    }
    pthread_mutex_unlock(&p->lock);
}

/* s as a JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void write_event(FILE *f, const sl_profiler *p, const sl__track *t, const trace_event *e)
{
    fputs(",\n{\"name\": ", f);
    json_string(f, e->name);
    if (e->kind == EVENT_COUNTER) {
        fprintf(f, ", \"ph\": \"C\", \"ts\": %.3f, \"pid\": 1, \"tid\": %d, \"args\": {\"value\": %g}}",
                (e->t0_ms - p->origin_ms) * 1e3, t->tid, e->t1_ms);
        return;
    }
    fprintf(f, ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": %d",
            (e->t0_ms - p->origin_ms) * 1e3, (e->t1_ms - e->t0_ms) * 1e3, t->tid);
    if (e->batch >= 0)
        fprintf(f, ", \"args\": {\"epoch\": %lld, \"batch\": %lld}", (long long)e->epoch,
                (long long)e->batch);
    fputc('}', f);
}

int sl_profiler_write_trace(sl_profiler *p, const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "w");
    int failed;
    if (!f) {
        if (err && err_len)
            snprintf(err, err_len, "profiler: cannot write %s: %s", path, strerror(errno));
        return SL_EIO;
    }
    pthread_mutex_lock(&p->lock);
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n"
          "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"sluice\"}}",
          f);
    for (const sl__track *t = p->tracks; t; t = t->next) {
        uint64_t first = t->written > t->cap ? t->written - t->cap : 0;
        fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, "
                   "\"args\": {\"name\": ",
                t->tid);
        json_string(f, t->name);
        fprintf(f, "}},\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 1, "
                   "\"tid\": %d, \"args\": {\"sort_index\": %d}}",
                t->tid, t->tid);
        for (uint64_t i = first; i < t->written; i++)
            write_event(f, p, t, &t->ring[i % t->cap]);
    }
    pthread_mutex_unlock(&p->lock);
    fputs("\n]}\n", f);
    failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        if (err && err_len)
            snprintf(err, err_len, "profiler: writing %s failed", path);
        return SL_EIO;
    }
    return SL_OK;
}
