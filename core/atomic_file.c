/* atomic_file.c: see atomic_file.h. */
#include "core/atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int sl__atomic_open(sl__atomic_file *af, const char *path, sl__error *err)
{
    size_t len = strlen(path) + 16;
    int fd;
    af->f = NULL;
    af->path = path;
    af->tmp = malloc(len);
    if (!af->tmp)
        return sl__errf(err, SL_ENOMEM, "%s: out of memory", path);
    snprintf(af->tmp, len, "%s.tmp-XXXXXX", path);
    fd = mkstemp(af->tmp);
    if (fd < 0) {
        int e = errno;
        free(af->tmp);
        af->tmp = NULL;
        return sl__errf(err, SL_EIO, "%s: cannot create a file beside it: %s", path,
                        strerror(e));
    }
    /* Held until the file is closed or its writer dies: a cleaner that can
     * take it knows the file is an orphan. A file system without locks
     * only makes such files look alive, which is the safe side. */
    (void)flock(fd, LOCK_EX | LOCK_NB);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        int e = errno;
        close(fd);
        unlink(af->tmp);
        free(af->tmp);
        af->tmp = NULL;
        return sl__errf(err, SL_EIO, "%s: %s", path, strerror(e));
    }
    return SL_OK;
}

int sl__atomic_close(sl__atomic_file *af, int failed, sl__error *err)
{
    int e = 0, failed_errno = errno;
    if (!failed && (ferror(af->f) || fflush(af->f) != 0 || fsync(fileno(af->f)) != 0))
        e = errno ? errno : EIO;
    /* Renamed (or removed) before the close, which drops the lock: the
     * temporary name never shows an unlocked file whose writer lives. */
    if (!failed && e == 0 && rename(af->tmp, af->path) != 0)
        e = errno;
    if (failed || e != 0)
        unlink(af->tmp);
    /* After a rename the bytes are synced and in place: fclose's result can
     * no longer make the write fail. */
    fclose(af->f);
    free(af->tmp);
    af->tmp = NULL;
    af->f = NULL;
    if (failed && e == 0)
        e = failed_errno ? failed_errno : EIO;
    if (failed || e != 0)
        return sl__errf(err, SL_EIO, "%s: cannot write: %s", af->path, strerror(e));
    return SL_OK;
}

int sl__make_dirs(const char *path, sl__error *err)
{
    size_t len = strlen(path);
    char *p = malloc(len + 1);
    int rc = SL_OK;
    if (!p)
        return sl__errf(err, SL_ENOMEM, "%s: out of memory", path);
    memcpy(p, path, len + 1);
    /* Each prefix that ends a component, then the whole path. */
    for (size_t i = 1; i <= len && rc == SL_OK; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = sl__errf(err, SL_EIO, "cannot make the folder %s: %s", p, strerror(errno));
        if (i < len)
            p[i] = '/';
    }
    if (rc == SL_OK) {
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = sl__errf(err, SL_EIO, "%s is not a folder", path);
    }
    free(p);
    return rc;
}
