/* cli.h: what the sluice subcommands share: exit codes, error printing,
 * strict number parsing, dataset-kind detection, JSON string output, and
 * the description + builder of a benchmark/LeNet pipeline. Uses the public
 * API (sluice/sluice.h) only. */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sluice/sluice.h"

/* Exit codes of every command. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,  /* a runtime failure: bad data, I/O, library error */
    CLI_EXIT_USAGE = 2  /* the command line was wrong */
};

/* The folder benchmarks read when --data is not given. */
#define CLI_DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/* --- messages -------------------------------------------------------- */

/* Prints "sluice: <cmd>: <message>\n" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Reports what getopt_long's '?' or ':' result c means (unknown or
 * ambiguous option, missing or unwanted argument) with cli_error; argv and
 * longopts are the ones given to getopt_long. */
void cli_bad_option(const char *cmd, int c, char *const *argv,
                    const struct option *longopts);
/* The message to print for a failed library call: msg (an object's
 * *_last_error()) verbatim, or sl_strerror(status) if the object recorded
 * none. */
const char *cli_lib_message(const char *msg, int status);
/* Writes s as a JSON string literal (quotes included) to f; bytes that are
 * not valid UTF-8 become U+FFFD, so the output stays valid JSON. */
void cli_json_string(FILE *f, const char *s);
/* Writes a pool's stats as one JSON object (the fields' own names). */
void cli_pool_json(FILE *f, const sl_pool_stats *ps);
/* 1 when stderr is a terminal, so progress lines are worth printing. */
int cli_stderr_is_tty(void);

/* --transfer's value: auto, thread or inline (sl_transfer_mode_parse);
 * prints "sluice: <cmd>: --transfer: ..." and returns -1 on another. */
int cli_parse_transfer(const char *cmd, const char *s, sl_transfer_mode *out);

/* --- numbers --------------------------------------------------------- */
/* Every parser accepts the whole string or nothing: no empty strings, no
 * trailing characters, no overflow. On failure it prints
 * "sluice: <cmd>: <what>: ..." and returns -1; on success 0. */

/* A decimal integer in [min, max]. */
int cli_parse_int64(const char *cmd, const char *what, const char *s, int64_t min,
                    int64_t max, int64_t *out);
/* A finite real number, or a fraction "A/B" of two of them (B != 0), so the
 * seeds' constants can be written as 1/255. */
int cli_parse_double(const char *cmd, const char *what, const char *s, double *out);
/* A comma list of 1..max reals ("0.5,0.5,0.5"); *n gets the count. */
int cli_parse_double_list(const char *cmd, const char *what, const char *s, double *out,
                          size_t max, size_t *n);
/* A comma list of 1..max integers in [min, vmax]; *n gets the count. */
int cli_parse_int64_list(const char *cmd, const char *what, const char *s, int64_t min,
                         int64_t vmax, int64_t *out, size_t max, size_t *n);
/* "H" or "HxW" (sizes >= 1); "H" means a square H x H. */
int cli_parse_hw(const char *cmd, const char *what, const char *s, int64_t *h,
                 int64_t *w);

/* --- datasets -------------------------------------------------------- */

typedef enum cli_kind {
    CLI_KIND_MNIST = 0,
    CLI_KIND_IMAGE_FOLDER
} cli_kind;

/* Which MNIST splits dir holds: bit 1 train, bit 2 test (either the plain
 * or the ".gz" images file counts). 0: not an MNIST folder. */
enum { CLI_SPLIT_TRAIN = 1, CLI_SPLIT_TEST = 2 };
int cli_mnist_splits(const char *dir);
/* MNIST when dir holds MNIST image files, ImageFolder otherwise. Returns -1
 * (message printed) when dir is not a readable directory. */
int cli_detect_kind(const char *cmd, const char *dir, cli_kind *out);
/* After an ImageFolder source refused dir as malformed: says that dir was
 * taken for an ImageFolder because it holds no MNIST files, so a user who
 * meant MNIST learns which file names are expected. */
void cli_image_folder_hint(const char *cmd, const char *dir);
/* "train", "test", "all" -> usage; -1 (message printed) otherwise. */
int cli_parse_usage(const char *cmd, const char *s, sl_mnist_usage *out);
const char *cli_usage_name(sl_mnist_usage usage);

/* "(28, 28, 1)" with unknown (-1) sizes shown as "?". Returns buf. */
char *cli_spec_shape_str(char *buf, size_t len, const sl_tensor_spec *spec);

/* --- bad samples (cli_bad_samples.c) --------------------------------- */

/* --error-samples and --max-bad-samples, as given. */
typedef struct cli_error_samples {
    sl_error_samples mode;  /* default raise */
    int64_t max_count;      /* >= 0, or -1: max_fraction applies (the default) */
    double max_fraction;    /* default 0.01 */
    int cap_given;          /* --max-bad-samples was given */
} cli_error_samples;

