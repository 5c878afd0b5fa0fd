/* bench_pipeline_args.c: `sluice bench pipeline`'s command line: its help,
 * its options parsed into cli_bench_pipeline_args, and the pipeline they
 * describe (bench_pipeline.h). Reads no file and starts nothing. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "cli.h"
#include "bench_pipeline.h"

/* Library messages are printed as "sluice: bench: <message>". */
#define CMD "bench"
#define MAX_WORKER_SETS CLI_BENCH_PIPELINE_MAX_WORKER_SETS

/* Long-only options get codes outside the char range. */
enum {
    OPT_DATA = 256, OPT_USAGE, OPT_WORKERS, OPT_REPEATS, OPT_EPOCHS, OPT_SEED, OPT_JSON, OPT_PROFILE,
    OPT_RESIZE, OPT_RESCALE, OPT_NORMALIZE, OPT_HWC2CHW, OPT_FLIP, OPT_VFLIP, OPT_CROP,
    OPT_RANDOM_RESIZED_CROP, OPT_CENTER_CROP, OPT_SHORTER_SIDE, OPT_COLOR_ADJUST, OPT_PRESET,
    OPT_NO_DECODE_FUSION, OPT_DECODE_FUSION,
    OPT_LABEL_INT32, OPT_SHUFFLE, OPT_BATCH, OPT_KEEP_REMAINDER, OPT_NO_SOURCE_SHUFFLE,
    OPT_NUM_SAMPLES, OPT_DECODE_MAX_PIXELS, OPT_POOL_IDLE_MB, OPT_ERROR_SAMPLES,
    OPT_MAX_BAD_SAMPLES, OPT_QUEUE_CAPACITY, OPT_AUTOTUNE
};

