/* inspect.c: `sluice inspect DIR`: what a dataset folder holds (kind,
 * samples, columns, classes), and with --verify whether every sample can
 * actually be read. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sluice/sluice.h"
#include "cli.h"

#define CMD "inspect"
/* IDX labels are bytes, so 256 counters hold every possible MNIST label. */
#define MAX_LABELS 256

typedef struct inspect_args {
    const char *dir;
    int usage_given;
    sl_mnist_usage usage;
    int verify;
    int json;
} inspect_args;

/* What --verify found. */
typedef struct verify_result {
    int ok;                 /* 1: every sample was read without a problem */
    int64_t samples;        /* samples read before the end or the problem */
    char message[1024];     /* the first problem, when ok is 0 */
    int have_labels;        /* label_counts is filled (MNIST) */
    int64_t label_counts[MAX_LABELS];
} verify_result;

/* Sample counts of the MNIST splits that usage covers (-1: not covered). */
typedef struct split_rows {
    int64_t train, test;
} split_rows;

void cli_inspect_usage(FILE *f)
{
    fputs("Usage: sluice inspect DIR [--usage train|test|all] [--verify] [--json]\n"
          "\n"
          "Describes a dataset folder: MNIST when DIR holds train-images-idx3-ubyte[.gz]\n"
          "or t10k-images-idx3-ubyte[.gz], ImageFolder (one sub-folder per class)\n"
          "otherwise. Prints the kind, the number of samples, the columns with their\n"
          "dtype and shape ('?' where only the data knows), and the classes.\n"
          "\n"
          "Options:\n"
          "  --usage U   MNIST split: train, test or all (default: every split present)\n"
          "  --verify    read (and for ImageFolder decode) every sample; report the first\n"
          "              problem (exit 1) or 'verified N samples, no problems'; for MNIST\n"
          "              also count the samples of each label\n"
          "  --json      print one JSON object instead of text\n"
          "  -h, --help  show this help and exit\n",
          f);
}