/* Where bad samples are reported: "sluice: <cmd>: skipped sample ..." lines
 * on stderr, unless quiet (a benchmark's repeated runs). */
typedef struct cli_bad_report {
    const char *cmd;
    int quiet;
    int64_t skipped, replaced; /* counted, quiet or not */
} cli_bad_report;

/* The help of both options, for the commands' usage texts. */
#define CLI_ERROR_SAMPLES_HELP \
    "  --error-samples raise|skip|replace  what a bad sample (a JPEG that does not\n" \
    "                      decode, a file that cannot be read, a map failing on it)\n" \
    "                      does: raise (default) fails the run; skip drops it and a\n" \
    "                      stand-in ends its epoch; replace puts a stand-in in its\n" \
    "                      place. Stand-ins are other samples of the epoch, chosen\n" \
    "                      from the seed, so epochs (and every shard) keep their\n" \
    "                      steps. Each one is reported on stderr\n" \
    "  --max-bad-samples N|P%  with skip or replace, fail once more than N samples\n" \
    "                      (or P% of the samples) of one epoch are bad (default 1%:\n" \
    "                      a few broken files pass, a folder of them fails early)\n"

void cli_error_samples_default(cli_error_samples *e);
/* "raise", "skip" or "replace"; -1 with a message otherwise. */
int cli_parse_error_samples(const char *cmd, const char *s, cli_error_samples *e);
/* "N" (>= 0) or "P%" (0 <= P <= 100); -1 with a message otherwise. */
int cli_parse_max_bad_samples(const char *cmd, const char *s, cli_error_samples *e);
/* After parsing: -1 with a message for a cap given with raise. */
int cli_check_error_samples(const char *cmd, const cli_error_samples *e);
/* Sets e on ds; report (NULL: none) must outlive its iterators. Prints the
 * library's message and returns the status on failure. */
int cli_set_error_samples(const char *cmd, const cli_error_samples *e, cli_bad_report *report,
                          sl_dataset *ds);

/* --- pipelines ------------------------------------------------------- */

/* One image op as given on the command line (or by a default pipeline). */
typedef enum cli_step_kind {
    CLI_STEP_RESIZE,
    CLI_STEP_RESCALE,
    CLI_STEP_NORMALIZE,
    CLI_STEP_HWC2CHW,
    CLI_STEP_FLIP,
    CLI_STEP_CROP,
    CLI_STEP_RANDOM_RESIZED_CROP,
    CLI_STEP_CENTER_CROP,
    CLI_STEP_SHORTER_SIDE,
    CLI_STEP_COLOR_ADJUST,
    CLI_STEP_VFLIP
} cli_step_kind;

#define CLI_MAX_STEPS 16
#define CLI_MAX_CHANNELS 8

typedef struct cli_step {
    cli_step_kind kind;
    int64_t height, width;   /* resize, crops; shorter side: height */
    int64_t padding;         /* crop */
    double scale, shift;     /* rescale */
    double prob;             /* flip, vflip */
    double mean[CLI_MAX_CHANNELS], std[CLI_MAX_CHANNELS]; /* normalize */
    size_t channels;         /* normalize */
    double area[2], ratio[2]; /* random resized crop: scale and ratio ranges */
    double color[4];         /* color adjust: brightness, contrast, saturation, hue */
} cli_step;

/* Everything needed to build a pipeline, except the worker count (which
 * bench varies per run set). */
typedef struct cli_pipeline {
    const char *dir;
    cli_kind kind;
    sl_mnist_usage usage;    /* MNIST only */
    int label_int32;         /* map label TypeCast(int32) first */
    cli_step steps[CLI_MAX_STEPS]; /* map image: these ops, in order */
    size_t nsteps;
    int64_t shuffle;         /* shuffle buffer size; 0: no shuffle node */
    int64_t batch;           /* batch size; 0: no batch node */
    int drop_remainder;
    int source_shuffle;      /* the source sampler's shuffle flag */
    int64_t num_samples;     /* sampler num_samples; 0: all */
    int64_t num_shards;      /* sampler num_shards (0 or 1: one) */
    int64_t shard_id;        /* sampler shard_id */
    uint64_t seed;           /* sampler seed and dataset seed */
    uint64_t decode_max_pixels; /* ImageFolder decode limit; 0: the library's default */
    cli_error_samples errors; /* what bad samples do (default raise) */
    cli_bad_report *report;  /* where they are reported (NULL: nowhere) */
    int64_t pool_idle_mb;    /* the dataset's pool idle limit in MiB; -1: the library's */
    int decode_fusion;       /* SL_DECODE_FUSION_*, stored off by one (0: crop) */
} cli_pipeline;

