/* check_checkpoint_folder.c: ModelCheckpoint's keep_max prunes a folder by
 * what it holds, not by what its own process wrote: an earlier run's
 * checkpoints go (newest kept by parsed epoch and step, the file just
 * saved always among them), a killed writer's temporary file goes (at the
 * next run's start too), a live writer's stays, and files that do not
 * match <prefix>-<epoch>_<step>.ckpt exactly are never touched. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/atomic_file.h"
#include "exec/checkpoint_folder.h"
#include "sluice/sluice.h"
#include "testutil.h"

Suite *make_checkpoint_folder_suite(void);

static char *tmp; /* a fresh folder per test */

static void setup_tmp(void)
{
    tmp = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmp);
}

static void teardown_tmp(void)
{
    tu_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char *path = tu_path(dir, name);
    ck_assert_int_eq(tu_write_bytes(path, text, strlen(text), 0), 0);
    free(path);
}

/* Sets the modification time of dir/name to seconds ago. */
static void age_file(const char *dir, const char *name, int seconds)
{
    char *path = tu_path(dir, name);
    struct timespec times[2];
    clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, path, times, 0), 0);
    free(path);
}

static void expect_listing(const char *dir, const char *want)
{
    char got[4096];
    tu_listing(dir, got, sizeof got);
    ck_assert_str_eq(got, want);
}

static sl_model *small_model(void)
{
    sl_model_options o;
    sl_model *m = NULL;
    char err[512];
    sl_model_options_init(&o);
    o.context.threads = 1;
    ck_assert_msg(sl_model_new(&m, &o, err, sizeof err) == SL_OK, "%s", err);
    return m;
}

/* What training does when an epoch ends: the callback saves. */
static void epoch_end(sl_callback *cb, sl_model *m, int64_t epoch, int64_t step)
{
    sl_train_info info;
    memset(&info, 0, sizeof info);
    info.epoch = epoch;
    info.step_in_epoch = step;
    info.model = m;
    ck_assert_msg(cb->epoch_end(cb->self, &info) == SL_OK, "%s", sl_model_last_error(m));
}

