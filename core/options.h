/* options.h: reading the caller's versioned options structs.
 *
 * How public options structs are versioned. Every public struct with an
 * _init function (sl_mnist_options, sl_model_options, sl_context, ...)
 * starts with `size_t size`. Its init is a static inline function in the
 * public header that calls the exported sl_x_init_sized(o, sizeof *o), so
 * the size is the one the caller was compiled with, recorded in the
 * caller's binary. The library then:
 *   - writes defaults into at most `size` bytes (sl__options_init), zeroing
 *     any bytes past the struct it knows (a caller newer than the library);
 *   - reads the caller's struct (sl__options_read) over a full struct of
 *     defaults: size 0 (never initialised), a size below the first version's,
 *     or an absurd one is refused with SL_EINVAL; a smaller, older struct
 *     gets defaults for the fields it does not have; a bigger, newer one is
 *     accepted only if every byte the library does not know is zero.
 * This is the Linux kernel's copy_struct_from_user rule (clone3, openat2).
 *
 * What keeps it sound, checked by a _Static_assert beside each init:
 *   - fields are only ever appended, never inserted, removed or retyped;
 *   - a struct ends without tail padding (sizeof == end of the last field),
 *     so an old caller's size covers only fields it knows: add an explicit
 *     `int32_t reserved_N` (never reused) after a lone 4-byte field;
 *   - a struct embedded in another one (sl_sampler_options, sl_network_options,
 *     sl_context) never grows, since that would move the outer struct's
 *     later fields; its size must match exactly (sl__options_check_embedded).
 *     New settings go into the outer struct instead.
 * The libtool version stays 0:0:0 until the first release; after that an
 * appended field is a compatible change (age + 1). */
#ifndef SLUICE_CORE_OPTIONS_H
#define SLUICE_CORE_OPTIONS_H

#include <stddef.h>

#include "core/error.h"

/* No options struct is this big: a larger size is garbage (an
 * uninitialised struct), not a newer version, and is not read. */
#define SL__OPTIONS_MAX_SIZE 4096

/* Copies the library's defaults (a whole struct of defaults_size bytes,
 * padding zeroed) into the caller's struct o of size bytes: at most size
 * bytes are written; bytes past defaults_size are zeroed; the size member
 * of o becomes size. A size too small to hold the size member writes
 * nothing. */
void sl__options_init(void *o, size_t size, const void *defaults, size_t defaults_size);

/* Reads the caller's struct src into dst, a full library struct of
 * dst_size bytes already holding defaults. v1_size is the end of the
 * struct's first-version fields. name is the struct's type name
 * ("sl_mnist_options"), used in messages. src NULL leaves the defaults.
 * Returns SL_OK, or SL_EINVAL with the reason in err (dst then unchanged).
 * On success dst's size member is dst_size. */
int sl__options_read(void *dst, size_t dst_size, size_t v1_size, const void *src,
                     const char *name, sl__error *err);

/* Checks the size member (got) of a struct embedded in another: embedded
 * structs never grow, so it must equal the library's size exactly. name is
 * the embedded struct's type, where says where it sits
 * ("sl_mnist_options.sampler"). */
int sl__options_check_embedded(size_t got, size_t size, const char *name, const char *where,
                               sl__error *err);

#endif
