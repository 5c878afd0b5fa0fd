/* dump_pipeline.c: runs the seeds' LeNet map ops over an MNIST folder, in
 * file order (no shuffle, no batch), and writes what comes out as raw data
 * for bench/compare_opencv.py to compare with OpenCV:
 *
 *   MnistDataset(DIR, usage, shuffle=False)
 *   image: Resize(32, 32, bilinear), Rescale(1/255, 0),
 *          Rescale(1/0.3081, -0.1307/0.3081), HWC2CHW -> float32 (1, 32, 32)
 *   label: TypeCast(int32)
 *
 * IMAGES_OUT gets every image as float32 (1, 32, 32), native byte order, one
 * after the other; LABELS_OUT every label as int32. Each file is written
 * under a temporary name and renamed when complete. Uses the public API only.
 *
 * Usage: dump_pipeline [--usage train|test] [--limit N] DIR IMAGES_OUT LABELS_OUT
 * Exit status: 0 on success, 1 on a runtime error, 2 on a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sluice/sluice.h>

static const char *prog = "dump_pipeline";

static int usage(void)
{
    fprintf(stderr, "usage: %s [--usage train|test] [--limit N] DIR IMAGES_OUT LABELS_OUT\n",
            prog);
    return 2;
}

/* An output file written under PATH.tmp, renamed to PATH by out_close. */
typedef struct out_file {
    const char *path;
    char tmp[4096];
    FILE *f;
} out_file;