void cli_bench_pipeline_usage(FILE *f)
{
    fputs("Usage: sluice bench pipeline [OPTIONS...]\n"
          "\n"
          "Times full epochs of a dataset pipeline. With MNIST data and no op options the\n"
          "pipeline is the seeds' LeNet one: label TypeCast(int32); image Resize(32,32,\n"
          "bilinear), Rescale(1/255, 0), Rescale(1/0.3081, -0.1307/0.3081), HWC2CHW;\n"
          "shuffle(10000); batch(32, drop_remainder). With an ImageFolder: decode, Resize\n"
          "(224,224), RandomHorizontalFlip(0.5), Normalize(ImageNet mean/std), HWC2CHW;\n"
          "batch(32, drop_remainder). Sources read in shuffled order, as MindSpore's do.\n"
          "\n"
          "Worker counts take turns, one run each per round, so that the machine's slow\n"
          "spells touch them alike. Before the timed runs an untimed warm-up iterator\n"
          "per worker count reads one row: the first pays the one-time source load\n"
          "(load_ms), which the datasets share and keep, so the timed runs exclude it.\n"
          "\n"
          "Options:\n"
          "  --data DIR          dataset folder (default " CLI_DEFAULT_DATA ")\n"
          "  --usage U           MNIST split: train, test or all (default train)\n"
          "  --workers LIST      comma list of worker counts, one run set each, given to\n"
          "                      every map, the batch and the decode (default 1,2)\n"
          "  --repeats N         timed runs per worker count (default 3)\n"
          "  --epochs N          epochs per timed run (default 1)\n"
          "  --seed N            seed of the sampler, shuffle and random ops (default 0)\n"
          "  --queue-capacity N  chunks each queue between stages holds (default 8; a\n"
          "                      parallel stage's at least twice its workers)\n"
          "  --autotune          tune each run while it runs, starting from --workers and\n"
          "                      --queue-capacity: wake more of a busy map's workers (up\n"
          "                      to the CPUs) or deepen a blocked stage's queue, one change\n"
          "                      at a time, undone if throughput fell; each change and\n"
          "                      its reason is printed (for the first timed run) and kept\n"
          "                      in --json (\"autotune\", per worker count: the last run's)\n"
          "  --pool-idle-mb N    the most MiB of freed buffers each dataset's pool keeps\n"
          "                      for reuse; 0 caches nothing (default: as many as keep\n"
          "                      in use + idle within twice the most in use at once,\n"
          "                      or 8 MiB)\n"
          "  --json              print one JSON object instead of text\n"
          "  --profile DIR       write DIR/trace.json: a timeline (Chrome trace) of the\n"
          "                      last run, a slice per chunk of each stage's threads\n"
          "  -h, --help          show this help and exit\n"
          "\n"
          "  --preset NAME       an ImageFolder pipeline by name (instead of op options):\n"
          "                      imagenet-train: RandomResizedCrop 224 (scale 0.08..1,\n"
          "                      ratio 3/4..4/3), RandomHorizontalFlip 0.5, Normalize\n"
          "                      (ImageNet mean/std), HWC2CHW; imagenet-eval: Resize of\n"
          "                      the shorter side to 256, CenterCrop 224, Normalize,\n"
          "                      HWC2CHW. Decoding fuses with the crop (it decodes less)\n"
          "  --decode-fusion M   how a Decode runs with the crop or resize after it:\n"
          "                      crop (default: only the rows and columns the output\n"
          "                      reads, the separate ops' pixels within 1 level),\n"
          "                      scaled (also at 1/2, 1/4 or 1/8 scale where the output\n"
          "                      is that much smaller: faster, pixels differ where the\n"
          "                      separate ops alias) or off (the separate ops)\n"
          "  --no-decode-fusion  the same as --decode-fusion off\n"
          "\n"
          "Op options replace the default ops, in the order given; they apply to the\n"
          "`image` column (numbers may be written as fractions, e.g. 1/255):\n"
          "  --resize H[xW]      bilinear resize\n"
          "  --rescale S[,SHIFT] x * S + SHIFT, as float32 (repeatable)\n"
          "  --normalize M1,M2,..:S1,S2,..  (x - mean) / std per channel\n"
          "  --hwc2chw           HWC to CHW\n"
          "  --flip P            random horizontal flip with probability P\n"
          "  --vflip P           random vertical flip with probability P\n"
          "  --crop H[xW][,PAD]  random crop after padding PAD zeros on every side\n"
          "  --random-resized-crop H[xW][,SMIN,SMAX[,RMIN,RMAX]]  RandomResizedCrop to\n"
          "                      HxW: area fraction in [SMIN, SMAX] (default 0.08,1),\n"
          "                      width/height in [RMIN, RMAX] (default 3/4,4/3)\n"
          "  --center-crop H[xW] the central window (zeros where it passes the image)\n"
          "  --shorter-side N    bilinear resize of the shorter side to N, keeping the\n"
          "                      aspect ratio (MindSpore's Resize(N))\n"
          "  --color-adjust B,C,S,H  RandomColorAdjust: brightness, contrast and\n"
          "                      saturation factors in [max(0, 1-x), 1+x], hue in [-H, H]\n"
          "  --label-int32       cast `label` to int32 (part of the default MNIST ops)\n"
          "Options that adjust the rest of the default pipeline:\n"
          "  --shuffle N         shuffle buffer size, 0 for none\n"
          "  --batch N           batch size, 0 for none\n"
          "  --keep-remainder    keep the last short batch\n"
          "  --no-source-shuffle read the source in file order\n"
          "  --num-samples N     read at most N samples per epoch (0: all)\n"
          "  --decode-max-pixels N  ImageFolder: refuse JPEGs declaring more than N pixels\n"
          "                      (width x height), from the header, before decoding\n"
          "                      (default 67108864 = 8192x8192; raise it for larger images)\n"
          CLI_ERROR_SAMPLES_HELP
          "                      (in the first timed run; the others count them only)\n",
          f);
}

/* --- parsing --------------------------------------------------------- */

static int add_step(cli_bench_pipeline_args *a, const cli_step *s)
{
    if (a->nsteps == CLI_MAX_STEPS) {
        cli_error(CMD, "more than %d ops", CLI_MAX_STEPS);
        return -1;
    }
    a->steps[a->nsteps++] = *s;
    a->ops_given = 1;
    return 0;
}

static int parse_rescale(cli_bench_pipeline_args *a, const char *arg)
{
    double v[2];
    size_t n = 0;
    cli_step s;

    if (cli_parse_double_list(CMD, "--rescale", arg, v, 2, &n) != 0)
        return -1;
    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_RESCALE;
    s.scale = v[0];
    s.shift = (n == 2) ? v[1] : 0.0;
    return add_step(a, &s);
}

