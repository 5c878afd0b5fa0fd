/* replica.c: the replicas of a model on several devices (replica.h). */
#include "exec/replica.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/tensor_impl.h"
#include "devices/device_impl.h"
#include "exec/distributed_impl.h"
#include "exec/step_impl.h"

int sl__parse_device_list(const char *list, char names[][32], int *n, sl__error *err)
{
    const char *p = list;
    *n = 0;
    if (!list || !*list)
        return sl__errf(err, SL_EINVAL, "devices: the list is empty; give names such as "
                                        "\"cpu:0,cpu:1\"");
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            return sl__errf(err, SL_EINVAL,
                            "devices \"%s\": item %d is empty; give names such as "
                            "\"cpu:0,cpu:1\"",
                            list, *n + 1);
        if (*n == SL__MAX_REPLICAS)
            return sl__errf(err, SL_EINVAL, "devices \"%s\": more than %d devices", list,
                            SL__MAX_REPLICAS);
        if (len >= 32)
            return sl__errf(err, SL_EINVAL, "devices \"%s\": item %d is too long", list,
                            *n + 1);
        memcpy(names[*n], p, len);
        names[*n][len] = '\0';
        for (int i = 0; i < *n; i++)
            if (strcmp(names[i], names[*n]) == 0)
                return sl__errf(err, SL_EINVAL, "devices \"%s\": %s is named twice", list,
                                names[i]);
        if (*n > 0) {
            size_t k0 = strcspn(names[0], ":"), k = strcspn(names[*n], ":");
            if (k0 != k || strncmp(names[0], names[*n], k) != 0)
                return sl__errf(err, SL_EINVAL,
                                "devices \"%s\": %s and %s are of different kinds; the "
                                "replicas of a model run on devices of one kind",
                                list, names[0], names[*n]);
        }
        (*n)++;
        if (!end)
            return SL_OK;
        p = end + 1;
    }
}

static size_t round64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* Rank r > 0's copy of every parameter: one block of its device. */
static int make_values(sl__replica_set *rs, sl__replica *rp)
{
    sl_graph *g = rs->m->g;
    size_t bytes = 0, off = 0;
    int rc;
    rp->values = calloc(g->nnodes, sizeof *rp->values);
    if (!rp->values)
        return sl__errf(&rs->m->err, SL_ENOMEM, "devices: out of memory");
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == SL__OP_PARAM && g->nodes[i].data)
            bytes += round64(g->nodes[i].numel * sizeof(float));
    rc = sl__device_alloc(rp->dev, bytes ? bytes : 64, &rp->block);
    if (rc < 0)
        return sl__errf(&rs->m->err, rc, "device %s: cannot allocate %zu bytes for the "
                        "parameters' replica", sl_device_name(rp->dev), bytes);
    rp->block_bytes = bytes ? bytes : 64;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == SL__OP_PARAM && g->nodes[i].data) {
            rp->values[i] = (float *)((unsigned char *)rp->block + off);
            off += round64(g->nodes[i].numel * sizeof(float));
        }
    return SL_OK;
}

int sl__replicas_sync(sl__replica_set *rs)
{
    sl_graph *g = rs->m->g;
    for (int r = 1; r < rs->n; r++)
        for (size_t i = 0; i < g->nnodes; i++) {
            int rc;
            if (!rs->reps[r].values[i])
                continue;
            rc = sl__device_copy_in(rs->reps[r].dev, rs->reps[r].values[i], g->nodes[i].data,
                                    g->nodes[i].numel * sizeof(float));
            if (rc < 0)
                return sl__errf(&rs->m->err, rc, "device %s: copying '%s' in failed",
                                sl_device_name(rs->reps[r].dev), g->nodes[i].name);
        }
    return SL_OK;
}

/* The updates must come after every gradient (the optimizer adds them
 * last): then [0, update_from) is forward and backward, the rest updates. */
