/* conv2d_impl.h: the two ways conv2d is computed, for conv2d.c, which picks
 * one, and for the tests, which run each against the others.
 *
 * - direct (conv2d_direct.c): stride 1 and no padding (LeNet's convs). No
 *   columns: the weight gradient reads the input itself. Three versions of
 *   the same loops: AVX-512F, AVX2+FMA and plain C; each gives the same bits
 *   however its range is split, but the three may differ from one another in
 *   the last bits (they add in different orders).
 * - im2col (conv2d.c): any stride and padding, through OpenBLAS; the forward
 *   saves the columns its weight gradient reads.
 *
 * sl__conv2d_forward and friends (nn.h) run the direct kernels on the best
 * path of this CPU when sl__conv2d_is_direct(d) and that path is a vector
 * one (AVX2 or AVX-512), im2col otherwise: the plain C direct loops are
 * slower than im2col through OpenBLAS, so they serve only as a reference. */
#ifndef SLUICE_OPS_NN_CONV2D_IMPL_H
#define SLUICE_OPS_NN_CONV2D_IMPL_H

#include <stddef.h>

#include "ops/nn/nn.h"

typedef enum sl__conv2d_path {
    SL__CONV2D_PATH_C = 0,   /* plain C, any CPU */
    SL__CONV2D_PATH_AVX2,    /* x86-64 with AVX2 and FMA */
    SL__CONV2D_PATH_AVX512,  /* x86-64 with AVX-512F */
    SL__CONV2D_PATH_COUNT
} sl__conv2d_path;

/* 1 when the direct kernels handle d (stride 1, pad 0). */
int sl__conv2d_is_direct(const sl__conv2d_dims *d);
/* 1 when this CPU (and this build) can run path p. */
int sl__conv2d_path_supported(sl__conv2d_path p);
/* The fastest supported path. Found once per process under pthread_once,
 * so any thread may call it any time; there is no way to change it. */
sl__conv2d_path sl__conv2d_best_path(void);

/* --- direct: stride 1, pad 0 (sl__conv2d_is_direct) --------------------
 * Same ranges and write-not-accumulate contract as nn.h; p must be
 * supported. */
void sl__conv2d_direct_forward(sl__conv2d_path p, float *out, const float *in,
                               const float *weight, const sl__conv2d_dims *d, size_t n0,
                               size_t n1);
/* The direct backward_input pads this many samples of dout at a time. */
enum { SL__CONV2D_GROUP = 4 };
/* Floats of the scratch one thread needs in the direct backward_input:
 * SL__CONV2D_GROUP samples of dout with KH-1 rows and KW-1 columns of zeros
 * around them (GROUP, OC, OH+2KH-2, OW+2KW-2), then the flipped weights
 * (C, OC, KH, KW). Fits size_t whenever sl__conv2d_dims_init accepted d. */
size_t sl__conv2d_direct_scratch_size(const sl__conv2d_dims *d);
void sl__conv2d_direct_backward_input(sl__conv2d_path p, float *din, float *scratch,
                                      const float *dout, const float *weight,
                                      const sl__conv2d_dims *d, size_t n0, size_t n1);
void sl__conv2d_direct_backward_weight(sl__conv2d_path p, float *dweight, const float *dout,
                                       const float *in, const sl__conv2d_dims *d, size_t oc0,
                                       size_t oc1);

/* The AVX2 kernels with output channels across the lanes (conv2d_lanes.c),
 * which the AVX2 path runs where the shape says they fill more lanes (or
 * skip more zeros) than the column kernels: the forward and the weight
 * gradient on rows that waste over a tenth of the column vectors' lanes
 * (LeNet's conv2: 10-wide rows), with output channels in multiples of 16
 * (forward) or at least 8 (weight gradient) and small planes only, as they
 * transpose on the stack; the input gradient (below) on enough channels. */
int sl__conv2d_lanes_fits(const sl__conv2d_dims *d);
void sl__conv2d_lanes_forward_avx2(float *out, const float *in, const float *weight,
                                   const sl__conv2d_dims *d, size_t n0, size_t n1);
/* The input gradient by channel lanes: at least 16 output channels, in
 * multiples of 8, and a kernel of more than one tap; scratch as the direct
 * backward_input's. */
int sl__conv2d_dx_lanes_fits(const sl__conv2d_dims *d);
void sl__conv2d_dx_lanes_avx2(float *din, float *scratch, const float *dout,
                              const float *weight, const sl__conv2d_dims *d, size_t n0,
                              size_t n1);
int sl__conv2d_dw_lanes_fits(const sl__conv2d_dims *d);
void sl__conv2d_dw_lanes_avx2(float *dweight, const float *dout, const float *in,
                              const sl__conv2d_dims *d, size_t oc0, size_t oc1);

/* --- im2col: any stride and padding -------------------------------------
 * cols (N, C*KH*KW, OH*OW) written by the forward, read by backward_weight;
 * dcols (C*KH*KW, OH*OW) is one thread's scratch for backward_input. */
size_t sl__conv2d_im2col_cols_size(const sl__conv2d_dims *d);
size_t sl__conv2d_im2col_dcols_size(const sl__conv2d_dims *d);
void sl__conv2d_im2col_forward(float *out, float *cols, const float *in, const float *weight,
                               const sl__conv2d_dims *d, size_t n0, size_t n1);
void sl__conv2d_im2col_backward_input(float *din, float *dcols, const float *dout,
                                      const float *weight, const sl__conv2d_dims *d,
                                      size_t n0, size_t n1);
void sl__conv2d_im2col_backward_weight(float *dweight, const float *dout, const float *cols,
                                       const sl__conv2d_dims *d, size_t oc0, size_t oc1);

#endif
