/* make_image_folder.c: writes the ImageFolder tree the C tests use
 * (tests/testutil.h, tu_make_image_folder) for the Python tests, which
 * cannot count on a JPEG encoder of their own.
 *
 * Usage: make_image_folder DIR NCLASSES PER_CLASS WIDTH HEIGHT */
#include <stdio.h>
#include <stdlib.h>

#include "tests/testutil.h"

int main(int argc, char **argv)
{
    int v[4];
    if (argc != 6) {
        fprintf(stderr, "usage: make_image_folder DIR NCLASSES PER_CLASS WIDTH HEIGHT\n");
        return 2;
    }
    for (int i = 0; i < 4; i++) {
        char *end;
        long x = strtol(argv[2 + i], &end, 10);
        if (*end || x < 1 || x > 4096) {
            fprintf(stderr, "make_image_folder: bad number '%s'\n", argv[2 + i]);
            return 2;
        }
        v[i] = (int)x;
    }
    if (tu_make_image_folder(argv[1], v[0], v[1], v[2], v[3]) != 0) {
        fprintf(stderr, "make_image_folder: cannot write %s\n", argv[1]);
        return 1;
    }
    return 0;
}
