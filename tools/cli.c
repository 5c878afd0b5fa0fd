/* cli.c: helpers shared by the sluice subcommands (see cli.h): messages
 * and the parsing of option values. Datasets, pipelines and training are
 * cli_pipeline.c's. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* --- messages -------------------------------------------------------- */

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "sluice: %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The long option that name[0..len) names, exactly or as an abbreviation
 * of one option only; NULL otherwise. *nmatch gets the number of options
 * it could abbreviate (1 for an exact name). */
static const struct option *find_long_option(const struct option *longopts,
                                             const char *name, size_t len, int *nmatch)
{
    const struct option *found = NULL;

    *nmatch = 0;
    for (const struct option *o = longopts; o->name != NULL; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (o->name[len] == '\0') {
            *nmatch = 1;
            return o;
        }
        found = o;
        (*nmatch)++;
    }
    return *nmatch == 1 ? found : NULL;
}

/* 1 when getopt_long's error was about the long option arg (a word
 * starting with "--"), 0 when it was about a short option. For a long
 * option, getopt_long leaves optopt 0 (unknown or ambiguous) or the
 * option's val (argument missing or unwanted); for a short one, optopt is
 * its letter. The word is argv[optind - 1] except inside a cluster of
 * short options ("-xy"), which getopt_long has not stepped past yet: there
 * argv[optind - 1] is the word before, maybe a long option. */
static int long_option_error(const char *arg, const struct option *longopts)
{
    const struct option *o;
    int nmatch;

    if (strncmp(arg, "--", 2) != 0)
        return 0;
    if (optopt == 0)
        return 1;
    o = find_long_option(longopts, arg + 2, strcspn(arg + 2, "="), &nmatch);
    return o != NULL && o->flag == NULL && o->val == optopt;
}

void cli_bad_option(const char *cmd, int c, char *const *argv,
                    const struct option *longopts)
{
    /* With opterr = 0 getopt_long leaves the offending word at
     * argv[optind - 1] (but see long_option_error); for a short option
     * optopt holds its letter. */
    const char *arg = (optind > 0) ? argv[optind - 1] : "?";
    size_t len = strcspn(arg, "="); /* "--data=x": name the option only */
    const struct option *o;
    char names[256];
    size_t used = 0;
    int nmatch;

    if (!long_option_error(arg, longopts)) {
        if (c == ':')
            cli_error(cmd, "option '-%c' needs an argument (see --help)", optopt);
        else
            cli_error(cmd, "unknown option '-%c' (see --help)", optopt);
        return;
    }
    if (c == ':') {
        cli_error(cmd, "option '%.*s' needs an argument (see --help)", (int)len, arg);
        return;
    }
    if (len == 2) /* "--=x" has no name to cut out */
        len = strlen(arg);
    /* '?' for a long option: unknown, ambiguous, or "--json=1" for an
     * option that takes no argument. */
    o = find_long_option(longopts, arg + 2, len - 2, &nmatch);
    if (o != NULL && arg[len] == '=') {
        cli_error(cmd, "option '--%s' takes no argument (see --help)", o->name);
        return;
    }
    if (nmatch < 2) {
        cli_error(cmd, "unknown option '%.*s' (see --help)", (int)len, arg);
        return;
    }
    names[0] = '\0';
    for (o = longopts; o->name != NULL && used < sizeof names; o++)
        if (strncmp(o->name, arg + 2, len - 2) == 0)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s--%s",
                                     used ? ", " : "", o->name);
    cli_error(cmd, "option '%.*s' is ambiguous: %s (see --help)", (int)len, arg, names);
}

const char *cli_lib_message(const char *msg, int status)
{
    return (msg != NULL && msg[0] != '\0') ? msg : sl_strerror(status);
}

/* The length (2..4) of the well-formed UTF-8 sequence that starts with the
 * byte p[0] >= 0x80, or 0 when there is none (a stray or overlong byte, a
 * surrogate, a sequence cut short by the end of the string). */
