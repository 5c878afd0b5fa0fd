/* columns.c: the nodes that choose and name columns, as MindSpore's
 * project and rename. A project runs (it moves the kept columns of every
 * row into their places); a rename only changes the names the dataset
 * describes, so nothing of it runs. */
#include <stdio.h>
#include <string.h>

#include "pipeline/dataset_impl.h"

/* Index of name among the first n of names, or -1. */
static int find_name(char (*names)[SL_COLUMN_NAME_LEN], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

/* "'a', 'b'" for messages. */
static void name_list(const sl__schema *schema, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < schema->ncols && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s'%s'", i ? ", " : "",
                                 schema->names[i]);
}

/* Checks that columns[0..n) are n distinct existing columns of ds; their
 * indices into pick. */
static int resolve(sl_dataset *ds, const char *what, const char *const *columns, size_t n,
                   int *pick)
{
    char have[256];
    if (!columns || n == 0 || n > ds->schema.ncols)
        return sl__errf(&ds->error, SL_EINVAL, "%s: give 1 to %zu columns, got %zu", what,
                        ds->schema.ncols, columns ? n : 0);
    for (size_t k = 0; k < n; k++) {
        if (!columns[k])
            return sl__errf(&ds->error, SL_EINVAL, "%s: column %zu is NULL", what, k);
        pick[k] = sl_dataset_column_index(ds, columns[k]);
        if (pick[k] < 0) {
            name_list(&ds->schema, have, sizeof have);
            return sl__errf(&ds->error, SL_EINVAL, "%s: no column '%s' (the columns are %s)",
                            what, columns[k], have);
        }
        for (size_t j = 0; j < k; j++)
            if (pick[j] == pick[k])
                return sl__errf(&ds->error, SL_EINVAL, "%s: column '%s' is named twice", what,
                                columns[k]);
    }
    return SL_OK;
}

int sl_dataset_project(sl_dataset *ds, const char *const *columns, size_t n)
{
    sl__node node = {.kind = SL__NODE_PROJECT};
    sl__schema after;
    int rc;
    if (!ds->source)
        return sl__dataset_append(ds, "project", &node); /* says there is no source */
    rc = resolve(ds, "project", columns, n, node.pick);
    if (rc != SL_OK)
        return rc;
    node.count = (int64_t)n;
    after.ncols = n;
    for (size_t c = 0; c < n; c++) {
        memcpy(after.names[c], ds->schema.names[node.pick[c]], SL_COLUMN_NAME_LEN);
        after.specs[c] = ds->schema.specs[node.pick[c]];
    }
    memcpy(node.names, after.names, sizeof node.names);
    rc = sl__dataset_append(ds, "project", &node);
    if (rc == SL_OK)
        ds->schema = after;
    return rc;
}

int sl_dataset_rename(sl_dataset *ds, const char *const *input_columns,
                      const char *const *output_columns, size_t n)
{
    sl__node node = {.kind = SL__NODE_RENAME};
    int pick[SL_MAX_COLUMNS];
    int rc;
    if (!ds->source)
        return sl__dataset_append(ds, "rename", &node);
    if (!output_columns)
        return sl__errf(&ds->error, SL_EINVAL, "rename: no output columns given");
    rc = resolve(ds, "rename", input_columns, n, pick);
    if (rc != SL_OK)
        return rc;
    node.count = (int64_t)ds->schema.ncols;
    memcpy(node.names, ds->schema.names, sizeof node.names);
    for (size_t k = 0; k < n; k++) {
        const char *to = output_columns[k];
        size_t len = to ? strlen(to) : 0;
        if (len == 0 || len >= SL_COLUMN_NAME_LEN)
            return sl__errf(&ds->error, SL_EINVAL,
                            "rename: the new name of '%s' must have 1 to %d characters",
                            input_columns[k], SL_COLUMN_NAME_LEN - 1);
        snprintf(node.names[pick[k]], SL_COLUMN_NAME_LEN, "%s", to);
    }
    /* Every name once, after the renaming (a swap a <-> b is fine). */
    for (size_t c = 1; c < ds->schema.ncols; c++) {
        int other = find_name(node.names, c, node.names[c]);
        if (other >= 0)
            return sl__errf(&ds->error, SL_EINVAL,
                            "rename: two columns would be named '%s' (columns %d and %zu); "
                            "rename the other one too, or choose another name",
                            node.names[c], other, c);
    }
    rc = sl__dataset_append(ds, "rename", &node);
    if (rc == SL_OK)
        memcpy(ds->schema.names, node.names, sizeof node.names);
    return rc;
}

size_t sl__describe_columns(const sl__node *node, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "%s(",
                                   node->kind == SL__NODE_PROJECT ? "project" : "rename to ");
    for (int64_t c = 0; c < node->count && used < len; c++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", c ? ", " : "", node->names[c]);
    if (used < len)
        used += (size_t)snprintf(buf + used, len - used, ")");
    return used;
}
