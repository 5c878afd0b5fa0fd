/* sluice.c: the `sluice` program: global options and dispatch to the
 * subcommands (inspect.c, train.c, bench_pipeline.c, bench_train.c,
 * bench_sink.c, bench_eval.c, bench_devices.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "bench_util.h"
#include "cli.h"

/* A command, or a group of commands ("bench") with subcommands of its own. */
typedef struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    void (*usage)(FILE *f);
} command;

static int bench_main(int argc, char **argv);
static void bench_usage(FILE *f);

static const command commands[] = {
    {"inspect", "describe a dataset folder (kind, samples, columns, classes)",
     cli_inspect_main, cli_inspect_usage},
    {"train", "train LeNet5 or an MLP on an MNIST folder or a folder of JPEGs, then evaluate it",
     cli_train_main, cli_train_usage},
    {"eval", "evaluate a checkpoint on an MNIST folder's test split",
     cli_eval_main, cli_eval_usage},
    {"bench", "benchmarks: 'bench pipeline' (dataset), 'bench train' (training), "
              "'bench sink' (data sinking against none), 'bench devices' (data parallel)",
     bench_main, bench_usage},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* The benchmarks under `sluice bench`. */
static const command bench_commands[] = {
    {"pipeline", "time full epochs of a pipeline at several worker counts",
     cli_bench_pipeline_main, cli_bench_pipeline_usage},
    {"train", "training throughput: compute-only (GRAPH, PYNATIVE) and end to end",
     cli_bench_train_main, cli_bench_train_usage},
    {"subnormal", "a model trained to near-zero loss against a fresh one, flushing or not",
     cli_bench_subnormal_main, cli_bench_subnormal_usage},
    {"sink", "data sinking against non-sinking, compute-only and data-only, per device",
     cli_bench_sink_main, cli_bench_sink_usage},
    {"eval", "inference throughput: the test split through LeNet5's forward step",
     cli_bench_eval_main, cli_bench_eval_usage},
    {"devices", "data parallel on several devices against one, at the same global batch",
     cli_bench_devices_main, cli_bench_devices_usage},
    {"dist", "data parallel across Open MPI ranks against one process (and torch DDP)",
     cli_bench_dist_main, cli_bench_dist_usage},
};
#define NBENCH (sizeof bench_commands / sizeof bench_commands[0])

static const command *find_command(const command *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

static void usage(FILE *f)
{
    fputs("Usage: sluice [--help] [--version] COMMAND [ARGS...]\n"
          "\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-10s %s\n", "help", "show a command's options: sluice help COMMAND");
    fputs("\n"
          "Options:\n"
          "  -h, --help     show this help and exit\n"
          "  -V, --version  print the version, the CPU path the kernels run and the\n"
          "                 core OpenBLAS chose\n"
          "\n"
          "Environment:\n"
          "  SLUICE_CPU     avx512, avx2 or generic: use at most this vector path\n"
          "                 (to run or time a lesser machine's path on this one)\n"
          "\n"
          "Every command takes --help. Exit status: 0 success, 1 runtime failure,\n"
          "2 usage error.\n",
          f);
}

static void bench_usage(FILE *f)
{
    fputs("Usage: sluice bench BENCHMARK [OPTIONS...]\n"
          "\n"
          "Benchmarks:\n",
          f);
    for (size_t i = 0; i < NBENCH; i++)
        fprintf(f, "  %-10s %s\n", bench_commands[i].name, bench_commands[i].summary);
    fputs("\nRun 'sluice bench BENCHMARK --help' for its options.\n", f);
}

static int bench_main(int argc, char **argv)
{
    const command *c;

    if (argc < 2) {
        cli_error("bench", "which benchmark? (see 'sluice bench --help')");
        bench_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        bench_usage(stdout);
        return CLI_EXIT_OK;
    }
    c = find_command(bench_commands, NBENCH, argv[1]);
    if (c == NULL) {
        cli_error("bench", "unknown benchmark '%s'", argv[1]);
        bench_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}

/* `sluice help [COMMAND [SUBCOMMAND]]`: the help goes to stdout. */
static int help_main(int argc, char **argv)
{
    const command *c;

    if (argc < 2) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    c = find_command(commands, NCOMMANDS, argv[1]);
    if (c == NULL) {
        cli_error("help", "unknown command '%s'", argv[1]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (argc >= 3 && c->run == bench_main) {
        const command *b = find_command(bench_commands, NBENCH, argv[2]);
        if (b == NULL) {
            cli_error("help", "unknown benchmark '%s'", argv[2]);
            bench_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        b->usage(stdout);
        return CLI_EXIT_OK;
    }
    c->usage(stdout);
    return CLI_EXIT_OK;
}

/* Parses the global options and runs the command; returns the exit code. */
static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const command *c;
    const char *cpu = getenv("SLUICE_CPU");
    int opt;

    if (cpu && !sl_cpu_path_valid(cpu)) {
        cli_error("usage", "SLUICE_CPU is '%s': give avx512, avx2 or generic (or unset it)",
                  cpu);
        return CLI_EXIT_USAGE;
    }

    /* "+": stop at the command name, whose options are its own. */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        case 'V':
            printf("sluice %s\ncpu path: %s\nopenblas core: %s\n", sl_version(), sl_cpu_path(),
                   sl_blas_core());
            if (sl_distributed_mpi())
                printf("mpi: %s (mpirun -np N sluice train: data parallel across N ranks)\n",
                       sl_distributed_mpi());
            else
                printf("mpi: none, %s\n", sl_distributed_why_not());
            cli_blas_warn();
            return CLI_EXIT_OK;
        default:
            cli_bad_option("usage", opt, argv, longopts);
            usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    argc -= optind;
    argv += optind;
    if (strcmp(argv[0], "help") == 0)
        return help_main(argc, argv);
    c = find_command(commands, NCOMMANDS, argv[0]);
    if (c == NULL) {
        fprintf(stderr, "sluice: unknown command '%s'\n", argv[0]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return c->run(argc, argv);
}

int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    int err = (fflush(stdout) != 0) ? errno : 0;

    /* Output that could not be written (a full disk, a closed pipe
     * with SIGPIPE ignored) is a failure, not a success. */
    if (err != 0 || ferror(stdout)) {
        fprintf(stderr, "sluice: cannot write the output: %s\n",
                err != 0 ? strerror(err) : "write error");
        return rc == CLI_EXIT_OK ? CLI_EXIT_FAIL : rc;
    }
    return rc;
}