static size_t utf8_sequence_len(const unsigned char *p)
{
    uint32_t cp, min;
    size_t n;

    if ((p[0] & 0xE0) == 0xC0) {
        n = 2;
        cp = p[0] & 0x1Fu;
        min = 0x80;
    } else if ((p[0] & 0xF0) == 0xE0) {
        n = 3;
        cp = p[0] & 0x0Fu;
        min = 0x800;
    } else if ((p[0] & 0xF8) == 0xF0) {
        n = 4;
        cp = p[0] & 0x07u;
        min = 0x10000;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            /* Other control characters must be escaped. File names are
             * bytes: UTF-8 passes through, anything else (a Latin-1 name)
             * becomes U+FFFD, as JSON text must be UTF-8. */
            if (*p < 0x20) {
                fprintf(f, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, f);
            } else {
                size_t n = utf8_sequence_len(p);
                if (n == 0) {
                    fputs("\\ufffd", f);
                } else {
                    fwrite(p, 1, n, f);
                    p += n - 1;
                }
            }
        }
    }
    fputc('"', f);
}

void cli_pool_json(FILE *f, const sl_pool_stats *ps)
{
    fprintf(f,
            "{\"in_use_bytes\": %" PRIu64 ", \"idle_bytes\": %" PRIu64
            ", \"peak_in_use_bytes\": %" PRIu64 ", \"idle_cap_bytes\": %" PRIu64
            ", \"system_allocs\": %" PRIu64 ", \"system_frees\": %" PRIu64
            ", \"cap_frees\": %" PRIu64 "}",
            ps->in_use_bytes, ps->idle_bytes, ps->peak_in_use_bytes, ps->idle_cap_bytes,
            ps->system_allocs, ps->system_frees, ps->cap_frees);
}

int cli_stderr_is_tty(void)
{
    return isatty(STDERR_FILENO);
}

double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --- numbers --------------------------------------------------------- */

int cli_parse_transfer(const char *cmd, const char *s, sl_transfer_mode *out)
{
    if (sl_transfer_mode_parse(s, out) == SL_OK)
        return 0;
    cli_error(cmd, "--transfer: '%s' is not auto, thread or inline", s);
    return -1;
}