static int check_split(sl_model *m, const sl_step *s)
{
    if (s->update_from >= s->nslots)
        return sl__errf(&m->err, SL_EINVAL, "devices: the training step has no update");
    for (int j = s->update_from; j < s->nslots; j++) {
        const sl__graph_node *nd = &s->g->nodes[s->slots[j].node];
        if (!sl__graph_op_is_update(nd->op) && nd->op != SL__OP_PARAM &&
            nd->op != SL__OP_INPUT)
            return sl__errf(&m->err, SL_EINVAL,
                            "devices: '%s' runs after the first update, so the gradients "
                            "cannot be combined between backward and the updates",
                            nd->name);
    }
    return SL_OK;
}

int sl__replicas_new(sl_model *m, const sl_train_options *o, sl__replica_set **out)
{
    const char *list = o->devices ? o->devices : sl_device_name(m->dev);
    const int distributed = o->distributed != 0;
    char names[SL__MAX_REPLICAS][32];
    sl__replica_set *rs;
    sl_executor_options eo;
    sl__error e;
    int n, rc;

    *out = NULL;
    sl__err_clear(&e);
    rc = sl__parse_device_list(list, names, &n, &e);
    if (rc < 0)
        return sl__errf(&m->err, rc, "train: %s", e.msg);
    if (strcmp(names[0], sl_device_name(m->dev)) != 0)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: devices \"%s\" start with %s, but the model was made on %s; "
                        "list the model's device first",
                        list, names[0], sl_device_name(m->dev));
    rc = check_split(m, m->train_step);
    if (rc < 0)
        return rc;
    rs = calloc(1, sizeof *rs);
    if (!rs)
        return sl__errf(&m->err, SL_ENOMEM, "train: out of memory");
    rs->m = m;
    rs->distributed = distributed;
    rs->check_every_step = o->check_replicas;
    atomic_init(&rs->failed, -1);
    for (int j = m->train_step->update_from; j < m->train_step->nslots; j++)
        if (sl__graph_op_is_update(m->g->nodes[m->train_step->slots[j].node].op))
            rs->ngrad += sl__update_numel(m->train_step, j);
    rs->nfused = rs->ngrad + 2;
    sl_executor_options_init(&eo);
    eo.threads = m->opts.context.threads;
    eo.blas_threads = m->opts.context.blas_threads;
    eo.spin_ns = m->opts.compute_spin_ns;
    for (int r = 0; r < n && rc == SL_OK; r++) {
        sl__replica *rp = &rs->reps[r];
        char err[SL_ERRMSG_LEN];
        rs->n = r + 1; /* what free must undo */
        rp->rank = r;
        if (!(rp->fused = aligned_alloc(64, round64((rs->nfused + 2) * sizeof(float))))) {
            rc = sl__errf(&m->err, SL_ENOMEM, "train: out of memory");
            break;
        }
        if (r == 0) {
            rp->dev = m->dev;
            rp->ex = m->ex;
            rp->step = m->train_step;
            continue;
        }
        rc = sl_device_new(&rp->dev, names[r], m->opts.device_options, err, sizeof err);
        if (rc < 0) {
            sl__errf(&m->err, rc, "train: %s", err);
            break;
        }
        rc = sl__executor_new_on(&rp->ex, &eo, sl__device_core_mask(rp->dev));
        if (rc < 0) {
            sl__errf(&m->err, rc, "train: device %s: cannot start its executor: %s", names[r],
                     sl_strerror(rc));
            break;
        }
        rc = sl__step_new_on(&rp->step, m->g, rp->ex, rp->dev, m->opts.context.mode, &m->net.loss,
                             1, 1);
        if (rc < 0) {
            sl__errf(&m->err, rc, "train: device %s: %s", names[r], sl_graph_last_error(m->g));
            break;
        }
        rc = make_values(rs, rp);
        if (rc == SL_OK)
            sl__step_bind_params(rp->step, rp->values);
    }
    if (rc == SL_OK && distributed)
        rc = sl__comm_mpi_new(&rs->comm, n, rs->nfused, &e);
    else if (rc == SL_OK)
        rc = sl__comm_local_new(&rs->comm, n, rs->nfused, &e);
    if (rc == SL_OK && !distributed && o->sim_network_gbit_s > 0)
        sl__comm_local_sim_network(rs->comm, o->sim_network_gbit_s, o->sim_network_latency_us);
    if (rc < 0 && e.status < 0 && m->err.status >= 0)
        sl__errf(&m->err, rc, "train: %s", e.msg);
    if (rc == SL_OK)
        rc = sl__replicas_sync(rs);
    if (rc == SL_OK && distributed) {
        /* every rank must start from the same parameters */
        int same = 0;
        rc = sl__comm_agree(rs->comm, sl__replicas_hash(rs), &same, &e);
        if (rc < 0)
            sl__errf(&m->err, rc, "train: %s", e.msg);
        else if (!same) {
            sl__distributed_failure_shared(1); /* every rank sees it */
            rc = sl__errf(&m->err, SL_EINVAL,
                          "train: the ranks start from different parameters: give every rank "
                          "the same seed (or load the same checkpoint on each)");
        }
    }
    if (rc < 0) {
        sl__replicas_free(rs);
        return rc;
    }
    *out = rs;
    return SL_OK;
}

