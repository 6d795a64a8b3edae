/*
 * NVML simulator: system queries (driver, NVML and CUDA versions, process names) and device handles
 * (by index, UUID, serial, PCI bus id).
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str_of(const sj_node *n)
{
    return n && n->type == SJ_STR ? n->str : NULL;
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    return sim_put_str(sim_driver_version(), version, length);
}

static int cuda_version(void)
{
    const char *env = getenv("GPUFLEET_NVML_SIM_CUDA_DRIVER_VERSION");
    sj_node *n = sj_get(sim_profile(), "cuda_driver_version");
    if (env && *env)
        return atoi(env);
    if (GPUFLEET_NVML_SIM_BUILT_CUDA_VERSION)
        return GPUFLEET_NVML_SIM_BUILT_CUDA_VERSION;
    return n && n->type == SJ_NUM ? (int)n->num : 0;
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    char buf[2 * NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
    const char *given = str_of(sj_get(sim_profile(), "nvml_version"));
    const char *env = getenv("GPUFLEET_NVML_SIM_DRIVER_VERSION");
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    /* Real NVML reports "<CUDA major>.<driver version>", e.g. 12.570.133.20; an override keeps that shape. */
    if (given && !(env && *env) && !GPUFLEET_NVML_SIM_BUILT_DRIVER_VERSION[0])
        return sim_put_str(given, version, length);
    snprintf(buf, sizeof(buf), "%d.%s", cuda_version() / 1000, sim_driver_version());
    return sim_put_str(buf, version, length);
}

static nvmlReturn_t get_cuda(int *out)
{
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    *out = cuda_version();
    return *out ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { return get_cuda(v); }
SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return get_cuda(v); }

static nvmlReturn_t get_count(unsigned int *count)
{
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = sim_device_count();
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *c) { return get_count(c); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) { return get_count(c); }

static nvmlReturn_t by_index(unsigned int index, nvmlDevice_t *device)
{
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= sim_device_count())
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = sim_all_at(index);
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) { return by_index(i, d); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) { return by_index(i, d); }

static nvmlReturn_t by_key(const char *key, const char *value, int include_mig, nvmlDevice_t *device)
{
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!value || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < (include_mig ? sim_all_count() : sim_device_count()); i++) {
        const char *have = str_of(sj_get(sim_all_at(i)->node, key));
        if (have && !strcasecmp(have, value)) {
            *device = sim_all_at(i);
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
    return by_key("uuid", uuid, 1, d);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *d)
{
    return by_key("serial", serial, 0, d);
}

/* Parse "dddd:bb:dd.f" or "dddddddd:bb:dd.f" (also "bb:dd.f"), as NVML accepts both bus id forms. */
int sim_parse_bus_id(const char *text, unsigned int *domain, unsigned int *bus, unsigned int *dev)
{
    unsigned int fn;
    if (sscanf(text, "%x:%x:%x.%x", domain, bus, dev, &fn) == 4)
        return 0;
    *domain = 0;
    return sscanf(text, "%x:%x.%x", bus, dev, &fn) == 3 ? 0 : -1;
}

static nvmlReturn_t by_bus_id(const char *bus_id, nvmlDevice_t *device)
{
    unsigned int want[3], have[3];
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!bus_id || !device || sim_parse_bus_id(bus_id, &want[0], &want[1], &want[2]))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < sim_device_count(); i++) {
        const char *id = str_of(sj_get(sj_get(sim_all_at(i)->node, "pci"), "bus_id"));
        if (id && !sim_parse_bus_id(id, &have[0], &have[1], &have[2]) && !memcmp(want, have, sizeof(want))) {
            *device = sim_all_at(i);
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *b, nvmlDevice_t *d) { return by_bus_id(b, d); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *b, nvmlDevice_t *d) { return by_bus_id(b, d); }

SIM_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    char live[64];
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!sim_live_name(pid, live, sizeof(live)))
        return sim_put_str(live, name, length);
    for (unsigned int i = 0; i < sim_all_count(); i++) {
        sj_node *procs = sj_get(sim_all_at(i)->node, "processes");
        for (size_t p = 0; procs && procs->type == SJ_ARR && p < procs->n; p++) {
            unsigned long long have;
            const char *pname = str_of(sj_get(procs->items[p], "name"));
            if (pname && !sim_node_uint(sj_get(procs->items[p], "pid"), &have) && have == pid)
                return sim_put_str(pname, name, length);
        }
    }
    return NVML_ERROR_NOT_FOUND;
}
