/* time_limit.c: tu_tcase's watchdog (time_limit.h). The limit is an alarm
 * armed by a checked fixture, which Check runs inside the test's own
 * process (the forked child, or the runner itself with CK_FORK=no). When
 * it rings, the thread it lands on prints its stack, then asks every
 * other thread of the process in turn (a signal sent to that thread) to
 * print its own, and aborts. Only async-signal-safe calls run in the
 * handlers; backtrace() is called once when the alarm is armed, so that
 * its first call, which loads the unwinder, does not happen in a
 * handler. */
#include "tests/time_limit.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DUMP_SIGNAL SIGUSR2 /* asks one thread for its stack */
#define GRACE_SECONDS 30    /* Check's own timeout comes this much later */

static unsigned armed_seconds;  /* the running test's limit (scaled), for the message */
static atomic_int answered;     /* set by a thread once its stack is out */

static double multiplier(void)
{
    const char *s = getenv("CK_TIMEOUT_MULTIPLIER");
    double m = s ? strtod(s, NULL) : 1.0;
    return m > 0.0 ? m : 1.0;
}

/* write(2) of a whole string; a short write is left as it is. */
static void say(const char *s)
{
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

/* Decimal digits of v into buf (at least 21 bytes), without stdio. */
static const char *digits(unsigned long v, char *buf)
{
    char *p = buf + 20;
    *p = '\0';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

static void print_stack(void)
{
    void *frames[64];
    char num[21];
    int n = backtrace(frames, 64);
    say("--- thread ");
    say(digits((unsigned long)syscall(SYS_gettid), num));
    say(":\n");
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

static void on_dump_request(int sig)
{
    (void)sig;
    print_stack();
    atomic_store(&answered, 1);
}

/* Sends DUMP_SIGNAL to thread tid and waits up to 1 s for its answer (a
 * thread that blocks the signal never answers). */
static void ask_thread(pid_t tid)
{
    struct timespec ms = {0, 1000000};
    int i;
    atomic_store(&answered, 0);
    if (syscall(SYS_tgkill, getpid(), tid, DUMP_SIGNAL) != 0)
        return; /* it ended meanwhile */
    for (i = 0; i < 1000 && !atomic_load(&answered); i++)
        nanosleep(&ms, NULL);
    if (!atomic_load(&answered))
        say("--- (a thread did not answer within 1 s: it blocks the signal)\n");
}

/* The tids in /proc/self/task, read with getdents64 (opendir allocates). */
static void ask_every_other_thread(void)
{
    char buf[4096];
    long self = syscall(SYS_gettid);
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    long n;
    if (fd < 0)
        return;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        long off = 0;
        while (off < n) {
            /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
            unsigned short reclen;
            const char *name = buf + off + 19;
            long tid = 0;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            off += reclen;
            if (name[0] < '0' || name[0] > '9')
                continue;
            for (; *name >= '0' && *name <= '9'; name++)
                tid = tid * 10 + (*name - '0');
            if (tid != self)
                ask_thread((pid_t)tid);
        }
    }
    close(fd);
}

static void on_time_limit(int sig)
{
    char num[21];
    (void)sig;
    say("\ntime limit: test \"");
    say(tcase_name() ? tcase_name() : "?");
    say("\" still running after ");
    say(digits(armed_seconds, num));
    say(" s; the stack of each thread follows (addr2line -e <program> <offset> names "
        "a static function)\n");
    print_stack();
    ask_every_other_thread();
    say("--- end of stacks\n");
    abort();
}

/* Arms the alarm for the test about to run: a checked fixture, so it runs
 * in the test's own process. */
static void arm(unsigned seconds)
{
    struct sigaction sa;
    void *warm[1];
    armed_seconds = (unsigned)(seconds * multiplier() + 0.5);
    if (armed_seconds == 0)
        armed_seconds = 1;
    backtrace(warm, 1);
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_dump_request;
    sigaction(DUMP_SIGNAL, &sa, NULL);
    sa.sa_handler = on_time_limit;
    sigaction(SIGALRM, &sa, NULL);
    alarm(armed_seconds);
}

static void disarm(void)
{
    alarm(0);
}

/* Check's fixtures take no argument, so each limit a suite uses has its
 * own pair of plain functions. */
static void arm_30(void) { arm(30); }
static void arm_60(void) { arm(60); }
static void arm_120(void) { arm(120); }
static void arm_240(void) { arm(240); }
static void arm_300(void) { arm(300); }
static void arm_600(void) { arm(600); }
static void arm_1200(void) { arm(1200); }

static const struct {
    unsigned seconds;
    void (*arm)(void);
} limits[] = {
    {30, arm_30},   {60, arm_60},   {120, arm_120},   {240, arm_240},
    {300, arm_300}, {600, arm_600}, {1200, arm_1200},
};

TCase *tu_tcase(const char *name, unsigned seconds)
{
    TCase *tc;
    size_t i;
    for (i = 0; i < sizeof limits / sizeof limits[0]; i++)
        if (limits[i].seconds == seconds)
            break;
    if (i == sizeof limits / sizeof limits[0]) {
        fprintf(stderr, "tu_tcase(\"%s\", %u): no such limit; add it to tests/time_limit.c\n",
                name, seconds);
        abort();
    }
    tc = tcase_create(name);
    /* Check multiplies this by CK_TIMEOUT_MULTIPLIER itself. */
    tcase_set_timeout(tc, seconds + GRACE_SECONDS);
    tcase_add_checked_fixture(tc, limits[i].arm, disarm);
    return tc;
}