void sl__replicas_free(sl__replica_set *rs)
{
    if (!rs)
        return;
    for (int r = rs->n - 1; r >= 0; r--) {
        sl__replica *rp = &rs->reps[r];
        for (size_t i = 0; i < SL_MAX_COLUMNS; i++)
            if (rp->staging[i])
                sl__device_free(rp->dev, rp->staging[i], rp->staging_bytes[i]);
        free(rp->fused);
        if (r == 0)
            continue;
        sl_step_free(rp->step);
        sl_executor_free(rp->ex);
        if (rp->block)
            sl__device_free(rp->dev, rp->block, rp->block_bytes);
        free(rp->values);
        sl_device_free(rp->dev);
    }
    sl__comm_free(rs->comm);
    free(rs);
}

/* Copies the gradients of rank r's step into its fused buffer (to != 0),
 * or the buffer's mean back into them. */
static void move_grads(sl__replica *rp, int to)
{
    sl_step *s = rp->step;
    size_t off = 0;
    for (int j = s->update_from; j < s->nslots; j++) {
        size_t bytes;
        float *grad;
        if (!sl__graph_op_is_update(s->g->nodes[s->slots[j].node].op))
            continue;
        grad = sl__step_value(s, sl__step_update_grad(s, j));
        bytes = sl__update_numel(s, j) * sizeof(float);
        if (to)
            memcpy(rp->fused + off, grad, bytes);
        else
            memcpy(grad, rp->fused + off, bytes);
        off += bytes / sizeof(float);
    }
}

int sl__replica_step(sl__replica_set *rs, int r, sl_tensor *const *feed, size_t n,
                     int *stepped, float *loss)
{
    sl__replica *rp = &rs->reps[r];
    sl_step *s = rp->step;
    double t0 = sl__now_ms(), t1;
    int rc;

    *stepped = 0;
    if (feed) {
        rc = sl__step_run_slots(s, feed, n, 0, s->update_from);
        if (rc < 0)
            return sl__errf(&rp->err, rc, "%s", sl_step_last_error(s));
        t1 = sl__now_ms();
        rp->compute_ms += t1 - t0;
        t0 = t1;
        move_grads(rp, 1);
        rp->fused[rs->ngrad] = *(const float *)sl_step_output(s, 0, NULL);
        rp->fused[rs->ngrad + 1] = 1.0f;
    } else {
        memset(rp->fused, 0, rs->nfused * sizeof(float));
    }
    t1 = sl__now_ms();
    rp->fuse_ms += t1 - t0;
    rc = sl__comm_allreduce_mean(rs->comm, r, rp->fused, rs->nfused, &rp->err);
    t0 = sl__now_ms();
    rp->allreduce_ms += t0 - t1;
    if (rc == SL_ECANCELED && sl__comm_stopped(rs->comm))
        atomic_store(&rs->m->stop, 1); /* another rank stopped: so does this one */
    if (rc < 0)
        return rc;
    /* 1 exactly when every replica (of every rank) gave 1: a sum of ones
     * over fewer than 2^24 replicas, divided by their count, is exact. */
    if (rp->fused[rs->ngrad + 1] != 1.0f)
        return SL_OK;
    move_grads(rp, 0);
    t1 = sl__now_ms();
    rp->fuse_ms += t1 - t0;
    rc = sl__step_run_slots(s, NULL, 0, s->update_from, s->nslots);
    rp->compute_ms += sl__now_ms() - t1;
    if (rc < 0)
        return sl__errf(&rp->err, rc, "%s", sl_step_last_error(s));
    *loss = rp->fused[rs->ngrad];
    *stepped = 1;
    if (r == 0)
        rs->updates++;
    if (r == 0 && rs->check_every_step && rs->distributed) {
        int same = 0;
        rc = sl__comm_agree(rs->comm, sl__replicas_hash(rs), &same, &rp->err);
        if (rc < 0)
            return rc;
        if (!same)
            return sl__errf(&rp->err, SL_ESTATE,
                            "the replicas differ across ranks after global step %lld "
                            "(--check-replicas): the ranks' parameters are no longer the same",
                            (long long)rs->updates);
    }
    return SL_OK;
}