int cli_parse_int64(const char *cmd, const char *what, const char *s, int64_t min,
                    int64_t max, int64_t *out)
{
    char *end = NULL;
    long long v;

    /* strtoll skips leading blanks and accepts them silently; refuse them so
     * that " 3" is as wrong as "3 ". */
    if (s == NULL || *s == '\0' || *s == ' ' || *s == '\t') {
        cli_error(cmd, "%s: expected an integer, got '%s'", what, s ? s : "");
        return -1;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end != '\0') {
        cli_error(cmd, "%s: expected an integer, got '%s'", what, s);
        return -1;
    }
    if (errno == ERANGE || v < min || v > max) {
        cli_error(cmd, "%s: %s is out of range [%" PRId64 ", %" PRId64 "]", what, s, min,
                  max);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* A finite real number making up all of s[0..len). */
static int parse_real(const char *s, size_t len, double *out)
{
    char buf[64];
    char *end = NULL;
    double v;

    if (len == 0 || len >= sizeof buf || s[0] == ' ' || s[0] == '\t')
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtod(buf, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* s[0..len) as a real or a fraction "A/B". */
static int parse_real_or_fraction(const char *s, size_t len, double *out)
{
    const char *slash = memchr(s, '/', len);
    double num, den;

    if (slash == NULL)
        return parse_real(s, len, out);
    if (parse_real(s, (size_t)(slash - s), &num) != 0 ||
        parse_real(slash + 1, len - (size_t)(slash - s) - 1, &den) != 0 || den == 0.0)
        return -1;
    *out = num / den;
    return isfinite(*out) ? 0 : -1;
}

int cli_parse_double(const char *cmd, const char *what, const char *s, double *out)
{
    if (s == NULL || parse_real_or_fraction(s, strlen(s), out) != 0) {
        cli_error(cmd, "%s: expected a number (or A/B), got '%s'", what, s ? s : "");
        return -1;
    }
    return 0;
}

/* Calls parse_item on each comma-separated item of s (at most max), with
 * its text, length and index; parse_item reports its own errors. Returns 0
 * and the count in *n, or -1. */
typedef int (*list_item_fn)(const char *cmd, const char *what, const char *list,
                            const char *item, size_t len, size_t index, void *ctx);

static int parse_list(const char *cmd, const char *what, const char *s, size_t max, size_t *n,
                      list_item_fn parse_item, void *ctx)
{
    const char *p = s;
    size_t count = 0;

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (count == max) {
            cli_error(cmd, "%s: more than %zu values in '%s'", what, max, s);
            return -1;
        }
        if (parse_item(cmd, what, s, p, len, count, ctx) != 0)
            return -1;
        count++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    *n = count;
    return 0;
}

static int double_item(const char *cmd, const char *what, const char *list, const char *item,
                       size_t len, size_t index, void *ctx)
{
    if (parse_real_or_fraction(item, len, &((double *)ctx)[index]) != 0) {
        cli_error(cmd, "%s: expected a comma list of numbers, got '%s'", what, list);
        return -1;
    }
    return 0;
}

int cli_parse_double_list(const char *cmd, const char *what, const char *s, double *out,
                          size_t max, size_t *n)
{
    return parse_list(cmd, what, s, max, n, double_item, out);
}

typedef struct int64_items {
    int64_t min, max;
    int64_t *out;
} int64_items;

static int int64_item(const char *cmd, const char *what, const char *list, const char *item,
                      size_t len, size_t index, void *ctx)
{
    const int64_items *it = ctx;
    char text[32];
    if (len == 0 || len >= sizeof text) {
        cli_error(cmd, "%s: expected a comma list of integers, got '%s'", what, list);
        return -1;
    }
    memcpy(text, item, len);
    text[len] = '\0';
    return cli_parse_int64(cmd, what, text, it->min, it->max, &it->out[index]);
}

int cli_parse_int64_list(const char *cmd, const char *what, const char *s, int64_t min,
                         int64_t vmax, int64_t *out, size_t max, size_t *n)
{
    int64_items items = {min, vmax, out};
    return parse_list(cmd, what, s, max, n, int64_item, &items);
}

int cli_parse_hw(const char *cmd, const char *what, const char *s, int64_t *h, int64_t *w)
{
    const char *x = strchr(s, 'x');
    char item[32];
    size_t len;

    if (x == NULL) {
        if (cli_parse_int64(cmd, what, s, 1, INT32_MAX, h) != 0)
            return -1;
        *w = *h;
        return 0;
    }
    len = (size_t)(x - s);
    if (len == 0 || len >= sizeof item || x[1] == '\0' || strchr(x + 1, 'x') != NULL) {
        cli_error(cmd, "%s: expected H or HxW, got '%s'", what, s);
        return -1;
    }
    memcpy(item, s, len);
    item[len] = '\0';
    if (cli_parse_int64(cmd, what, item, 1, INT32_MAX, h) != 0 ||
        cli_parse_int64(cmd, what, x + 1, 1, INT32_MAX, w) != 0)
        return -1;
    return 0;
}

int cli_parse_sim_network(const char *cmd, const char *arg, sl_train_options *o)
{
    double bw = 0, lat = -1;
    char end = 0;
    if (sscanf(arg, "%lf,%lf%c", &bw, &lat, &end) != 2 || !(bw > 0) || bw > 1e6 ||
        !(lat >= 0) || lat > 1e6) {
        cli_error(cmd, "--sim-network '%s': give BANDWIDTH,LATENCY in Gbit/s and "
                       "microseconds, such as 25,5 (a bandwidth > 0, a latency >= 0)",
                  arg);
        return -1;
    }
    o->sim_network_gbit_s = bw;
    o->sim_network_latency_us = lat;
    return 0;
}