static int parse_normalize(cli_bench_pipeline_args *a, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char means[256];
    size_t nmean = 0, nstd = 0;
    cli_step s;

    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_NORMALIZE;
    if (colon == NULL || (size_t)(colon - arg) >= sizeof means) {
        cli_error(CMD, "--normalize: expected M1,M2,..:S1,S2,.., got '%s'", arg);
        return -1;
    }
    memcpy(means, arg, (size_t)(colon - arg));
    means[colon - arg] = '\0';
    if (cli_parse_double_list(CMD, "--normalize mean", means, s.mean, CLI_MAX_CHANNELS,
                              &nmean) != 0 ||
        cli_parse_double_list(CMD, "--normalize std", colon + 1, s.std, CLI_MAX_CHANNELS,
                              &nstd) != 0)
        return -1;
    if (nmean != nstd) {
        cli_error(CMD, "--normalize: %zu means but %zu stds", nmean, nstd);
        return -1;
    }
    for (size_t c = 0; c < nstd; c++) {
        if (!(s.std[c] > 0.0)) {
            cli_error(CMD, "--normalize: std %g must be > 0", s.std[c]);
            return -1;
        }
    }
    s.channels = nmean;
    return add_step(a, &s);
}

static int parse_crop(cli_bench_pipeline_args *a, const char *arg)
{
    const char *comma = strchr(arg, ',');
    char size[64];
    size_t len = comma ? (size_t)(comma - arg) : strlen(arg);
    cli_step s;

    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_CROP;
    if (len >= sizeof size) {
        cli_error(CMD, "--crop: expected H[xW][,PAD], got '%s'", arg);
        return -1;
    }
    memcpy(size, arg, len);
    size[len] = '\0';
    if (cli_parse_hw(CMD, "--crop", size, &s.height, &s.width) != 0)
        return -1;
    if (comma && cli_parse_int64(CMD, "--crop padding", comma + 1, 0, INT32_MAX,
                                 &s.padding) != 0)
        return -1;
    return add_step(a, &s);
}

static int parse_random_resized_crop(cli_bench_pipeline_args *a, const char *arg)
{
    const char *comma = strchr(arg, ',');
    char size[64];
    size_t len = comma ? (size_t)(comma - arg) : strlen(arg), n = 0;
    double v[4];
    cli_step s;

    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_RANDOM_RESIZED_CROP;
    s.area[0] = SL_RRC_SCALE_MIN;
    s.area[1] = SL_RRC_SCALE_MAX;
    s.ratio[0] = SL_RRC_RATIO_MIN;
    s.ratio[1] = SL_RRC_RATIO_MAX;
    if (len >= sizeof size) {
        cli_error(CMD, "--random-resized-crop: expected H[xW][,SMIN,SMAX[,RMIN,RMAX]], got '%s'",
                  arg);
        return -1;
    }
    memcpy(size, arg, len);
    size[len] = '\0';
    if (cli_parse_hw(CMD, "--random-resized-crop", size, &s.height, &s.width) != 0)
        return -1;
    if (comma) {
        if (cli_parse_double_list(CMD, "--random-resized-crop", comma + 1, v, 4, &n) != 0)
            return -1;
        if (n != 2 && n != 4) {
            cli_error(CMD, "--random-resized-crop: expected SMIN,SMAX or SMIN,SMAX,RMIN,RMAX "
                      "after the size, got %zu numbers in '%s'", n, arg);
            return -1;
        }
        s.area[0] = v[0];
        s.area[1] = v[1];
        if (n == 4) {
            s.ratio[0] = v[2];
            s.ratio[1] = v[3];
        }
    }
    {
        /* the library's own bounds, refused here as usage errors */
        char err[256];
        sl_op *op;
        if (sl_op_random_resized_crop_new(&op, s.height, s.width, s.area[0], s.area[1],
                                          s.ratio[0], s.ratio[1], SL_INTER_LINEAR,
                                          SL_RRC_ATTEMPTS, err, sizeof err) != SL_OK) {
            cli_error(CMD, "--random-resized-crop: %s", err);
            return -1;
        }
        sl_op_release(op);
    }
    return add_step(a, &s);
}