void sl__replicas_get_stats(const sl__replica_set *rs, int64_t steps, sl_parallel_stats *out)
{
    memset(out, 0, sizeof *out);
    out->devices = rs->n;
    out->steps = steps;
    out->allreduce_floats = (int64_t)rs->nfused;
    out->ranks = rs->comm->processes;
    for (int r = 0; r < rs->n; r++) {
        double work = sl__comm_work_ms(rs->comm, r);
        out->compute_ms += rs->reps[r].compute_ms / rs->n;
        out->fuse_ms += rs->reps[r].fuse_ms / rs->n;
        out->allreduce_ms += rs->reps[r].allreduce_ms / rs->n;
        out->reduce_ms = out->reduce_ms < 0 || work < 0 ? -1.0 : out->reduce_ms + work / rs->n;
    }
}

void sl__replicas_fail(sl__replica_set *rs, int r, sl__channel *ch)
{
    int none = -1;
    char why[SL_ERRMSG_LEN];
    if (!atomic_compare_exchange_strong(&rs->failed, &none, r))
        return; /* another replica failed first: that is the error */
    if (rs->distributed) /* the other processes get the whole message */
        snprintf(why, sizeof why, "%s", rs->reps[r].err.msg);
    else
        snprintf(why, sizeof why, "stopped: device %s failed", sl_device_name(rs->reps[r].dev));
    sl__comm_abort(rs->comm, SL_ECANCELED, why);
    if (ch)
        sl__channel_interrupt(ch);
}

/* One replica's part of a non-sink global step. */
typedef struct step_job {
    sl__replica_set *rs;
    int rank;
    sl_tensor *const *feed;
    size_t n;
    float loss;
    int stepped;
    int rc;
    sl_tensor staged[SL_MAX_COLUMNS]; /* the batch in device memory */
    sl_tensor *on_device[SL_MAX_COLUMNS];
} step_job;

static int step_job_on_device(void *arg)
{
    step_job *j = arg;
    return sl__replica_step(j->rs, j->rank, j->feed, j->n, &j->stepped, &j->loss);
}

static void step_job_run(void *arg)
{
    step_job *j = arg;
    sl__replica *rp = &j->rs->reps[j->rank];
    sl__err_clear(&rp->err);
    j->rc = SL_OK;
    if (j->feed && !sl__device_reads_host(rp->dev)) {
        j->rc = sl__stage_batch(rp->dev, rp->staging, rp->staging_bytes, j->feed, j->n,
                                j->staged, j->on_device, &rp->err);
        j->feed = j->on_device;
    }
    if (j->rc == SL_OK)
        j->rc = sl__device_run(rp->dev, step_job_on_device, j);
    if (j->rc < 0)
        sl__replicas_fail(j->rs, j->rank, NULL);
}

