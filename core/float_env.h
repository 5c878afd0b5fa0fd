/* float_env.h: whether the calling thread's float arithmetic flushes
 * subnormal numbers to zero. Subnormals (|x| < 2^-126 for float) cost some
 * CPUs tens of cycles an operation (measured on an Intel Xeon: the momentum
 * update of a model trained to near-zero loss ran 10x slower), so a
 * device's compute runs with flushing on unless asked otherwise, as
 * TensorFlow's does: results that would be subnormal become zero, and
 * subnormal inputs read as zero. On x86 this is MXCSR's FTZ and DAZ bits,
 * on Arm the FPCR's FZ bit; elsewhere nothing changes. */
#ifndef SLUICE_CORE_FLOAT_ENV_H
#define SLUICE_CORE_FLOAT_ENV_H

/* The calling thread's float control word: its rounding and flushing
 * settings, without the sticky exception flags. 0 where unsupported. */
unsigned sl__float_env_get(void);
/* Makes word (from sl__float_env_get) the calling thread's settings. */
void sl__float_env_set(unsigned word);
/* word with flushing of subnormals to zero on (flush 1) or off (0). */
unsigned sl__float_env_flushing(unsigned word, int flush);
/* 1 when word flushes subnormals to zero. */
int sl__float_env_flushes(unsigned word);
/* 1 when this build can switch flushing (x86 with SSE, AArch64). */
int sl__float_env_supported(void);

#endif