static int parse_color_adjust(cli_bench_pipeline_args *a, const char *arg)
{
    static const char *const names[4] = {"brightness", "contrast", "saturation", "hue"};
    size_t n = 0;
    cli_step s;

    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_COLOR_ADJUST;
    if (cli_parse_double_list(CMD, "--color-adjust", arg, s.color, 4, &n) != 0)
        return -1;
    if (n != 4) {
        cli_error(CMD, "--color-adjust: expected B,C,S,H (four factors), got '%s'", arg);
        return -1;
    }
    for (int k = 0; k < 4; k++)
        if (s.color[k] < 0.0 || (k == 3 && s.color[k] > 0.5)) {
            cli_error(CMD, "--color-adjust: %s %g must be >= 0%s", names[k], s.color[k],
                      k == 3 ? " and <= 0.5" : "");
            return -1;
        }
    return add_step(a, &s);
}

static int parse_simple_step(cli_bench_pipeline_args *a, int opt, const char *arg)
{
    cli_step s;

    memset(&s, 0, sizeof s);
    switch (opt) {
    case OPT_RESIZE:
        s.kind = CLI_STEP_RESIZE;
        if (cli_parse_hw(CMD, "--resize", arg, &s.height, &s.width) != 0)
            return -1;
        break;
    case OPT_HWC2CHW:
        s.kind = CLI_STEP_HWC2CHW;
        break;
    case OPT_CENTER_CROP:
        s.kind = CLI_STEP_CENTER_CROP;
        if (cli_parse_hw(CMD, "--center-crop", arg, &s.height, &s.width) != 0)
            return -1;
        break;
    case OPT_SHORTER_SIDE:
        s.kind = CLI_STEP_SHORTER_SIDE;
        if (cli_parse_int64(CMD, "--shorter-side", arg, 1, INT64_C(1) << 24, &s.height) != 0)
            return -1;
        break;
    case OPT_FLIP:
    case OPT_VFLIP: {
        const char *name = opt == OPT_FLIP ? "--flip" : "--vflip";
        s.kind = opt == OPT_FLIP ? CLI_STEP_FLIP : CLI_STEP_VFLIP;
        if (cli_parse_double(CMD, name, arg, &s.prob) != 0)
            return -1;
        if (s.prob < 0.0 || s.prob > 1.0) {
            cli_error(CMD, "%s: probability %s is outside [0, 1]", name, arg);
            return -1;
        }
        break;
    }
    default:
        return -1;
    }
    return add_step(a, &s);
}

