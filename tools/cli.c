/* cli.c: helpers shared by the sluice subcommands (see cli.h). */
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

/* --- datasets -------------------------------------------------------- */

/* 1 when dir/name or dir/name.gz is a regular file. */
static int has_file_or_gz(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return 1;
    snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int cli_mnist_splits(const char *dir)
{
    int splits = 0;
    if (has_file_or_gz(dir, "train-images-idx3-ubyte"))
        splits |= CLI_SPLIT_TRAIN;
    if (has_file_or_gz(dir, "t10k-images-idx3-ubyte"))
        splits |= CLI_SPLIT_TEST;
    return splits;
}

int cli_detect_kind(const char *cmd, const char *dir, cli_kind *out)
{
    struct stat st;

    if (dir[0] == '\0') {
        cli_error(cmd, "the folder name is empty");
        return -1;
    }
    if (stat(dir, &st) != 0) {
        cli_error(cmd, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        cli_error(cmd, "%s: not a directory", dir);
        return -1;
    }
    *out = cli_mnist_splits(dir) != 0 ? CLI_KIND_MNIST : CLI_KIND_IMAGE_FOLDER;
    return 0;
}

void cli_image_folder_hint(const char *cmd, const char *dir)
{
    cli_error(cmd, "%s is not an MNIST folder either (no train-images-idx3-ubyte[.gz] "
              "or t10k-images-idx3-ubyte[.gz])", dir);
}

int cli_parse_usage(const char *cmd, const char *s, sl_mnist_usage *out)
{
    if (strcmp(s, "train") == 0)
        *out = SL_MNIST_TRAIN;
    else if (strcmp(s, "test") == 0)
        *out = SL_MNIST_TEST;
    else if (strcmp(s, "all") == 0)
        *out = SL_MNIST_ALL;
    else {
        cli_error(cmd, "--usage: expected train, test or all, got '%s'", s);
        return -1;
    }
    return 0;
}

const char *cli_usage_name(sl_mnist_usage usage)
{
    switch (usage) {
    case SL_MNIST_TRAIN: return "train";
    case SL_MNIST_TEST: return "test";
    case SL_MNIST_ALL: return "all";
    }
    return "?";
}

char *cli_spec_shape_str(char *buf, size_t len, const sl_tensor_spec *spec)
{
    size_t used = 0;

    /* Written by hand rather than with sl_shape_str() because unknown
     * sizes (-1) should read as "?". */
    used += (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < spec->ndim && used < len; d++) {
        const char *sep = (d > 0) ? ", " : "";
        if (spec->shape[d] < 0)
            used += (size_t)snprintf(buf + used, len - used, "%s?", sep);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64, sep,
                                     spec->shape[d]);
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
    return buf;
}

/* --- pipelines ------------------------------------------------------- */

static void add_step(cli_pipeline *p, cli_step step)
{
    /* Only the defaults call this, and they stay far below the limit. */
    if (p->nsteps < CLI_MAX_STEPS)
        p->steps[p->nsteps++] = step;
}

void cli_pipeline_default(cli_pipeline *p, const char *dir, cli_kind kind,
                          sl_mnist_usage usage)
{
    cli_step s;

    memset(p, 0, sizeof *p);
    p->dir = dir;
    p->kind = kind;
    p->usage = usage;
    p->source_shuffle = 1; /* MnistDataset / ImageFolderDataset default */
    p->num_samples = 0;
    p->seed = 0;
    p->pool_idle_mb = -1;
    p->batch = 32;
    p->drop_remainder = 1;
    cli_error_samples_default(&p->errors);

    if (kind == CLI_KIND_MNIST) {
        /* The seeds' LeNet preprocessing, op for op. */
        p->label_int32 = 1;
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESIZE;
        s.height = 32;
        s.width = 32;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESCALE;
        s.scale = 1.0 / 255.0;
        s.shift = 0.0;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESCALE;
        s.scale = 1.0 / 0.3081;
        s.shift = -0.1307 / 0.3081;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_HWC2CHW;
        add_step(p, s);
        p->shuffle = 10000;
    } else {
        /* A typical ImageNet-style training pipeline. */
        static const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255};
        static const double std[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
        p->label_int32 = 0; /* ImageFolder labels are int32 already */
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESIZE;
        s.height = 224;
        s.width = 224;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_FLIP;
        s.prob = 0.5;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_NORMALIZE;
        s.channels = 3;
        memcpy(s.mean, mean, sizeof mean);
        memcpy(s.std, std, sizeof std);
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_HWC2CHW;
        add_step(p, s);
        p->shuffle = 0;
    }
}

void cli_pipeline_clear_ops(cli_pipeline *p)
{
    p->label_int32 = 0;
    p->nsteps = 0;
}

/* Makes the op of one step; the status of the sl_op_*_new call. */
static int make_step_op(const cli_step *s, sl_op **op)
{
    switch (s->kind) {
    case CLI_STEP_RESIZE:
        return sl_op_resize_new(op, s->height, s->width, SL_INTER_LINEAR);
    case CLI_STEP_RESCALE:
        return sl_op_rescale_new(op, s->scale, s->shift);
    case CLI_STEP_NORMALIZE:
        return sl_op_normalize_new(op, s->mean, s->std, (int)s->channels);
    case CLI_STEP_HWC2CHW:
        return sl_op_hwc2chw_new(op);
    case CLI_STEP_FLIP:
        return sl_op_random_horizontal_flip_new(op, s->prob);
    case CLI_STEP_CROP:
        return sl_op_random_crop_new(op, s->height, s->width, s->padding);
    }
    return SL_EINVAL;
}

static const char *step_name(cli_step_kind kind)
{
    switch (kind) {
    case CLI_STEP_RESIZE: return "resize";
    case CLI_STEP_RESCALE: return "rescale";
    case CLI_STEP_NORMALIZE: return "normalize";
    case CLI_STEP_HWC2CHW: return "hwc2chw";
    case CLI_STEP_FLIP: return "random horizontal flip";
    case CLI_STEP_CROP: return "random crop";
    }
    return "?";
}

static int set_source(const cli_pipeline *p, int workers, sl_dataset *ds)
{
    sl_sampler_options sampler;

    sl_sampler_options_init(&sampler);
    sampler.shuffle = p->source_shuffle;
    sampler.seed = p->seed;
    sampler.num_samples = p->num_samples;

    if (p->kind == CLI_KIND_MNIST) {
        sl_mnist_options o;
        sl_mnist_options_init(&o);
        o.dataset_dir = p->dir;
        o.usage = p->usage;
        o.sampler = sampler;
        return sl_dataset_mnist(ds, &o);
    } else {
        sl_image_folder_options o;
        sl_image_folder_options_init(&o);
        o.dataset_dir = p->dir;
        o.decode = 1; /* every image op expects pixels, not file bytes */
        o.num_parallel_workers = workers;
        o.sampler = sampler;
        if (p->decode_max_pixels > 0)
            o.decode_max_pixels = p->decode_max_pixels;
        return sl_dataset_image_folder(ds, &o);
    }
}

/* The map of the image steps: makes every op, maps them, and drops our
 * references (the map holds its own). */
static int map_image_steps(const char *cmd, const cli_pipeline *p, int workers,
                           sl_dataset *ds)
{
    sl_op *ops[CLI_MAX_STEPS] = {NULL};
    int rc = SL_OK;
    size_t made = 0;

    for (; made < p->nsteps; made++) {
        rc = make_step_op(&p->steps[made], &ops[made]);
        if (rc != SL_OK) {
            cli_error(cmd, "cannot make the %s op: %s", step_name(p->steps[made].kind),
                      sl_strerror(rc));
            break;
        }
    }
    if (rc == SL_OK) {
        rc = sl_dataset_map(ds, ops, p->nsteps, "image", NULL, workers);
        if (rc != SL_OK)
            cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
    }
    for (size_t i = 0; i < made; i++)
        sl_op_release(ops[i]);
    return rc;
}

static int map_label_int32(const char *cmd, int workers, sl_dataset *ds)
{
    sl_op *op = NULL;
    int rc = sl_op_type_cast_new(&op, SL_INT32);

    if (rc != SL_OK) {
        cli_error(cmd, "cannot make the type cast op: %s", sl_strerror(rc));
        return rc;
    }
    rc = sl_dataset_map(ds, &op, 1, "label", NULL, workers);
    if (rc != SL_OK)
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
    sl_op_release(op);
    return rc;
}

int cli_pipeline_source(const char *cmd, const cli_pipeline *p, int workers, sl_dataset **out)
{
    sl_dataset *ds = sl_dataset_new();
    int rc;

    *out = NULL;
    if (ds == NULL) {
        cli_error(cmd, "out of memory");
        return SL_ENOMEM;
    }
    rc = set_source(p, workers, ds);
    if (rc != SL_OK) {
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        if (p->kind == CLI_KIND_IMAGE_FOLDER && rc == SL_EFORMAT)
            cli_image_folder_hint(cmd, p->dir);
        sl_dataset_free(ds);
        return rc;
    }
    sl_dataset_set_seed(ds, p->seed);
    if ((rc = cli_set_error_samples(cmd, &p->errors, p->report, ds)) != SL_OK) {
        sl_dataset_free(ds);
        return rc;
    }
    if (p->pool_idle_mb >= 0)
        sl_dataset_set_pool_idle_limit(ds, (size_t)p->pool_idle_mb << 20);
    *out = ds;
    return SL_OK;
}

int cli_pipeline_add_nodes(const char *cmd, const cli_pipeline *p, int workers, sl_dataset *ds)
{
    int rc;
    /* As in the seeds: the label cast comes first, then the image ops. */
    if (p->label_int32 && (rc = map_label_int32(cmd, workers, ds)) != SL_OK)
        return rc;
    if (p->nsteps > 0 && (rc = map_image_steps(cmd, p, workers, ds)) != SL_OK)
        return rc;
    if (p->shuffle > 0 && (rc = sl_dataset_shuffle(ds, p->shuffle)) != SL_OK) {
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        return rc;
    }
    if (p->batch > 0 &&
        (rc = sl_dataset_batch(ds, p->batch, p->drop_remainder, workers)) != SL_OK) {
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        return rc;
    }
    return SL_OK;
}

/* With every CPU computing, each pipeline thread runs by taking a CPU from
 * a compute thread, and the other compute thread then waits for that one at
 * the end of the op. One worker keeps that cost down: it spends half the
 * CPU time per MNIST image that two do (their shared queues and pool locks
 * contend), and still makes batches 20 times as fast as a 2-thread LeNet
 * step takes them (bench sink, AMD EPYC, 2 CPUs: data only ~900k images/s
 * on one worker against ~40k samples/s of compute). */
int cli_training_workers(int compute_threads)
{
    sl_thread_budget b;
    sl_thread_budget_default(&b);
    return compute_threads >= b.cpus ? 1 : b.pipeline_workers;
}

int cli_pipeline_build(const char *cmd, const cli_pipeline *p, int workers,
                       sl_dataset **out)
{
    int rc = cli_pipeline_source(cmd, p, workers, out);
    if (rc == SL_OK && (rc = cli_pipeline_add_nodes(cmd, p, workers, *out)) != SL_OK) {
        sl_dataset_free(*out);
        *out = NULL;
    }
    return rc;
}

/* --- training -------------------------------------------------------- */

static int step_limit_step(void *self, const sl_train_info *info)
{
    const cli_step_limit *limit = self;
    return info->global_step - limit->start >= limit->steps ? 1 : 0;
}

sl_callback cli_step_limit_callback(cli_step_limit *limit, const sl_model *m, int64_t steps)
{
    sl_callback cb;
    limit->steps = steps;
    limit->start = sl_model_global_step(m);
    memset(&cb, 0, sizeof cb);
    cb.self = limit;
    cb.step_end = step_limit_step;
    return cb;
}
