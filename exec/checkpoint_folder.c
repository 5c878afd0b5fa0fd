/* checkpoint_folder.c: see checkpoint_folder.h. */
#include "exec/checkpoint_folder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Reads a plain decimal (no sign, no leading zero) at *p that ends at the
 * character `end`; on success *p points past `end`. */
static int parse_decimal(const char **p, char end, int64_t *out)
{
    const char *s = *p;
    int64_t v = 0;
    if (*s < '0' || *s > '9' || (*s == '0' && s[1] != end))
        return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        int digit = *s - '0';
        if (v > (INT64_MAX - digit) / 10)
            return 0;
        v = v * 10 + digit;
    }
    if (*s != end)
        return 0;
    *out = v;
    *p = s + 1;
    return 1;
}

/* Past "<prefix>-<epoch>_<step>.ckpt" at the start of name, or NULL. */
static const char *parse_stem(const char *name, const char *prefix, int64_t *epoch,
                              int64_t *step)
{
    size_t plen = strlen(prefix);
    const char *p = name + plen;
    if (strncmp(name, prefix, plen) != 0 || *p != '-')
        return NULL;
    p++;
    if (!parse_decimal(&p, '_', epoch) || !parse_decimal(&p, '.', step))
        return NULL;
    if (strncmp(p, "ckpt", 4) != 0)
        return NULL;
    return p + 4;
}

int sl__ckpt_name_parse(const char *name, const char *prefix, int64_t *epoch, int64_t *step)
{
    const char *rest = parse_stem(name, prefix, epoch, step);
    return rest && *rest == '\0';
}

int sl__ckpt_temp_name(const char *name, const char *prefix)
{
    int64_t epoch, step;
    const char *rest = parse_stem(name, prefix, &epoch, &step);
    if (!rest || strncmp(rest, ".tmp-", 5) != 0)
        return 0;
    rest += 5;
    for (int i = 0; i < 6; i++) {
        char ch = rest[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
            return 0;
    }
    return rest[6] == '\0';
}

/* Removes dir/name, a temporary file of ours, if its writer is surely
 * dead: no one holds its lock, and it has content (a writer locks before
 * it writes) or has not been modified for SL__CKPT_STALE_TEMP_SECONDS
 * (an empty file may be a writer's between creating and locking it). A
 * file we cannot open, lock (another process writes it, or the file
 * system has no locks) or judge is left alone. *gone is 1 when it was
 * removed. */
static int remove_stale_temp(int dfd, const char *dir, const char *name, int *gone,
                             sl__error *err)
{
    struct stat st;
    int rc = SL_OK;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    *gone = 0;
    if (fd < 0)
        return SL_OK; /* renamed into place meanwhile, or not a plain file */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (st.st_size > 0 || time(NULL) - st.st_mtime >= SL__CKPT_STALE_TEMP_SECONDS) &&
        flock(fd, LOCK_EX | LOCK_NB) == 0) {
        /* mkstemp never hands out a name that exists, so no new writer can
         * be behind this name while we hold the file. */
        if (unlinkat(dfd, name, 0) == 0)
            *gone = 1;
        else if (errno != ENOENT)
            rc = sl__errf(err, SL_EIO, "checkpoint: cannot remove the stale temporary file %s/%s: %s",
                          dir, name, strerror(errno));
    }
    close(fd); /* drops the lock */
    return rc;
}