int sl__replicas_run_step(sl__replica_set *rs, sl_tensor *const *const *feeds, size_t n,
                          float *loss, int *stepped)
{
    step_job jobs[SL__MAX_REPLICAS];
    uint64_t tickets[SL__MAX_REPLICAS];
    int posted[SL__MAX_REPLICAS] = {0}, failed;
    for (int r = 0; r < rs->n; r++) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].rs = rs;
        jobs[r].rank = r;
        jobs[r].feed = feeds[r];
        jobs[r].n = n;
        if (sl__executor_post(rs->reps[r].ex, step_job_run, &jobs[r], &tickets[r]) == SL_OK) {
            posted[r] = 1;
            continue;
        }
        sl__errf(&rs->reps[r].err, SL_ECLOSED, "its executor is shutting down");
        jobs[r].rc = SL_ECLOSED;
        sl__replicas_fail(rs, r, NULL);
    }
    for (int r = 0; r < rs->n; r++)
        if (posted[r])
            sl__executor_wait(rs->reps[r].ex, tickets[r], -1);
    failed = atomic_load(&rs->failed);
    if (failed >= 0)
        return sl__errf(&rs->m->err, jobs[failed].rc < 0 ? jobs[failed].rc : SL_ECANCELED,
                        "device %s: %s", sl_device_name(rs->reps[failed].dev),
                        rs->reps[failed].err.msg);
    *loss = jobs[0].loss;
    *stepped = jobs[0].stepped;
    return SL_OK;
}

int sl__replicas_equal(const sl__replica_set *rs)
{
    const sl_graph *g = rs->m->g;
    for (int r = 1; r < rs->n; r++)
        for (size_t i = 0; i < g->nnodes; i++)
            if (rs->reps[r].values[i] &&
                memcmp(rs->reps[r].values[i], g->nodes[i].data,
                       g->nodes[i].numel * sizeof(float)) != 0)
                return 0;
    return 1;
}

/* 64-bit words mixed by multiply and rotate: fast, and any changed bit
 * changes the hash (a collision needs a deliberate search). */
uint64_t sl__replicas_hash(const sl__replica_set *rs)
{
    const sl_graph *g = rs->m->g;
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < g->nnodes; i++) {
        const unsigned char *p = (const unsigned char *)g->nodes[i].data;
        size_t bytes = g->nodes[i].numel * sizeof(float), k = 0;
        if (g->nodes[i].op != SL__OP_PARAM || !p)
            continue;
        for (; k + 8 <= bytes; k += 8) {
            uint64_t w;
            memcpy(&w, p + k, 8);
            h = (h ^ w) * 0x100000001b3ull;
            h = (h << 29) | (h >> 35);
        }
        for (; k < bytes; k++)
            h = (h ^ p[k]) * 0x100000001b3ull;
        h ^= (uint64_t)i * 0xff51afd7ed558ccdull;
    }
    return h;
}

int sl__replicas_check(sl__replica_set *rs)
{
    sl_model *m = rs->m;
    int same = 1, rc;
    if (!atomic_load(&m->stop) && !sl__replicas_equal(rs)) {
        rc = sl__errf(&m->err, SL_ESTATE,
                      "train: the devices' replicas differ after %lld global steps (a "
                      "callback that writes the model's parameters while it trains on "
                      "several devices must call sl_model_parameters_changed)",
                      (long long)rs->updates);
        if (rs->distributed)
            sl__replicas_leave_on_error(rs);
        return rc;
    }
    if (!rs->distributed)
        return SL_OK;
    /* the last collective: carries a stop of this rank (the others may
     * be in a step's collective still, which must not take it for one),
     * or compares */
    if (atomic_load(&m->stop))
        sl__comm_stop(rs->comm);
    rc = sl__comm_finish(rs->comm, sl__replicas_hash(rs), &same, &rs->reps[0].err);
    if (rc == SL_ECANCELED && (atomic_load(&m->stop) || sl__comm_stopped(rs->comm))) {
        atomic_store(&m->stop, 1);
        return SL_OK; /* a stop: this rank's or another's */
    }
    if (rc < 0)
        return sl__errf(&m->err, rc, "train: %s", rs->reps[0].err.msg);
    if (!same) {
        sl__distributed_failure_shared(1); /* every rank sees it */
        return sl__errf(&m->err, SL_ESTATE,
                        "train: the ranks' parameters differ after %lld global steps (their "
                        "hashes were compared): the ranks started or stepped differently",
                        (long long)rs->updates);
    }
    return SL_OK;
}

void sl__replicas_leave_on_error(sl__replica_set *rs)
{
    sl__comm_abort(rs->comm, rs->m->err.status < 0 ? rs->m->err.status : SL_ECANCELED,
                   rs->m->err.msg);
}