START_TEST(test_ckpt_names)
{
    int64_t e, s;
    ck_assert(sl__ckpt_name_parse("lenet-1_10.ckpt", "lenet", &e, &s));
    ck_assert(e == 1 && s == 10);
    ck_assert(sl__ckpt_name_parse("lenet-0_0.ckpt", "lenet", &e, &s));
    ck_assert(sl__ckpt_name_parse("le.net-9223372036854775807_1.ckpt", "le.net", &e, &s));
    ck_assert(e == INT64_MAX);
    ck_assert(!sl__ckpt_name_parse("lenet-9223372036854775808_1.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet-01_1.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet-1_1.ckpt.bak", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet-1_1.ckp", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet-1-1.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet--1_1.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet-+1_1.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet-1_.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet2-1_1.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("other-1_1.ckpt", "lenet", &e, &s));
    ck_assert(!sl__ckpt_name_parse("lenet-foo-1_1.ckpt", "lenet", &e, &s));
    ck_assert(sl__ckpt_temp_name("lenet-1_10.ckpt.tmp-aZ09xY", "lenet"));
    ck_assert(!sl__ckpt_temp_name("lenet-1_10.ckpt.tmp-aZ09x", "lenet"));
    ck_assert(!sl__ckpt_temp_name("lenet-1_10.ckpt.tmp-aZ09xYz", "lenet"));
    ck_assert(!sl__ckpt_temp_name("lenet-1_10.ckpt.tmp-aZ0.xY", "lenet"));
    ck_assert(!sl__ckpt_temp_name("other-1_10.ckpt.tmp-aZ09xY", "lenet"));
    ck_assert(!sl__ckpt_temp_name("lenet-1_10.ckpt", "lenet"));
}
END_TEST

/* A folder an earlier run left ten checkpoints in (keep 5 or not), with
 * killed writers' temporary files (an old one, a young one with content),
 * a live writer's, an empty young one and files that only look like ours.
 * A new run with keep 5 leaves the newest five by (epoch, step), its own
 * and the earlier run's alike, removes the orphans and touches nothing
 * else. */
START_TEST(test_ckpt_prunes_an_earlier_run)
{
    static const char *const unrelated[] = {
        "notes.txt", "other-1_1.ckpt", "lenet2-1_1.ckpt", "lenet-1_1.ckpt.bak",
        "lenet-01_1.ckpt", "lenet-1_x.ckpt", "lenet--1_1.ckpt", "lenet-1_1.ckpt.tmp-abc",
        "lenet-1_1.ckpt.tmp-abcdefg", "other-1_1.ckpt.tmp-Ab3dE9"};
    char *dir = tu_path(tmp, "ckpts"), *sub, *live;
    sl_callback cb;
    sl_model *m;
    int fd;
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    for (int step = 2; step <= 20; step += 2) {
        char name[64];
        snprintf(name, sizeof name, "lenet-1_%d.ckpt", step);
        put_file(dir, name, "old");
    }
    for (size_t i = 0; i < sizeof unrelated / sizeof unrelated[0]; i++) {
        put_file(dir, unrelated[i], "not ours");
        age_file(dir, unrelated[i], 3600);
    }
    sub = tu_path(dir, "lenet-1_3.ckpt"); /* a folder with a checkpoint's name */
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    put_file(dir, "lenet-1_14.ckpt.tmp-Ab3dE9", "torn"); /* its writer died an hour ago */
    age_file(dir, "lenet-1_14.ckpt.tmp-Ab3dE9", 3600);
    put_file(dir, "lenet-1_12.ckpt.tmp-Dead12", "torn"); /* its writer died just now */
    /* empty and young: may be a writer's between creating and locking it */
    put_file(dir, "lenet-1_16.ckpt.tmp-Zz9yY8", "");
    put_file(dir, "lenet-1_18.ckpt.tmp-Live01", "half"); /* a writer still holds it */
    age_file(dir, "lenet-1_18.ckpt.tmp-Live01", 3600);
    live = tu_path(dir, "lenet-1_18.ckpt.tmp-Live01");
    fd = open(live, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);

    m = small_model();
    ck_assert_int_eq(sl_callback_checkpoint(&cb, dir, "lenet", 0, 5), SL_OK);
    epoch_end(&cb, m, 1, 10);
    epoch_end(&cb, m, 1, 20);
    epoch_end(&cb, m, 2, 10);
    epoch_end(&cb, m, 2, 20);
    expect_listing(dir, "lenet--1_1.ckpt lenet-01_1.ckpt lenet-1_1.ckpt.bak "
                        "lenet-1_1.ckpt.tmp-abc lenet-1_1.ckpt.tmp-abcdefg "
                        "lenet-1_16.ckpt lenet-1_16.ckpt.tmp-Zz9yY8 lenet-1_18.ckpt "
                        "lenet-1_18.ckpt.tmp-Live01 lenet-1_20.ckpt lenet-1_3.ckpt "
                        "lenet-1_x.ckpt lenet-2_10.ckpt lenet-2_20.ckpt lenet2-1_1.ckpt "
                        "notes.txt other-1_1.ckpt other-1_1.ckpt.tmp-Ab3dE9 ");
    /* The newest is a real checkpoint of this run. */
    {
        char *newest = tu_path(dir, "lenet-2_20.ckpt");
        ck_assert_int_eq(sl_model_load(m, newest), SL_OK);
        free(newest);
    }
    /* Once its writer lets go, the old temporary file is an orphan. */
    close(fd);
    epoch_end(&cb, m, 3, 10);
    expect_listing(dir, "lenet--1_1.ckpt lenet-01_1.ckpt lenet-1_1.ckpt.bak "
                        "lenet-1_1.ckpt.tmp-abc lenet-1_1.ckpt.tmp-abcdefg "
                        "lenet-1_16.ckpt.tmp-Zz9yY8 lenet-1_18.ckpt lenet-1_20.ckpt "
                        "lenet-1_3.ckpt lenet-1_x.ckpt lenet-2_10.ckpt lenet-2_20.ckpt "
                        "lenet-3_10.ckpt lenet2-1_1.ckpt notes.txt other-1_1.ckpt "
                        "other-1_1.ckpt.tmp-Ab3dE9 ");
    sl_callback_release(&cb);
    sl_model_free(m);
    free(live);
    free(sub);
    free(dir);
}
END_TEST

/* A new run behind an earlier one (the folder holds epoch 5's files, the
 * run starts at epoch 1): the file just saved is kept whatever its number,
 * the rest by (epoch, step). keep_max 0 keeps every checkpoint. */
START_TEST(test_ckpt_new_run_behind_an_old_one)
{
    char *dir = tu_path(tmp, "ckpts");
    sl_callback cb;
    sl_model *m;
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    for (int step = 1; step <= 10; step++) {
        char name[64];
        snprintf(name, sizeof name, "lenet-5_%d.ckpt", step);
        put_file(dir, name, "old");
    }
    m = small_model();
    ck_assert_int_eq(sl_callback_checkpoint(&cb, dir, "lenet", 0, 3), SL_OK);
    epoch_end(&cb, m, 1, 10);
    expect_listing(dir, "lenet-1_10.ckpt lenet-5_10.ckpt lenet-5_9.ckpt ");
    epoch_end(&cb, m, 1, 20);
    expect_listing(dir, "lenet-1_20.ckpt lenet-5_10.ckpt lenet-5_9.ckpt ");
    sl_callback_release(&cb);

    put_file(dir, "lenet-1_1.ckpt.tmp-Ab3dE9", "torn");
    age_file(dir, "lenet-1_1.ckpt.tmp-Ab3dE9", 3600);
    ck_assert_int_eq(sl_callback_checkpoint(&cb, dir, "lenet", 0, 0), SL_OK);
    epoch_end(&cb, m, 2, 10);
    expect_listing(dir, "lenet-1_20.ckpt lenet-2_10.ckpt lenet-5_10.ckpt lenet-5_9.ckpt ");
    sl_callback_release(&cb);
    sl_model_free(m);
    free(dir);
}
END_TEST

/* A real writer (sl__atomic_open in another process) that is killed
 * mid-save: while it lives its temporary file stays, however old; once it
 * is dead the next save removes the file. */
START_TEST(test_ckpt_killed_writer_orphan)
{
    char *dir = tu_path(tmp, "ckpts"), *target, tmpname[4096];
    int ready[2], status;
    ssize_t got;
    pid_t pid;
    sl_callback cb;
    sl_model *m;
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    target = tu_path(dir, "lenet-1_5.ckpt");
    ck_assert_int_eq(pipe(ready), 0);
    /* Before the model exists, so the child is forked from one thread. */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        sl__atomic_file af;
        sl__error err;
        if (sl__atomic_open(&af, target, &err) != SL_OK || fputs("half a checkpoint", af.f) < 0 ||
            fflush(af.f) != 0)
            _exit(1);
        if (write(ready[1], af.tmp, strlen(af.tmp)) < 0)
            _exit(1);
        for (;;)
            pause(); /* killed mid-save */
    }
    close(ready[1]);
    got = read(ready[0], tmpname, sizeof tmpname - 1);
    ck_assert_int_gt(got, 0);
    tmpname[got] = '\0';
    close(ready[0]);
    ck_assert_int_eq(strncmp(tmpname, target, strlen(target)), 0);
    age_file(dir, strrchr(tmpname, '/') + 1, 3600);

    m = small_model();
    ck_assert_int_eq(sl_callback_checkpoint(&cb, dir, "lenet", 0, 5), SL_OK);
    epoch_end(&cb, m, 1, 10);
    ck_assert_int_eq(access(tmpname, F_OK), 0); /* its writer is alive */
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    epoch_end(&cb, m, 1, 20);
    ck_assert_msg(access(tmpname, F_OK) != 0, "%s survived its dead writer", tmpname);
    expect_listing(dir, "lenet-1_10.ckpt lenet-1_20.ckpt ");
    sl_callback_release(&cb);
    sl_model_free(m);
    free(target);
    free(dir);
}
END_TEST

/* A callback that, as the run begins, records whether a file exists and
 * stops the run before its first step. */
typedef struct probe {
    const char *path;
    int existed;
} probe;

static int probe_begin(void *self, const sl_train_info *info)
{
    probe *p = self;
    (void)info;
    p->existed = access(p->path, F_OK) == 0;
    return 1;
}

/* The paths sl_checkpoint_remove_temps reports. */
typedef struct removed_list {
    int n;
    char path[4][4096];
} removed_list;

static void note_removed(void *user, const char *path)
{
    removed_list *r = user;
    ck_assert_int_lt(r->n, 4);
    snprintf(r->path[r->n++], sizeof r->path[0], "%s", path);
}

/* What a run killed during a save leaves (a temporary file with content,
 * its lock gone with its writer) is gone by the time the folder's next run
 * has begun, however young, even if that run never saves; so is an empty
 * one a minute old. A live writer's, an empty young one (perhaps a writer's
 * before its lock) and every other file stay. sl_checkpoint_remove_temps
 * does the same and names each file it removed. */
START_TEST(test_ckpt_run_start_removes_leftover_temps)
{
    static const char *const kept[] = {"notes.txt", "lenet-1_7.ckpt.tmp-abc",
                                       "other-1_7.ckpt.tmp-Kill01", "lenet-1_7.ckpt.bak"};
    char *dir = tu_path(tmp, "ckpts"), *data = tu_mnist_dir(64, 1), *killed, *live;
    sl_callback cbs[2];
    sl_callback *list[2] = {&cbs[0], &cbs[1]};
    sl_dataset *ds;
    sl_model *m;
    probe pr;
    removed_list rl;
    char err[256];
    int fd;
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        put_file(dir, kept[i], "not ours");
        age_file(dir, kept[i], 3600);
    }
    put_file(dir, "lenet-1_7.ckpt.tmp-Kill01", "half a checkpoint"); /* killed just now */
    put_file(dir, "lenet-1_8.ckpt.tmp-Old000", "");                  /* empty, an hour old */
    age_file(dir, "lenet-1_8.ckpt.tmp-Old000", 3600);
    put_file(dir, "lenet-1_9.ckpt.tmp-New000", ""); /* empty and young */
    put_file(dir, "lenet-1_6.ckpt.tmp-Live01", "half"); /* a writer still holds it */
    live = tu_path(dir, "lenet-1_6.ckpt.tmp-Live01");
    fd = open(live, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
    killed = tu_path(dir, "lenet-1_7.ckpt.tmp-Kill01");

    m = small_model();
    ds = tu_lenet_pipeline(data, SL_MNIST_TRAIN, 1, 3, 1, 1, 0);
    ck_assert_int_eq(sl_callback_checkpoint(&cbs[0], dir, "lenet", 0, 5), SL_OK);
    pr = (probe){killed, -1};
    memset(&cbs[1], 0, sizeof cbs[1]);
    cbs[1].self = &pr;
    cbs[1].begin = probe_begin; /* after the checkpoint's begin: stops the run there */
    ck_assert_msg(sl_model_train(m, 1, ds, list, 2) == SL_OK, "%s", sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), 0);
    ck_assert_msg(pr.existed == 0, "the killed save's file was still there as the run began");
    expect_listing(dir, "lenet-1_6.ckpt.tmp-Live01 lenet-1_7.ckpt.bak lenet-1_7.ckpt.tmp-abc "
                        "lenet-1_9.ckpt.tmp-New000 notes.txt other-1_7.ckpt.tmp-Kill01 ");
    sl_callback_release(&cbs[0]);

    /* The same rules, told what went. */
    put_file(dir, "lenet-2_1.ckpt.tmp-Kill02", "half a checkpoint");
    memset(&rl, 0, sizeof rl);
    ck_assert_int_eq(sl_checkpoint_remove_temps(dir, "lenet", note_removed, &rl, err, sizeof err),
                     SL_OK);
    ck_assert_int_eq(rl.n, 1);
    ck_assert_str_eq(strrchr(rl.path[0], '/') + 1, "lenet-2_1.ckpt.tmp-Kill02");
    ck_assert_int_eq(strncmp(rl.path[0], dir, strlen(dir)), 0);
    expect_listing(dir, "lenet-1_6.ckpt.tmp-Live01 lenet-1_7.ckpt.bak lenet-1_7.ckpt.tmp-abc "
                        "lenet-1_9.ckpt.tmp-New000 notes.txt other-1_7.ckpt.tmp-Kill01 ");
    /* Once its writer lets go, the live writer's file is an orphan too. */
    close(fd);
    memset(&rl, 0, sizeof rl);
    ck_assert_int_eq(sl_checkpoint_remove_temps(dir, "lenet", note_removed, &rl, err, sizeof err),
                     SL_OK);
    ck_assert_int_eq(rl.n, 1);
    ck_assert_str_eq(strrchr(rl.path[0], '/') + 1, "lenet-1_6.ckpt.tmp-Live01");
    /* A folder not made yet holds nothing; a missing prefix is refused. */
    {
        char *none = tu_path(tmp, "not-yet");
        ck_assert_int_eq(sl_checkpoint_remove_temps(none, "lenet", NULL, NULL, err, sizeof err),
                         SL_OK);
        free(none);
    }
    ck_assert_int_eq(sl_checkpoint_remove_temps(dir, "", NULL, NULL, err, sizeof err), SL_EINVAL);
    sl_model_free(m);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(data);
    free(killed);
    free(live);
    free(dir);
}
END_TEST

Suite *make_checkpoint_folder_suite(void)
{
    Suite *s = suite_create("checkpoint_folder");
    TCase *tc = tu_tcase("core", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_ckpt_names);
    tcase_add_test(tc, test_ckpt_prunes_an_earlier_run);
    tcase_add_test(tc, test_ckpt_new_run_behind_an_old_one);
    tcase_add_test(tc, test_ckpt_killed_writer_orphan);
    tcase_add_test(tc, test_ckpt_run_start_removes_leftover_temps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_checkpoint_folder_suite);
}