/* Handles one option; 0 ok, -1 usage error (already printed). */
static int parse_option(cli_bench_pipeline_args *a, int opt, const char *arg)
{
    switch (opt) {
    case OPT_DATA: a->data = arg; return 0;
    case OPT_USAGE:
        a->usage_given = 1;
        return cli_parse_usage(CMD, arg, &a->usage);
    case OPT_WORKERS:
        return cli_parse_int64_list(CMD, "--workers", arg, 1, 256, a->workers,
                                    MAX_WORKER_SETS, &a->nworkers);
    case OPT_REPEATS: return cli_parse_int64(CMD, "--repeats", arg, 1, 1000, &a->repeats);
    case OPT_EPOCHS: return cli_parse_int64(CMD, "--epochs", arg, 1, 1000, &a->epochs);
    case OPT_SEED: return cli_parse_int64(CMD, "--seed", arg, 0, INT64_MAX, &a->seed);
    case OPT_JSON: a->json = 1; return 0;
    case OPT_PROFILE: a->profile = arg; return 0;
    case OPT_QUEUE_CAPACITY:
        return cli_parse_int64(CMD, "--queue-capacity", arg, 1, 4096, &a->queue_capacity);
    case OPT_AUTOTUNE: a->autotune = 1; return 0;
    case OPT_NO_DECODE_FUSION: a->decode_fusion = SL_DECODE_FUSION_OFF - SL_DECODE_FUSION_CROP; return 0;
    case OPT_DECODE_FUSION:
        if (strcmp(arg, "off") == 0)
            a->decode_fusion = SL_DECODE_FUSION_OFF - SL_DECODE_FUSION_CROP;
        else if (strcmp(arg, "crop") == 0)
            a->decode_fusion = 0;
        else if (strcmp(arg, "scaled") == 0)
            a->decode_fusion = SL_DECODE_FUSION_SCALED - SL_DECODE_FUSION_CROP;
        else {
            cli_error(CMD, "--decode-fusion: expected off, crop or scaled, got '%s'", arg);
            return -1;
        }
        return 0;
    case OPT_PRESET:
        if (strcmp(arg, "imagenet-train") != 0 && strcmp(arg, "imagenet-eval") != 0) {
            cli_error(CMD, "--preset: expected imagenet-train or imagenet-eval, got '%s'", arg);
            return -1;
        }
        a->preset = arg;
        return 0;
    case OPT_RESIZE:
    case OPT_HWC2CHW:
    case OPT_CENTER_CROP:
    case OPT_SHORTER_SIDE:
    case OPT_FLIP:
    case OPT_VFLIP: return parse_simple_step(a, opt, arg);
    case OPT_RANDOM_RESIZED_CROP: return parse_random_resized_crop(a, arg);
    case OPT_COLOR_ADJUST: return parse_color_adjust(a, arg);
    case OPT_RESCALE: return parse_rescale(a, arg);
    case OPT_NORMALIZE: return parse_normalize(a, arg);
    case OPT_CROP: return parse_crop(a, arg);
    case OPT_LABEL_INT32:
        a->label_int32 = 1;
        a->ops_given = 1;
        return 0;
    case OPT_SHUFFLE:
        /* The library's own bounds (shuffle: 2 .. 2^30, 0 here for none;
         * batch: 1 .. 2^24, 0 for none), refused here as usage errors. */
        a->shuffle_given = 1;
        if (cli_parse_int64(CMD, "--shuffle", arg, 0, INT64_C(1) << 30, &a->shuffle) != 0)
            return CLI_EXIT_USAGE;
        if (a->shuffle == 1) {
            cli_error(CMD, "--shuffle: a buffer of 1 row shuffles nothing; give 0 (none) or >= 2");
            return CLI_EXIT_USAGE;
        }
        return 0;
    case OPT_BATCH:
        a->batch_given = 1;
        return cli_parse_int64(CMD, "--batch", arg, 0, INT64_C(1) << 24, &a->batch);
    case OPT_KEEP_REMAINDER: a->keep_remainder = 1; return 0;
    case OPT_NO_SOURCE_SHUFFLE: a->no_source_shuffle = 1; return 0;
    case OPT_NUM_SAMPLES:
        return cli_parse_int64(CMD, "--num-samples", arg, 0, INT64_MAX, &a->num_samples);
    case OPT_DECODE_MAX_PIXELS:
        return cli_parse_int64(CMD, "--decode-max-pixels", arg, 1,
                               (int64_t)SL_DECODE_MAX_PIXELS_LIMIT, &a->decode_max_pixels);
    case OPT_ERROR_SAMPLES: return cli_parse_error_samples(CMD, arg, &a->errors);
    case OPT_MAX_BAD_SAMPLES: return cli_parse_max_bad_samples(CMD, arg, &a->errors);
    case OPT_POOL_IDLE_MB:
        return cli_parse_int64(CMD, "--pool-idle-mb", arg, 0, CLI_MAX_POOL_IDLE_MB,
                               &a->pool_idle_mb);
    }
    return -1;
}

