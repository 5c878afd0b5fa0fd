/* fuzz_checkpoint.c: libFuzzer harness of the checkpoint loader
 * (exec/checkpoint.c, format in include/sluice/checkpoint.h): the input is
 * a checkpoint file, loaded into the tiny network of fz_checkpoint_graph.
 *
 * The file ends with a CRC-32 of everything before it, which a mutation
 * almost always breaks, and the loader checks it only after parsing
 * everything. So each input is loaded twice: as it is, and (when it is
 * long enough to have one) with its CRC made right, so that mutated
 * entries also reach the checks after the CRC and the copy into the
 * parameters. A load that succeeds changes only parameter values, which
 * no later load looks at, so runs stay deterministic. Refusals are
 * expected; only crashes, sanitizer reports and leaks count. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/fuzz/fuzz_util.h"

static sl_graph *graph;
static char *path;

static void cleanup(void)
{
    sl_graph_free(graph);
    free(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    graph = fz_checkpoint_graph(1);
    if (graph == NULL)
        abort();
    path = fz_path("fuzz.ckpt");
    atexit(cleanup);
    return 0;
}

static void load(const uint8_t *data, size_t size)
{
    int64_t step;
    fz_write(path, data, size, 0);
    sl_checkpoint_load(graph, path, &step);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load(data, size);
    if (size >= 4) {
        uint8_t *fixed = malloc(size);
        uLong crc;
        if (fixed == NULL)
            return 0;
        memcpy(fixed, data, size);
        crc = crc32(crc32(0L, Z_NULL, 0), fixed, (uInt)(size - 4));
        for (int i = 0; i < 4; i++)
            fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
        if (memcmp(fixed, data, size) != 0)
            load(fixed, size);
        free(fixed);
    }
    return 0;
}