static int out_open(out_file *o, const char *path)
{
    o->path = path;
    o->f = NULL;
    if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp", path) >= sizeof o->tmp) {
        fprintf(stderr, "%s: %s: path too long\n", prog, path);
        return -1;
    }
    if ((o->f = fopen(o->tmp, "wb")) == NULL) {
        fprintf(stderr, "%s: cannot create %s: %s\n", prog, o->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

static int out_write(out_file *o, const sl_tensor *t)
{
    size_t n = sl_tensor_nbytes(t);
    if (fwrite(sl_tensor_data(t), 1, n, o->f) != n) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

/* Closes o; with ok, renames it into place (or reports why not), else
 * removes the temporary file. */
static int out_close(out_file *o, int ok)
{
    if (o->f == NULL) /* never opened */
        return -1;
    if (fclose(o->f) != 0 && ok) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->tmp, strerror(errno));
        ok = 0;
    }
    o->f = NULL;
    if (ok && rename(o->tmp, o->path) != 0) {
        fprintf(stderr, "%s: cannot rename %s to %s: %s\n", prog, o->tmp, o->path,
                strerror(errno));
        ok = 0;
    }
    if (!ok)
        remove(o->tmp);
    return ok ? 0 : -1;
}

/* Describes the pipeline on ds; returns 0, or -1 after printing why. */
static int build(sl_dataset *ds, const char *dir, sl_mnist_usage u, long long limit)
{
    sl_mnist_options opts;
    sl_op *ops[5] = {NULL, NULL, NULL, NULL, NULL}; /* 4 image ops, then the cast */
    char err[256];
    int rc;

    sl_mnist_options_init(&opts);
    opts.dataset_dir = dir;
    opts.usage = u;
    opts.sampler.shuffle = 0;
    opts.sampler.num_samples = limit;
    if ((rc = sl_dataset_mnist(ds, &opts)) < 0)
        goto fail;
    if ((rc = sl_op_resize_new(&ops[0], 32, 32, SL_INTER_LINEAR, err, sizeof err)) < 0 ||
        (rc = sl_op_rescale_new(&ops[1], 1.0 / 255.0, 0.0, err, sizeof err)) < 0 ||
        (rc = sl_op_rescale_new(&ops[2], 1 / 0.3081, -1 * 0.1307 / 0.3081, err, sizeof err)) < 0 ||
        (rc = sl_op_hwc2chw_new(&ops[3], err, sizeof err)) < 0 ||
        (rc = sl_op_type_cast_new(&ops[4], SL_INT32, err, sizeof err)) < 0) {
        fprintf(stderr, "%s: cannot make the ops: %s\n", prog, err);
        goto release;
    }
    if ((rc = sl_dataset_map(ds, &ops[4], 1, "label", NULL, 2)) < 0 ||
        (rc = sl_dataset_map(ds, ops, 4, "image", NULL, 2)) < 0)
        goto fail;
release:
    for (int i = 0; i < 5; i++)
        sl_op_release(ops[i]);
    return rc < 0 ? -1 : 0;
fail:
    fprintf(stderr, "%s: %s\n", prog, sl_dataset_last_error(ds));
    goto release;
}

int main(int argc, char **argv)
{
    sl_mnist_usage u = SL_MNIST_TRAIN;
    long long limit = 0;
    const char *args[3];
    int nargs = 0, ok = 0, rc, image_col, label_col;
    sl_dataset *ds = NULL;
    sl_iterator *it = NULL;
    out_file images = {0}, labels = {0};
    sl_row row;
    long long rows = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--usage") == 0 && i + 1 < argc) {
            a = argv[++i];
            if (strcmp(a, "train") == 0)
                u = SL_MNIST_TRAIN;
            else if (strcmp(a, "test") == 0)
                u = SL_MNIST_TEST;
            else {
                fprintf(stderr, "%s: --usage must be train or test, not '%s'\n", prog, a);
                return 2;
            }
        } else if (strcmp(a, "--limit") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            limit = strtoll(argv[++i], &end, 10);
            if (errno != 0 || end == argv[i] || *end != '\0' || limit < 0) {
                fprintf(stderr, "%s: --limit needs a count >= 0 (0: all), not '%s'\n", prog,
                        argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fprintf(stdout, "usage: %s [--usage train|test] [--limit N] DIR IMAGES_OUT "
                            "LABELS_OUT\n", prog);
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "%s: unknown option or missing value: '%s'\n", prog, a);
            return usage();
        } else if (nargs < 3) {
            args[nargs++] = a;
        } else {
            return usage();
        }
    }
    if (nargs != 3)
        return usage();

    if (sl_dataset_new(&ds) != SL_OK) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    if (build(ds, args[0], u, limit) < 0)
        goto done;
    if (sl_iterator_new(&it, ds, NULL) < 0) {
        fprintf(stderr, "%s: %s\n", prog, sl_dataset_last_error(ds));
        goto done;
    }
    if (out_open(&images, args[1]) < 0 || out_open(&labels, args[2]) < 0)
        goto done;
    image_col = sl_dataset_column_index(ds, "image");
    label_col = sl_dataset_column_index(ds, "label");
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        const sl_tensor *image = row.columns[image_col], *label = row.columns[label_col];
        int bad = 0;
        if (sl_tensor_dtype(image) != SL_FLOAT32 || sl_tensor_numel(image) != 32 * 32 ||
            sl_tensor_dtype(label) != SL_INT32 || sl_tensor_numel(label) != 1) {
            fprintf(stderr, "%s: row %lld: unexpected image %s x%zu or label %s x%zu\n", prog,
                    rows, sl_dtype_name(sl_tensor_dtype(image)), sl_tensor_numel(image),
                    sl_dtype_name(sl_tensor_dtype(label)), sl_tensor_numel(label));
            bad = 1;
        }
        bad = bad || out_write(&images, image) < 0 || out_write(&labels, label) < 0;
        sl_row_clear(&row);
        if (bad)
            goto done;
        rows++;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", prog, sl_iterator_last_error(it));
        goto done;
    }
    ok = 1;
done:
    sl_iterator_free(it);
    sl_dataset_free(ds);
    /* on failure, the temporary files are removed */
    if (out_close(&images, ok) < 0)
        ok = 0;
    if (out_close(&labels, ok) < 0)
        ok = 0;
    if (ok)
        fprintf(stderr, "%s: %lld rows\n", prog, rows);
    return ok ? 0 : 1;
}