static int parse_args(int argc, char **argv, inspect_args *a)
{
    static const struct option longopts[] = {
        {"usage", required_argument, NULL, 'u'},
        {"verify", no_argument, NULL, 'v'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;

    memset(a, 0, sizeof *a);
    optind = 0; /* GNU: restart scanning on this new argv */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'u':
            if (cli_parse_usage(CMD, optarg, &a->usage) != 0)
                return CLI_EXIT_USAGE;
            a->usage_given = 1;
            break;
        case 'v': a->verify = 1; break;
        case 'j': a->json = 1; break;
        case 'h':
            cli_inspect_usage(stdout);
            return -1; /* done, exit 0 */
        default:
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        cli_error(CMD, argc - optind == 0 ? "which folder? (see --help)"
                                          : "expected one folder, got %d arguments",
                  argc - optind);
        return CLI_EXIT_USAGE;
    }
    a->dir = argv[optind];
    return CLI_EXIT_OK;
}

/* A source-only dataset for dir; shuffle 0 so --verify reads in file order.
 * On failure prints the library's message and returns NULL. */
static sl_dataset *open_source(const char *dir, cli_kind kind, sl_mnist_usage usage)
{
    sl_dataset *ds;
    int rc;

    if (sl_dataset_new(&ds) != SL_OK) {
        cli_error(CMD, "out of memory");
        return NULL;
    }
    if (kind == CLI_KIND_MNIST) {
        sl_mnist_options o;
        sl_mnist_options_init(&o);
        o.dataset_dir = dir;
        o.usage = usage;
        o.sampler.shuffle = 0;
        rc = sl_dataset_mnist(ds, &o);
    } else {
        sl_image_folder_options o;
        sl_image_folder_options_init(&o);
        o.dataset_dir = dir;
        /* Decoding costs nothing until an iterator runs, and it makes the
         * column spec describe pixels and --verify catch corrupt JPEGs. */
        o.decode = 1;
        o.sampler.shuffle = 0;
        rc = sl_dataset_image_folder(ds, &o);
    }
    if (rc != SL_OK) {
        cli_error(CMD, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        if (kind == CLI_KIND_IMAGE_FOLDER && rc == SL_EFORMAT)
            cli_image_folder_hint(CMD, dir);
        sl_dataset_free(ds);
        return NULL;
    }
    return ds;
}

/* The number of samples in one MNIST split, from its headers; -1 on error. */
static int64_t mnist_split_count(const char *dir, sl_mnist_usage usage)
{
    sl_dataset *ds = open_source(dir, CLI_KIND_MNIST, usage);
    int64_t n;

    if (ds == NULL)
        return -1;
    n = sl_dataset_source_rows(ds);
    sl_dataset_free(ds);
    return n;
}

/* The split sizes behind usage, so "all" can show train and test apart. */
static int count_splits(const char *dir, sl_mnist_usage usage, split_rows *out)
{
    out->train = -1;
    out->test = -1;
    if (usage == SL_MNIST_ALL || usage == SL_MNIST_TRAIN) {
        out->train = mnist_split_count(dir, SL_MNIST_TRAIN);
        if (out->train < 0)
            return -1;
    }
    if (usage == SL_MNIST_ALL || usage == SL_MNIST_TEST) {
        out->test = mnist_split_count(dir, SL_MNIST_TEST);
        if (out->test < 0)
            return -1;
    }
    return 0;
}

/* The value of a one-element integer tensor (a label). */
static int tensor_scalar_int(const sl_tensor *t, int64_t *v)
{
    const void *d = sl_tensor_data(t);

    if (sl_tensor_numel(t) != 1)
        return -1;
    switch (sl_tensor_dtype(t)) {
    case SL_UINT8: *v = *(const uint8_t *)d; return 0;
    case SL_INT32: *v = *(const int32_t *)d; return 0;
    case SL_UINT32: *v = *(const uint32_t *)d; return 0;
    case SL_INT64: *v = *(const int64_t *)d; return 0;
    default: return -1;
    }
}

static void progress(int64_t done, int64_t total)
{
    fprintf(stderr, "\rinspect: verifying %" PRId64 "/%" PRId64 " samples", done, total);
}

static void progress_clear(void)
{
    fprintf(stderr, "\r%60s\r", "");
}

/* Counts the label of row into r; a label no counter can hold is a problem. */
static int count_label(const sl_row *row, int label_col, verify_result *r)
{
    int64_t label;

    if (label_col < 0 || (size_t)label_col >= row->ncolumns ||
        tensor_scalar_int(row->columns[label_col], &label) != 0) {
        snprintf(r->message, sizeof r->message,
                 "sample %" PRId64 ": the label is not a single integer", r->samples);
        return -1;
    }
    if (label < 0 || label >= MAX_LABELS) {
        snprintf(r->message, sizeof r->message,
                 "sample %" PRId64 ": label %" PRId64 " is outside [0, %d)", r->samples,
                 label, MAX_LABELS);
        return -1;
    }
    r->label_counts[label]++;
    return 0;
}

/* Reads every sample of ds once; the first problem (or success) goes into
 * r, to be printed by the caller. */
static void verify(sl_dataset *ds, cli_kind kind, verify_result *r)
{
    const int64_t expected = sl_dataset_source_rows(ds);
    const int tty = cli_stderr_is_tty();
    const int label_col = sl_dataset_column_index(ds, "label");
    double last_progress = cli_now_ms();
    sl_iterator *it = NULL;
    sl_row row;
    int rc;

    memset(r, 0, sizeof *r);
    memset(&row, 0, sizeof row);
    r->have_labels = (kind == CLI_KIND_MNIST);

    rc = sl_iterator_new(&it, ds, NULL);
    if (rc != SL_OK) {
        snprintf(r->message, sizeof r->message, "%s",
                 cli_lib_message(sl_dataset_last_error(ds), rc));
        return;
    }
    for (;;) {
        rc = sl_iterator_next(it, &row);
        if (rc != SL_OK)
            break;
        if (r->have_labels && count_label(&row, label_col, r) != 0) {
            sl_row_clear(&row);
            goto done;
        }
        sl_row_clear(&row);
        r->samples++;
        /* Checking the clock every 256 rows keeps the progress line cheap. */
        if (tty && (r->samples & 255) == 0 && cli_now_ms() - last_progress > 100) {
            progress(r->samples, expected);
            last_progress = cli_now_ms();
        }
    }
    if (rc < 0) {
        snprintf(r->message, sizeof r->message, "%s",
                 cli_lib_message(sl_iterator_last_error(it), rc));
    } else if (r->samples != expected) {
        snprintf(r->message, sizeof r->message,
                 "read %" PRId64 " samples but the headers announce %" PRId64, r->samples,
                 expected);
    } else {
        r->ok = 1;
    }
done:
    if (tty)
        progress_clear();
    sl_iterator_free(it);
}

/* --- text output ----------------------------------------------------- */

static void print_columns_text(const sl_dataset *ds)
{
    size_t n = sl_dataset_num_columns(ds);

    printf("columns:\n");
    for (size_t i = 0; i < n; i++) {
        sl_tensor_spec spec;
        char shape[128];
        if (sl_dataset_column_spec(ds, i, &spec) != SL_OK) {
            printf("  %-8s (unknown)\n", sl_dataset_column_name(ds, i));
            continue;
        }
        printf("  %-8s %-8s %s\n", sl_dataset_column_name(ds, i), sl_dtype_name(spec.dtype),
               cli_spec_shape_str(shape, sizeof shape, &spec));
    }
}

static void print_classes_text(const sl_dataset *ds)
{
    size_t n = sl_dataset_num_classes(ds);

    printf("classes:  %zu\n", n);
    if (n == 0)
        return;
    printf("  %6s %8s  %s\n", "label", "count", "name");
    for (size_t i = 0; i < n; i++) {
        const char *name = NULL;
        int32_t label = 0;
        int64_t count = 0;
        if (sl_dataset_class_info(ds, i, &name, &label, &count) != SL_OK)
            continue;
        printf("  %6" PRId32 " %8" PRId64 "  %s\n", label, count, name);
    }
}

static void print_text(const inspect_args *a, const sl_dataset *ds, cli_kind kind,
                       sl_mnist_usage usage, const split_rows *splits,
                       const verify_result *v)
{
    const char *src_kind = sl_dataset_source_kind(ds);

    printf("dataset:  %s\n", a->dir);
    printf("kind:     %s\n", src_kind ? src_kind : "?");
    if (kind == CLI_KIND_MNIST) {
        printf("usage:    %s\n", cli_usage_name(usage));
        printf("samples:  %" PRId64, sl_dataset_source_rows(ds));
        if (splits->train >= 0 && splits->test >= 0)
            printf(" (train %" PRId64 ", test %" PRId64 ")", splits->train, splits->test);
        printf("\n");
    } else {
        printf("samples:  %" PRId64 "\n", sl_dataset_source_rows(ds));
    }
    print_columns_text(ds);
    if (kind == CLI_KIND_IMAGE_FOLDER)
        print_classes_text(ds);
    if (v == NULL)
        return;
    if (v->have_labels && v->ok) {
        printf("label counts:\n  %6s %8s\n", "label", "count");
        for (int l = 0; l < MAX_LABELS; l++)
            if (v->label_counts[l] > 0)
                printf("  %6d %8" PRId64 "\n", l, v->label_counts[l]);
    }
    if (v->ok)
        printf("verified %" PRId64 " samples, no problems\n", v->samples);
}

/* --- JSON output ----------------------------------------------------- */

static void print_columns_json(const sl_dataset *ds)
{
    size_t n = sl_dataset_num_columns(ds);

    printf("\"columns\": [");
    for (size_t i = 0; i < n; i++) {
        sl_tensor_spec spec;
        int known = sl_dataset_column_spec(ds, i, &spec) == SL_OK;
        printf("%s{\"name\": ", i ? ", " : "");
        cli_json_string(stdout, sl_dataset_column_name(ds, i));
        if (!known) {
            printf(", \"dtype\": null, \"shape\": null}");
            continue;
        }
        printf(", \"dtype\": ");
        cli_json_string(stdout, sl_dtype_name(spec.dtype));
        /* An unknown size is null: JSON readers should not mistake -1 for
         * a size. */
        printf(", \"shape\": [");
        for (int d = 0; d < spec.ndim; d++) {
            if (spec.shape[d] < 0)
                printf("%snull", d ? ", " : "");
            else
                printf("%s%" PRId64, d ? ", " : "", spec.shape[d]);
        }
        printf("]}");
    }
    printf("]");
}

static void print_classes_json(const sl_dataset *ds)
{
    size_t n = sl_dataset_num_classes(ds);
    int first = 1;

    printf(", \"classes\": [");
    for (size_t i = 0; i < n; i++) {
        const char *name = NULL;
        int32_t label = 0;
        int64_t count = 0;
        if (sl_dataset_class_info(ds, i, &name, &label, &count) != SL_OK)
            continue;
        printf("%s{\"name\": ", first ? "" : ", ");
        cli_json_string(stdout, name);
        printf(", \"label\": %" PRId32 ", \"count\": %" PRId64 "}", label, count);
        first = 0;
    }
    printf("]");
}

static void print_verify_json(const verify_result *v)
{
    printf(", \"verify\": {\"ok\": %s, \"samples\": %" PRId64 ", \"error\": ",
           v->ok ? "true" : "false", v->samples);
    if (v->ok)
        printf("null");
    else
        cli_json_string(stdout, v->message);
    printf("}");
    if (v->have_labels && v->ok) {
        int first = 1;
        printf(", \"label_counts\": {");
        for (int l = 0; l < MAX_LABELS; l++) {
            if (v->label_counts[l] == 0)
                continue;
            printf("%s\"%d\": %" PRId64, first ? "" : ", ", l, v->label_counts[l]);
            first = 0;
        }
        printf("}");
    }
}

static void print_json(const inspect_args *a, const sl_dataset *ds, cli_kind kind,
                       sl_mnist_usage usage, const split_rows *splits,
                       const verify_result *v)
{
    const char *src_kind = sl_dataset_source_kind(ds);

    printf("{\"dataset\": ");
    cli_json_string(stdout, a->dir);
    printf(", \"kind\": ");
    cli_json_string(stdout, src_kind ? src_kind : "?");
    if (kind == CLI_KIND_MNIST) {
        printf(", \"usage\": \"%s\"", cli_usage_name(usage));
        printf(", \"samples\": %" PRId64 ", \"splits\": {", sl_dataset_source_rows(ds));
        if (splits->train >= 0)
            printf("\"train\": %" PRId64 "%s", splits->train, splits->test >= 0 ? ", " : "");
        if (splits->test >= 0)
            printf("\"test\": %" PRId64, splits->test);
        printf("}, ");
    } else {
        printf(", \"samples\": %" PRId64 ", ", sl_dataset_source_rows(ds));
    }
    print_columns_json(ds);
    if (kind == CLI_KIND_IMAGE_FOLDER)
        print_classes_json(ds);
    if (v != NULL)
        print_verify_json(v);
    printf("}\n");
}

/* --- main ------------------------------------------------------------ */

/* The MNIST split to read: the one asked for, or every split present. */
static sl_mnist_usage pick_usage(const inspect_args *a)
{
    int splits;

    if (a->usage_given)
        return a->usage;
    splits = cli_mnist_splits(a->dir);
    if (splits == CLI_SPLIT_TRAIN)
        return SL_MNIST_TRAIN;
    if (splits == CLI_SPLIT_TEST)
        return SL_MNIST_TEST;
    return SL_MNIST_ALL;
}

int cli_inspect_main(int argc, char **argv)
{
    inspect_args a;
    cli_kind kind;
    sl_mnist_usage usage = SL_MNIST_ALL;
    split_rows splits = {-1, -1};
    verify_result result;
    verify_result *v = NULL; /* &result when --verify ran */
    sl_dataset *ds = NULL;
    int rc = parse_args(argc, argv, &a);

    if (rc < 0)
        return CLI_EXIT_OK; /* --help */
    if (rc != CLI_EXIT_OK)
        return rc;
    if (cli_detect_kind(CMD, a.dir, &kind) != 0)
        return CLI_EXIT_FAIL;
    if (kind == CLI_KIND_MNIST)
        usage = pick_usage(&a);
    else if (a.usage_given) {
        cli_error(CMD, "--usage applies to MNIST folders only; %s is an ImageFolder", a.dir);
        return CLI_EXIT_USAGE;
    }

    ds = open_source(a.dir, kind, usage);
    if (ds == NULL)
        return CLI_EXIT_FAIL;
    if (kind == CLI_KIND_MNIST && count_splits(a.dir, usage, &splits) != 0) {
        sl_dataset_free(ds);
        return CLI_EXIT_FAIL;
    }
    if (a.verify) {
        v = &result;
        verify(ds, kind, v);
    }

    if (a.json)
        print_json(&a, ds, kind, usage, &splits, v);
    else
        print_text(&a, ds, kind, usage, &splits, v);
    rc = CLI_EXIT_OK;
    if (v != NULL && !v->ok) {
        /* The message names the file and sample; the count of rows read so
         * far would mislead, since workers run ahead of the reader. */
        cli_error(CMD, "verify: %s", v->message);
        rc = CLI_EXIT_FAIL;
    }
    sl_dataset_free(ds);
    return rc;
}
