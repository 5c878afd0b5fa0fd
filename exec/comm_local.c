/* comm_local.c: the in-process communicator (comm.h). Ranks are threads
 * of this process, each with its own buffer. An allreduce is two
 * barriers: once every rank has posted its buffer, each rank sums its own
 * slice of the elements over all buffers, in rank order, into a shared
 * result; after the second barrier each copies the result into its
 * buffer. The slices split the work between the ranks' threads; the order
 * of each sum is the same whoever computes it, so the bits are too.
 *
 * Waits are woken by the last rank to arrive or by abort (core/barrier.h);
 * nothing else can be waited for (the ranks' own loops bound their waits
 * for data). */
#include "exec/comm.h"

#include "core/barrier.h"
#include "core/clock.h"

#include <stdlib.h>
#include <string.h>

typedef struct comm_local {
    sl__comm base;
    sl__barrier bar;        /* the ranks' meeting point; abort breaks it */
    size_t n_max;
    float **bufs;           /* (size) each rank's buffer */
    float *result;          /* (n_max) the mean */
    double *work_ms;        /* (size) each rank's time summing and copying */
    double sim_gbit_s;      /* a modelled network (0: none) */
    double sim_latency_us;
} comm_local;

static int local_allreduce_mean(sl__comm *base, int rank, float *buf, size_t n, sl__error *err)
{
    comm_local *c = (comm_local *)base;
    const int size = base->size;
    size_t lo, hi;
    double t0, net_until;
    int rc;

    if (rank < 0 || rank >= size || n > c->n_max)
        return sl__errf(err, SL_EINVAL, "allreduce: rank %d of %d, %zu elements of %zu at most",
                        rank, size, n, c->n_max);
    c->bufs[rank] = buf; /* read by the others after the barrier */
    rc = sl__barrier_wait(&c->bar, err);
    if (rc < 0)
        return rc;
    t0 = sl__now_ms();
    net_until = c->sim_gbit_s > 0
                    ? t0 + sl__ring_allreduce_ms(n, size, c->sim_gbit_s, c->sim_latency_us)
                    : 0;
    lo = n * (size_t)rank / (size_t)size;
    hi = n * (size_t)(rank + 1) / (size_t)size;
    for (size_t k = lo; k < hi; k++) {
        float sum = c->bufs[0][k];
        for (int r = 1; r < size; r++)
            sum += c->bufs[r][k];
        c->result[k] = sum / (float)size;
    }
    c->work_ms[rank] += sl__now_ms() - t0;
    rc = sl__barrier_wait(&c->bar, err);
    if (rc < 0)
        return rc;
    if (net_until > 0)
        sl__sleep_until_ms(net_until); /* the modelled network's share */
    /* The next allreduce writes result only after its first barrier, which
     * every rank reaches after this copy. */
    t0 = sl__now_ms();
    memcpy(buf, c->result, n * sizeof *buf);
    c->work_ms[rank] += sl__now_ms() - t0;
    return SL_OK;
}

static double local_work_ms(const sl__comm *base, int rank)
{
    const comm_local *c = (const comm_local *)base;
    return rank >= 0 && rank < base->size ? c->work_ms[rank] : -1.0;
}

static void local_abort(sl__comm *base, int status, const char *why)
{
    sl__barrier_abort(&((comm_local *)base)->bar, status, why);
}

static void local_free(sl__comm *base)
{
    comm_local *c = (comm_local *)base;
    sl__barrier_destroy(&c->bar);
    free(c->bufs);
    free(c->result);
    free(c->work_ms);
    free(c);
}

double sl__ring_allreduce_ms(size_t n, int size, double gbit_s, double latency_us)
{
    double bytes = (double)n * sizeof(float);
    if (size < 2 || gbit_s <= 0)
        return 0.0;
    return 2.0 * (size - 1) / size * bytes * 8.0 / (gbit_s * 1e9) * 1e3 +
           2.0 * (size - 1) * latency_us / 1e3;
}

void sl__comm_local_sim_network(sl__comm *base, double gbit_s, double latency_us)
{
    comm_local *c = (comm_local *)base;
    c->sim_gbit_s = gbit_s;
    c->sim_latency_us = latency_us;
}

int sl__comm_local_arrived(sl__comm *base)
{
    return sl__barrier_arrived(&((comm_local *)base)->bar);
}

static const sl__comm_iface local_iface = {
    .kind = "local",
    .allreduce_mean = local_allreduce_mean,
    .work_ms = local_work_ms,
    .abort = local_abort,
    .free = local_free,
};

int sl__comm_local_new(sl__comm **out, int size, size_t n_max, sl__error *err)
{
    comm_local *c;
    int rc;
    *out = NULL;
    if (size < 1)
        return sl__errf(err, SL_EINVAL, "communicator: %d ranks; give 1 or more", size);
    c = calloc(1, sizeof *c);
    if (!c)
        return sl__errf(err, SL_ENOMEM, "communicator: out of memory");
    c->base.iface = &local_iface;
    c->base.size = size;
    c->base.processes = 1;
    c->n_max = n_max;
    c->bufs = calloc((size_t)size, sizeof *c->bufs);
    c->work_ms = calloc((size_t)size, sizeof *c->work_ms);
    c->result = malloc((n_max ? n_max : 1) * sizeof *c->result);
    if (!c->bufs || !c->result || !c->work_ms) {
        free(c->bufs);
        free(c->work_ms);
        free(c->result);
        free(c);
        return sl__errf(err, SL_ENOMEM, "communicator: out of memory for %zu floats", n_max);
    }
    if ((rc = sl__barrier_init(&c->bar, size, err)) < 0) {
        free(c->bufs);
        free(c->work_ms);
        free(c->result);
        free(c);
        return rc;
    }
    *out = &c->base;
    return SL_OK;
}