/* Fills p with the default pipeline of kind for dir: for MNIST the seeds'
 * LeNet pipeline (label int32; resize 32x32 bilinear, rescale 1/255,
 * rescale 1/0.3081 shift -0.1307/0.3081, hwc2chw; shuffle 10000; batch 32
 * dropping the remainder), for ImageFolder resize 224x224, flip 0.5,
 * ImageNet normalize, hwc2chw, batch 32 dropping the remainder. Both read
 * the source shuffled (MindSpore's default), seed 0. */
void cli_pipeline_default(cli_pipeline *p, const char *dir, cli_kind kind,
                          sl_mnist_usage usage);
/* Replaces the image steps with ImageNet's training transform
 * (RandomResizedCrop 224, flip 0.5, Normalize with ImageNet's mean/std on
 * the 0..255 scale, HWC2CHW) or, with train 0, its evaluation transform
 * (Resize of the shorter side to 256, CenterCrop 224, Normalize, HWC2CHW). */
void cli_pipeline_imagenet(cli_pipeline *p, int train);
/* The same transforms for size x size images (the shorter side to size * 8
 * / 7 before the center crop). */
void cli_pipeline_imagenet_sized(cli_pipeline *p, int train, int64_t size);
/* Drops the default ops (label cast and image steps) so the command line
 * can give its own. */
void cli_pipeline_clear_ops(cli_pipeline *p);
/* The default pipeline workers of a training run whose compute team has
 * compute_threads threads: 1 when the team fills every CPU, else the
 * budget's default. */
int cli_training_workers(int compute_threads);
/* Builds p into a new dataset, with workers as the num_parallel_workers of
 * every map, the batch and the ImageFolder decode. On success *out is yours
 * (sl_dataset_free). On failure prints "sluice: <cmd>: <library message>"
 * and returns the status; *out is NULL. */
int cli_pipeline_build(const char *cmd, const cli_pipeline *p, int workers,
                       sl_dataset **out);
/* The two halves of cli_pipeline_build: a dataset holding only p's source
 * (an ImageFolder's decode uses workers), and p's nodes appended to ds.
 * Both print the library's message on failure; the first frees what it
 * made, the second leaves ds to the caller. */
int cli_pipeline_source(const char *cmd, const cli_pipeline *p, int workers, sl_dataset **out);
int cli_pipeline_add_nodes(const char *cmd, const cli_pipeline *p, int workers, sl_dataset *ds);

/* The most --pool-idle-mb takes: 1 TiB, far past any machine's memory,
 * and small enough that MiB * 2^20 fits a size_t. */
#define CLI_MAX_POOL_IDLE_MB (INT64_C(1) << 20)

/* --- training -------------------------------------------------------- */

/* A callback that stops training once `steps` more steps have run. */
typedef struct cli_step_limit {
    int64_t steps, start;
} cli_step_limit;

/* Fills limit (counting from m's global step now) and returns the callback
 * that reads it; limit must outlive the training. */
sl_callback cli_step_limit_callback(cli_step_limit *limit, const sl_model *m, int64_t steps);

/* Returns a monotonic clock reading in milliseconds. */
double cli_now_ms(void);

/* --- subcommands ----------------------------------------------------- */
/* Each takes the arguments after "sluice" (argv[0] is the command name,
 * "bench pipeline" gets "pipeline" as argv[0]) and returns an exit code;
 * each *_usage prints its help to f. */

int cli_inspect_main(int argc, char **argv);
void cli_inspect_usage(FILE *f);
int cli_bench_pipeline_main(int argc, char **argv);
void cli_bench_pipeline_usage(FILE *f);
int cli_train_main(int argc, char **argv);
void cli_train_usage(FILE *f);
int cli_eval_main(int argc, char **argv);
void cli_eval_usage(FILE *f);
int cli_bench_train_main(int argc, char **argv);
void cli_bench_train_usage(FILE *f);
int cli_bench_subnormal_main(int argc, char **argv);
void cli_bench_subnormal_usage(FILE *f);
int cli_bench_sink_main(int argc, char **argv);
int cli_bench_devices_main(int argc, char **argv);
void cli_bench_devices_usage(FILE *f);
int cli_bench_dist_main(int argc, char **argv);
/* --sim-network BW,LATENCY (Gbit/s, microseconds) into o's sim_network_*;
 * 0, or -1 after saying what is wrong. */
int cli_parse_sim_network(const char *cmd, const char *arg, sl_train_options *o);
void cli_bench_dist_usage(FILE *f);
void cli_bench_sink_usage(FILE *f);
int cli_bench_eval_main(int argc, char **argv);
void cli_bench_eval_usage(FILE *f);

/* --mode and --model values (train.c); -1 with a message when unknown. */
int cli_parse_mode(const char *cmd, const char *s, sl_mode *out);
int cli_parse_model(const char *cmd, const char *s, sl_network_kind *out);

#endif
