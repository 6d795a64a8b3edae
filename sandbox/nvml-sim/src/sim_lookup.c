/*
 * NVML simulator: reading values from the profile. A missing or null value is NOT_SUPPORTED, as real
 * cards answer for features they lack; {"nvml_error": "NAME"} answers that error.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nvmlReturn_t sim_node_check(sj_node *node)
{
    unsigned long long code;
    sj_node *err = sj_get(node, "nvml_error");
    if (!node || node->type == SJ_NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    if (err && err->type == SJ_STR)
        return sim_enum_lookup(sim_errors, err->str, &code) ? NVML_ERROR_UNKNOWN : (nvmlReturn_t)code;
    return NVML_SUCCESS;
}

int sim_node_uint(const sj_node *node, unsigned long long *out)
{
    if (!node)
        return -1;
    if (node->type == SJ_NUM) {
        *out = node->is_uint ? node->unum : (unsigned long long)(node->num < 0 ? 0 : node->num + 0.5);
        return 0;
    }
    if (node->type == SJ_BOOL) {
        *out = (unsigned long long)node->boolean;
        return 0;
    }
    if (node->type == SJ_STR) { /* "0x20B010DE" style ids */
        char *end;
        *out = strtoull(node->str, &end, 0);
        return *end ? -1 : 0;
    }
    return -1;
}

nvmlReturn_t sim_field(nvmlDevice_t device, const char *path, sj_node **out)
{
    struct nvmlDevice_st *dev;
    char key[64];
    TRY(sim_dev(device, &dev));
    /* A device-level error (GPU_IS_LOST...) answers every query on that device and its MIG devices. */
    if (dev->parent && sj_get(dev->parent->node, "nvml_error"))
        TRY(sim_node_check(dev->parent->node));
    if (sj_get(dev->node, "nvml_error"))
        TRY(sim_node_check(dev->node));
    sj_node *node = dev->node;
    while (*path) {
        size_t len = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)len, path);
        node = sj_get(node, key);
        TRY(sim_node_check(node));
        path += len + (path[len] == '.');
    }
    *out = node;
    return NVML_SUCCESS;
}

nvmlReturn_t sim_uint(nvmlDevice_t device, const char *path, unsigned long long *out)
{
    sj_node *node;
    TRY(sim_field(device, path, &node));
    return sim_node_uint(node, out) ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}

nvmlReturn_t sim_bool(nvmlDevice_t device, const char *path, int *out)
{
    unsigned long long v;
    TRY(sim_uint(device, path, &v));
    *out = v != 0;
    return NVML_SUCCESS;
}

nvmlReturn_t sim_copy_str(nvmlDevice_t device, const char *path, char *buf, unsigned int len)
{
    sj_node *node;
    TRY(sim_field(device, path, &node));
    if (node->type != SJ_STR)
        return NVML_ERROR_UNKNOWN;
    return sim_put_str(node->str, buf, len);
}

nvmlReturn_t sim_enum_field(nvmlDevice_t device, const char *path, const sim_enum *table,
                                   unsigned long long *out)
{
    sj_node *node;
    TRY(sim_field(device, path, &node));
    if (node->type == SJ_STR)
        return sim_enum_lookup(table, node->str, out) ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
    return sim_node_uint(node, out) ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}

nvmlReturn_t sim_put_uint(nvmlDevice_t device, const char *path, unsigned int *out)
{
    unsigned long long v;
    ARG_CHECK(out);
    TRY(sim_uint(device, path, &v));
    *out = (unsigned int)v;
    return NVML_SUCCESS;
}

/* Watts in the profile, milliwatts in NVML. */
nvmlReturn_t sim_put_mw(nvmlDevice_t device, const char *path, unsigned int *out)
{
    sj_node *node;
    ARG_CHECK(out);
    TRY(sim_field(device, path, &node));
    if (node->type != SJ_NUM)
        return NVML_ERROR_UNKNOWN;
    *out = (unsigned int)(node->num * 1000.0 + 0.5);
    return NVML_SUCCESS;
}

nvmlReturn_t sim_put_state(nvmlDevice_t device, const char *path, nvmlEnableState_t *out)
{
    int v;
    ARG_CHECK(out);
    TRY(sim_bool(device, path, &v));
    *out = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}


nvmlReturn_t sim_put_str(const char *value, char *buf, unsigned int len)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, value, strlen(value) + 1);
    return NVML_SUCCESS;
}