int sl__ckpt_remove_temps(const char *dir, const char *prefix,
                          void (*removed)(void *user, const char *path), void *user,
                          sl__error *err)
{
    struct dirent *e;
    int rc = SL_OK;
    DIR *d = opendir(dir);
    if (!d && errno == ENOENT)
        return SL_OK; /* made when the first checkpoint is saved */
    if (!d)
        return sl__errf(err, SL_EIO, "checkpoint: cannot read the folder %s: %s", dir,
                        strerror(errno));
    for (errno = 0; rc == SL_OK && (e = readdir(d)) != NULL; errno = 0) {
        int gone;
        if (!sl__ckpt_temp_name(e->d_name, prefix))
            continue;
        rc = remove_stale_temp(dirfd(d), dir, e->d_name, &gone, err);
        if (rc == SL_OK && gone && removed) {
            size_t len = strlen(dir) + strlen(e->d_name) + 2;
            char *path = malloc(len);
            if (!path) {
                rc = sl__errf(err, SL_ENOMEM, "checkpoint: out of memory");
                break;
            }
            snprintf(path, len, "%s/%s", dir, e->d_name);
            removed(user, path);
            free(path);
        }
    }
    if (rc == SL_OK && errno != 0)
        rc = sl__errf(err, SL_EIO, "checkpoint: cannot read the folder %s: %s", dir,
                      strerror(errno));
    closedir(d);
    return rc;
}

typedef struct ckpt_file {
    int64_t epoch, step;
    int keep;
    char *name;
} ckpt_file;

/* Newest first. */
static int newer_first(const void *a, const void *b)
{
    const ckpt_file *x = a, *y = b;
    if (x->epoch != y->epoch)
        return x->epoch > y->epoch ? -1 : 1;
    if (x->step != y->step)
        return x->step > y->step ? -1 : 1;
    return 0;
}

int sl__ckpt_prune(const char *dir, const char *prefix, const char *saved, int keep_max,
                   sl__error *err)
{
    ckpt_file *files = NULL;
    size_t n = 0, cap = 0;
    int kept = 0, rc = SL_OK;
    struct dirent *e;
    DIR *d = opendir(dir);
    if (!d)
        return sl__errf(err, SL_EIO, "checkpoint: cannot read the folder %s: %s", dir,
                        strerror(errno));
    for (errno = 0; rc == SL_OK && (e = readdir(d)) != NULL; errno = 0) {
        struct stat st;
        int64_t epoch, step;
        if (sl__ckpt_temp_name(e->d_name, prefix)) {
            int gone;
            rc = remove_stale_temp(dirfd(d), dir, e->d_name, &gone, err);
            continue;
        }
        if (keep_max == 0 || !sl__ckpt_name_parse(e->d_name, prefix, &epoch, &step))
            continue;
        /* We write plain files: a folder or a link of that name is not ours. */
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            ckpt_file *more = realloc(files, ncap * sizeof *files);
            if (!more) {
                rc = sl__errf(err, SL_ENOMEM, "checkpoint: out of memory");
                break;
            }
            files = more;
            cap = ncap;
        }
        files[n].epoch = epoch;
        files[n].step = step;
        files[n].keep = strcmp(e->d_name, saved) == 0;
        files[n].name = strdup(e->d_name);
        if (!files[n].name) {
            rc = sl__errf(err, SL_ENOMEM, "checkpoint: out of memory");
            break;
        }
        kept += files[n].keep;
        n++;
    }
    if (rc == SL_OK && errno != 0)
        rc = sl__errf(err, SL_EIO, "checkpoint: cannot read the folder %s: %s", dir,
                      strerror(errno));
    if (rc == SL_OK && keep_max > 0 && n > (size_t)keep_max) {
        qsort(files, n, sizeof *files, newer_first);
        for (size_t i = 0; i < n; i++) {
            if (!files[i].keep && kept < keep_max) {
                files[i].keep = 1;
                kept++;
            }
        }
        for (size_t i = 0; i < n && rc == SL_OK; i++) {
            /* ENOENT: another process pruned it first. */
            if (!files[i].keep && unlinkat(dirfd(d), files[i].name, 0) != 0 && errno != ENOENT)
                rc = sl__errf(err, SL_EIO, "checkpoint: cannot remove the old checkpoint %s/%s: %s",
                              dir, files[i].name, strerror(errno));
        }
    }
    for (size_t i = 0; i < n; i++)
        free(files[i].name);
    free(files);
    closedir(d);
    return rc;
}
