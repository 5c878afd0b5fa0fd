/* fuzz_cli_options.c: libFuzzer harness of the pipeline options of
 * `sluice bench pipeline` (tools/bench_pipeline.c, tools/cli.c). The input
 * is a command line: words separated by spaces, newlines or NUL bytes
 * (a tab stays inside its word), given after "pipeline" as argv.
 *
 * The options are parsed (cli_bench_pipeline_parse); when they are
 * accepted, the pipeline they describe is built, described and sized for
 * an MNIST folder and for an ImageFolder that the harness made (never the
 * input's --data, so nothing outside the temporary folder is read), and
 * freed: nothing is iterated, so no worker runs and no image is decoded.
 * Messages go to stderr and --help to stdout: run it with
 * -close_fd_mask=3. Refusals are expected; only crashes, sanitizer reports
 * and leaks count. */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_util.h"
#include "tests/testutil.h"
#include "tools/bench_pipeline.h"

#define MAX_WORDS 64
#define DESCRIBE_LEN 4096

static char command[] = "pipeline";
static char *mnist_dir, *folder_dir;

static void cleanup(void)
{
    free(mnist_dir);
    free(folder_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    mnist_dir = fz_path("mnist");
    folder_dir = fz_path("folder");
    /* 3 train and 2 test samples of 28x28; 2 classes of one 8x8 JPEG. */
    if (tu_make_mnist(mnist_dir, 3, 2, 0) != 0 ||
        tu_make_image_folder(folder_dir, 2, 1, 8, 8) != 0)
        abort();
    atexit(cleanup);
    return 0;
}

/* Builds the pipeline a describes for the folder of kind, describes and
 * sizes it, and frees it. */
static void build(const cli_bench_pipeline_args *a, cli_kind kind)
{
    cli_pipeline p;
    sl_dataset *ds = NULL;
    char describe[DESCRIBE_LEN];
    int64_t size;

    if (kind != CLI_KIND_MNIST && a->usage_given)
        return; /* refused by the command before anything is built */
    cli_bench_pipeline_make(a, kind, &p);
    p.dir = kind == CLI_KIND_MNIST ? mnist_dir : folder_dir;
    if (cli_pipeline_build("bench", &p, (int)a->workers[0], &ds) != SL_OK)
        return;
    sl_dataset_describe(ds, describe, sizeof describe);
    sl_dataset_get_dataset_size(ds, &size);
    sl_dataset_free(ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *words = malloc(size + 1);
    char *argv[MAX_WORDS + 2];
    int argc = 0;
    cli_bench_pipeline_args a;
    size_t i = 0;

    if (words == NULL)
        return 0;
    memcpy(words, data, size);
    words[size] = '\0';
    argv[argc++] = command;
    while (i < size && argc <= MAX_WORDS) {
        size_t start;
        while (i < size && (words[i] == ' ' || words[i] == '\n' || words[i] == '\0'))
            words[i++] = '\0';
        start = i;
        while (i < size && words[i] != ' ' && words[i] != '\n' && words[i] != '\0')
            i++;
        if (i > start)
            argv[argc++] = words + start;
        if (i < size)
            words[i++] = '\0';
    }
    argv[argc] = NULL;
    if (cli_bench_pipeline_parse(argc, argv, &a) == CLI_EXIT_OK) {
        build(&a, CLI_KIND_MNIST);
        build(&a, CLI_KIND_IMAGE_FOLDER);
    }
    free(words);
    return 0;
}
