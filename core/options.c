/* options.c: defaults into, and reading from, the caller's versioned
 * options structs (see options.h). */
#include "core/options.h"

#include <string.h>

void sl__options_init(void *o, size_t size, const void *defaults, size_t defaults_size)
{
    /* Too small to record its own size: nothing to do (reading refuses it). */
    if (size < sizeof size)
        return;
    memcpy(o, defaults, size < defaults_size ? size : defaults_size);
    if (size > defaults_size)
        memset((unsigned char *)o + defaults_size, 0, size - defaults_size);
    memcpy(o, &size, sizeof size);
}

int sl__options_read(void *dst, size_t dst_size, size_t v1_size, const void *src,
                     const char *name, sl__error *err)
{
    const unsigned char *bytes = src;
    size_t size;

    if (!src)
        return SL_OK;
    memcpy(&size, src, sizeof size);
    if (size == 0 || size > SL__OPTIONS_MAX_SIZE)
        return sl__errf(err, SL_EINVAL,
                        "%s: not initialised with %s_init (its size member is %zu)", name, name,
                        size);
    if (size < v1_size)
        return sl__errf(err, SL_EINVAL,
                        "%s: a struct of %zu bytes is older than any this library knows (the "
                        "first version has %zu); was it initialised with %s_init?",
                        name, size, v1_size, name);
    for (size_t i = dst_size; i < size; i++)
        if (bytes[i] != 0)
            return sl__errf(err, SL_EINVAL,
                            "%s: a struct of %zu bytes is newer than this library (%zu bytes) "
                            "and sets byte %zu, which it does not know; upgrade libsluice",
                            name, size, dst_size, i);
    memcpy(dst, src, size < dst_size ? size : dst_size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return SL_OK;
}

int sl__options_check_embedded(size_t got, size_t size, const char *name, const char *where,
                               sl__error *err)
{
    if (got != size)
        return sl__errf(err, SL_EINVAL,
                        "%s: its size member is %zu, not %zu: initialise it with %s_init", where,
                        got, size, name);
    return SL_OK;
}
