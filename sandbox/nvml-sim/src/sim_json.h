/* Minimal JSON reader for the NVML simulator: libc only, read-only tree. */
#ifndef GPUFLEET_SIM_JSON_H
#define GPUFLEET_SIM_JSON_H

#include <stddef.h>

typedef enum { SJ_NULL, SJ_BOOL, SJ_NUM, SJ_STR, SJ_ARR, SJ_OBJ } sj_type;

typedef struct sj_node {
    sj_type type;
    int boolean;
    double num;
    unsigned long long unum; /* exact value when the number is a non-negative integer */
    int is_uint;
    char *str;
    size_t n;               /* items in an array or object */
    struct sj_node **items;
    char **keys;            /* object keys, parallel to items */
    size_t src_start, src_end; /* span of this value in the source text */
} sj_node;

/* Parse text; returns NULL and fills err (if given) on a syntax error. */
sj_node *sj_parse(const char *text, char *err, size_t errlen);
void sj_free(sj_node *node);
/* Object member by key, or NULL (also NULL when node is not an object). */
sj_node *sj_get(const sj_node *node, const char *key);
/* Array item, or NULL. */
sj_node *sj_at(const sj_node *node, size_t index);

#endif
