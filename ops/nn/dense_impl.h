/* dense_impl.h: the fully connected layer's AVX2 kernels (dense_avx2.c),
 * which dense.c's entry points dispatch to. Same arguments as those entry
 * points (nn.h); x86 only. */
#ifndef SLUICE_OPS_NN_DENSE_IMPL_H
#define SLUICE_OPS_NN_DENSE_IMPL_H

#include <stddef.h>

#if defined(__x86_64__) || defined(__i386__)
#define SL_DENSE_X86 1

void sl__dense_forward_avx2(float *out, const float *in, const float *weight, const float *bias,
                            size_t in_f, size_t out_f, size_t n0, size_t n1);
void sl__dense_backward_input_avx2(float *din, const float *dout, const float *weight,
                                   size_t in_f, size_t out_f, size_t n0, size_t n1);
void sl__dense_backward_weight_avx2(float *dweight, const float *dout, const float *in,
                                    size_t n, size_t in_f, size_t out_f, size_t o0, size_t o1);
#endif

#endif