int cli_bench_pipeline_parse(int argc, char **argv, cli_bench_pipeline_args *a)
{
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"usage", required_argument, NULL, OPT_USAGE},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"epochs", required_argument, NULL, OPT_EPOCHS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", no_argument, NULL, OPT_JSON},
        {"profile", required_argument, NULL, OPT_PROFILE},
        {"queue-capacity", required_argument, NULL, OPT_QUEUE_CAPACITY},
        {"autotune", no_argument, NULL, OPT_AUTOTUNE},
        {"resize", required_argument, NULL, OPT_RESIZE},
        {"rescale", required_argument, NULL, OPT_RESCALE},
        {"normalize", required_argument, NULL, OPT_NORMALIZE},
        {"hwc2chw", no_argument, NULL, OPT_HWC2CHW},
        {"flip", required_argument, NULL, OPT_FLIP},
        {"vflip", required_argument, NULL, OPT_VFLIP},
        {"crop", required_argument, NULL, OPT_CROP},
        {"random-resized-crop", required_argument, NULL, OPT_RANDOM_RESIZED_CROP},
        {"center-crop", required_argument, NULL, OPT_CENTER_CROP},
        {"shorter-side", required_argument, NULL, OPT_SHORTER_SIDE},
        {"color-adjust", required_argument, NULL, OPT_COLOR_ADJUST},
        {"preset", required_argument, NULL, OPT_PRESET},
        {"no-decode-fusion", no_argument, NULL, OPT_NO_DECODE_FUSION},
        {"decode-fusion", required_argument, NULL, OPT_DECODE_FUSION},
        {"label-int32", no_argument, NULL, OPT_LABEL_INT32},
        {"shuffle", required_argument, NULL, OPT_SHUFFLE},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"keep-remainder", no_argument, NULL, OPT_KEEP_REMAINDER},
        {"no-source-shuffle", no_argument, NULL, OPT_NO_SOURCE_SHUFFLE},
        {"num-samples", required_argument, NULL, OPT_NUM_SAMPLES},
        {"decode-max-pixels", required_argument, NULL, OPT_DECODE_MAX_PIXELS},
        {"error-samples", required_argument, NULL, OPT_ERROR_SAMPLES},
        {"max-bad-samples", required_argument, NULL, OPT_MAX_BAD_SAMPLES},
        {"pool-idle-mb", required_argument, NULL, OPT_POOL_IDLE_MB},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;

    memset(a, 0, sizeof *a);
    a->data = CLI_DEFAULT_DATA;
    a->usage = SL_MNIST_TRAIN;
    a->workers[0] = 1;
    a->workers[1] = 2;
    a->nworkers = 2;
    a->repeats = 3;
    a->epochs = 1;
    cli_error_samples_default(&a->errors);
    a->pool_idle_mb = -1;

    optind = 0; /* GNU: restart scanning on this new argv */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            cli_bench_pipeline_usage(stdout);
            return -1;
        }
        if (opt == '?' || opt == ':') {
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
        if (parse_option(a, opt, optarg) != 0)
            return CLI_EXIT_USAGE;
    }
    if (optind < argc) {
        cli_error(CMD, "unexpected argument '%s' (see --help)", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (cli_check_error_samples(CMD, &a->errors) != 0)
        return CLI_EXIT_USAGE;
    if (a->preset && a->ops_given) {
        cli_error(CMD, "--preset %s gives the ops: give op options or a preset, not both",
                  a->preset);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

void cli_bench_pipeline_make(const cli_bench_pipeline_args *a, cli_kind kind, cli_pipeline *p)
{
    cli_pipeline_default(p, a->data, kind, a->usage);
    if (a->ops_given) {
        cli_pipeline_clear_ops(p);
        p->label_int32 = a->label_int32;
        memcpy(p->steps, a->steps, a->nsteps * sizeof a->steps[0]);
        p->nsteps = a->nsteps;
    } else if (a->preset) {
        cli_pipeline_imagenet(p, strcmp(a->preset, "imagenet-train") == 0);
    }
    if (a->shuffle_given)
        p->shuffle = a->shuffle;
    if (a->batch_given)
        p->batch = a->batch;
    if (a->keep_remainder)
        p->drop_remainder = 0;
    if (a->no_source_shuffle)
        p->source_shuffle = 0;
    p->num_samples = a->num_samples;
    p->decode_max_pixels = (uint64_t)a->decode_max_pixels;
    p->errors = a->errors;
    p->seed = (uint64_t)a->seed;
    p->pool_idle_mb = a->pool_idle_mb;
    p->decode_fusion = a->decode_fusion;
}

/* The largest worker count of the runs, the one the machine is probed at. */
int cli_bench_pipeline_max_workers(const cli_bench_pipeline_args *a)
{
    int64_t m = 1;
    for (size_t w = 0; w < a->nworkers; w++)
        if (a->workers[w] > m)
            m = a->workers[w];
    return (int)m;
}
