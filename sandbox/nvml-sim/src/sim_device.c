/*
 * NVML simulator: per-device queries. Each answers from the device object of the profile; a missing
 * or null value is NOT_SUPPORTED, as real cards answer for features they lack.
 * Semantics follow the NVML API reference: https://docs.nvidia.com/deploy/nvml-api/
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARG_CHECK(cond) \
    do { \
        if (!(cond)) \
            return NVML_ERROR_INVALID_ARGUMENT; \
    } while (0)

#define TRY(expr) \
    do { \
        nvmlReturn_t r_ = (expr); \
        if (r_ != NVML_SUCCESS) \
            return r_; \
    } while (0)

static const sim_enum architectures[] = {
    {"KEPLER", NVML_DEVICE_ARCH_KEPLER}, {"MAXWELL", NVML_DEVICE_ARCH_MAXWELL},
    {"PASCAL", NVML_DEVICE_ARCH_PASCAL}, {"VOLTA", NVML_DEVICE_ARCH_VOLTA},
    {"TURING", NVML_DEVICE_ARCH_TURING}, {"AMPERE", NVML_DEVICE_ARCH_AMPERE},
    {"ADA", NVML_DEVICE_ARCH_ADA},       {"HOPPER", NVML_DEVICE_ARCH_HOPPER},
    {"BLACKWELL", NVML_DEVICE_ARCH_BLACKWELL}, {NULL, 0},
};

static const sim_enum brands[] = {
    {"UNKNOWN", NVML_BRAND_UNKNOWN},   {"QUADRO", NVML_BRAND_QUADRO},
    {"TESLA", NVML_BRAND_TESLA},       {"NVS", NVML_BRAND_NVS},
    {"GEFORCE", NVML_BRAND_GEFORCE},   {"TITAN", NVML_BRAND_TITAN},
    {"QUADRO_RTX", NVML_BRAND_QUADRO_RTX}, {"NVIDIA_RTX", NVML_BRAND_NVIDIA_RTX},
    {"NVIDIA", NVML_BRAND_NVIDIA},     {NULL, 0},
};

static const sim_enum compute_modes[] = {
    {"DEFAULT", NVML_COMPUTEMODE_DEFAULT},
    {"EXCLUSIVE_THREAD", NVML_COMPUTEMODE_EXCLUSIVE_THREAD},
    {"PROHIBITED", NVML_COMPUTEMODE_PROHIBITED},
    {"EXCLUSIVE_PROCESS", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS},
    {NULL, 0},
};


/* Names follow nvmlClocksEventReason* in nvml.h, snake_cased. */
static const sim_enum event_reasons[] = {
    {"gpu_idle", nvmlClocksEventReasonGpuIdle},
    {"applications_clocks_setting", nvmlClocksEventReasonApplicationsClocksSetting},
    {"sw_power_cap", nvmlClocksEventReasonSwPowerCap},
    {"hw_slowdown", nvmlClocksThrottleReasonHwSlowdown},
    {"sync_boost", nvmlClocksEventReasonSyncBoost},
    {"sw_thermal_slowdown", nvmlClocksEventReasonSwThermalSlowdown},
    {"hw_thermal_slowdown", nvmlClocksThrottleReasonHwThermalSlowdown},
    {"hw_power_brake_slowdown", nvmlClocksThrottleReasonHwPowerBrakeSlowdown},
    {"display_clock_setting", nvmlClocksEventReasonDisplayClockSetting},
    {"board_limit", nvmlClocksEventReasonBoardLimit},
    {"reliability", nvmlClocksEventReasonReliability},
    {NULL, 0},
};

/* ---- lookup helpers ---- */

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

static nvmlReturn_t sim_enum_field(nvmlDevice_t device, const char *path, const sim_enum *table,
                                   unsigned long long *out)
{
    sj_node *node;
    TRY(sim_field(device, path, &node));
    if (node->type == SJ_STR)
        return sim_enum_lookup(table, node->str, out) ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
    return sim_node_uint(node, out) ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}

static nvmlReturn_t put_uint(nvmlDevice_t device, const char *path, unsigned int *out)
{
    unsigned long long v;
    ARG_CHECK(out);
    TRY(sim_uint(device, path, &v));
    *out = (unsigned int)v;
    return NVML_SUCCESS;
}

/* Watts in the profile, milliwatts in NVML. */
static nvmlReturn_t put_mw(nvmlDevice_t device, const char *path, unsigned int *out)
{
    sj_node *node;
    ARG_CHECK(out);
    TRY(sim_field(device, path, &node));
    if (node->type != SJ_NUM)
        return NVML_ERROR_UNKNOWN;
    *out = (unsigned int)(node->num * 1000.0 + 0.5);
    return NVML_SUCCESS;
}

/* ---- identity ---- */

SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *b, unsigned int l) { return sim_copy_str(d, "name", b, l); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *b, unsigned int l) { return sim_copy_str(d, "uuid", b, l); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *b, unsigned int l) { return sim_copy_str(d, "serial", b, l); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t d, char *b, unsigned int l)
{
    return sim_copy_str(d, "board_part_number", b, l);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *b, unsigned int l)
{
    return sim_copy_str(d, "vbios_version", b, l);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *v) { return put_uint(d, "minor_number", v); }

SIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    struct nvmlDevice_st *dev;
    TRY(sim_dev(device, &dev));
    ARG_CHECK(index);
    if (dev->parent)
        return NVML_ERROR_NOT_SUPPORTED;
    *index = dev->index;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    unsigned long long v;
    ARG_CHECK(type);
    TRY(sim_enum_field(device, "brand", brands, &v));
    *type = (nvmlBrandType_t)v;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    unsigned long long v;
    ARG_CHECK(arch);
    TRY(sim_enum_field(device, "architecture", architectures, &v));
    *arch = (nvmlDeviceArchitecture_t)v;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    sj_node *cc;
    unsigned long long a, b;
    ARG_CHECK(major && minor);
    TRY(sim_field(device, "cuda_compute_capability", &cc));
    if (sim_node_uint(sj_at(cc, 0), &a) || sim_node_uint(sj_at(cc, 1), &b))
        return NVML_ERROR_UNKNOWN;
    *major = (int)a;
    *minor = (int)b;
    return NVML_SUCCESS;
}

extern int sim_parse_bus_id(const char *text, unsigned int *domain, unsigned int *bus, unsigned int *dev);

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    sj_node *node;
    unsigned long long id = 0, sub = 0;
    ARG_CHECK(pci);
    TRY(sim_field(device, "pci.bus_id", &node));
    memset(pci, 0, sizeof(*pci));
    if (node->type != SJ_STR || sim_parse_bus_id(node->str, &pci->domain, &pci->bus, &pci->device))
        return NVML_ERROR_UNKNOWN;
    sim_uint(device, "pci.device_id", &id);
    sim_uint(device, "pci.subsystem_id", &sub);
    pci->pciDeviceId = (unsigned int)id;
    pci->pciSubSystemId = (unsigned int)sub;
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, pci->domain, pci->bus,
             pci->device);
    snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, pci->domain, pci->bus, pci->device);
    return NVML_SUCCESS;
}

/* ---- memory ---- */

static nvmlReturn_t memory_mib(nvmlDevice_t device, unsigned long long *total, unsigned long long *reserved,
                               unsigned long long *used)
{
    TRY(sim_uint(device, "memory.total_mib", total));
    if (sim_uint(device, "memory.reserved_mib", reserved) != NVML_SUCCESS)
        *reserved = 0;
    if (sim_uint(device, "memory.used_mib", used) != NVML_SUCCESS)
        *used = 0;
    *total <<= 20;
    *reserved <<= 20;
    *used <<= 20;
    if (*reserved + *used > *total)
        return NVML_ERROR_UNKNOWN;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    unsigned long long total, reserved, used;
    ARG_CHECK(memory);
    TRY(memory_mib(device, &total, &reserved, &used));
    /* v1 counts the driver's reservation as used. */
    memory->total = total;
    memory->used = used + reserved;
    memory->free = total - used - reserved;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    unsigned long long total, reserved, used;
    ARG_CHECK(memory);
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    TRY(memory_mib(device, &total, &reserved, &used));
    memory->total = total;
    memory->reserved = reserved;
    memory->used = used;
    memory->free = total - used - reserved;
    return NVML_SUCCESS;
}

/* ---- modes ---- */

static nvmlReturn_t put_state(nvmlDevice_t device, const char *path, nvmlEnableState_t *out)
{
    int v;
    ARG_CHECK(out);
    TRY(sim_bool(device, path, &v));
    *out = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *m)
{
    return put_state(d, "persistence_mode", m);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    unsigned long long v;
    ARG_CHECK(mode);
    TRY(sim_enum_field(device, "compute_mode", compute_modes, &v));
    *mode = (nvmlComputeMode_t)v;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current, nvmlEnableState_t *pending)
{
    ARG_CHECK(current && pending);
    TRY(put_state(device, "ecc.current", current));
    return put_state(device, "ecc.pending", pending);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetDefaultEccMode(nvmlDevice_t d, nvmlEnableState_t *m)
{
    return put_state(d, "ecc.default", m);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t error_type,
                                                    nvmlEccCounterType_t counter_type, unsigned long long *count)
{
    char path[64];
    ARG_CHECK(count);
    ARG_CHECK(error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED || error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
    ARG_CHECK(counter_type == NVML_VOLATILE_ECC || counter_type == NVML_AGGREGATE_ECC);
    snprintf(path, sizeof(path), "ecc.errors.%s.%s", counter_type == NVML_VOLATILE_ECC ? "volatile" : "aggregate",
             error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "corrected" : "uncorrected");
    return sim_uint(device, path, count);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending)
{
    int cur, pend;
    ARG_CHECK(current && pending);
    TRY(sim_bool(device, "mig.current", &cur));
    TRY(sim_bool(device, "mig.pending", &pend));
    *current = cur ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pending = pend ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *util)
{
    unsigned long long gpu, mem;
    ARG_CHECK(util);
    TRY(sim_uint(device, "utilization.gpu", &gpu));
    TRY(sim_uint(device, "utilization.memory", &mem));
    util->gpu = (unsigned int)gpu;
    util->memory = (unsigned int)mem;
    return NVML_SUCCESS;
}

/* ---- thermals and power ---- */

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                                 unsigned int *temp)
{
    ARG_CHECK(sensor == NVML_TEMPERATURE_GPU);
    return put_uint(device, "temperature.gpu", temp);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *temperature)
{
    unsigned int t;
    ARG_CHECK(temperature);
    if (temperature->version != nvmlTemperature_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    TRY(nvmlDeviceGetTemperature(device, temperature->sensorType, &t));
    temperature->temperature = (int)t;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, nvmlTemperatureThresholds_t type,
                                                          unsigned int *temp)
{
    switch (type) {
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: return put_uint(device, "temperature.shutdown", temp);
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: return put_uint(device, "temperature.slowdown", temp);
    case NVML_TEMPERATURE_THRESHOLD_MEM_MAX: return put_uint(device, "temperature.memory_max", temp);
    case NVML_TEMPERATURE_THRESHOLD_GPU_MAX: return put_uint(device, "temperature.max_operating", temp);
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *p) { return put_mw(d, "power.usage_w", p); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *p)
{
    return put_mw(d, "power.limit_w", p);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int *p)
{
    return put_mw(d, "power.default_limit_w", p);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *p)
{
    return put_mw(d, "power.enforced_limit_w", p);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int *min_limit,
                                                                     unsigned int *max_limit)
{
    ARG_CHECK(min_limit && max_limit);
    TRY(put_mw(device, "power.min_limit_w", min_limit));
    return put_mw(device, "power.max_limit_w", max_limit);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    unsigned int mw;
    ARG_CHECK(mode);
    TRY(put_mw(device, "power.limit_w", &mw)); /* a card with a settable limit has power management on */
    *mode = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

/* ---- clocks ---- */

static const char *clock_key(nvmlClockType_t type)
{
    switch (type) {
    case NVML_CLOCK_GRAPHICS: return "graphics";
    case NVML_CLOCK_SM: return "sm";
    case NVML_CLOCK_MEM: return "memory";
    case NVML_CLOCK_VIDEO: return "video";
    default: return NULL;
    }
}

static nvmlReturn_t clock_of(nvmlDevice_t device, const char *group, nvmlClockType_t type, unsigned int *clock)
{
    char path[48];
    ARG_CHECK(clock_key(type));
    snprintf(path, sizeof(path), "%s.%s", group, clock_key(type));
    return put_uint(device, path, clock);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t t, unsigned int *c)
{
    return clock_of(d, "clocks", t, c);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, nvmlClockType_t t, unsigned int *c)
{
    return clock_of(d, "max_clocks", t, c);
}

static nvmlReturn_t event_reasons_of(nvmlDevice_t device, unsigned long long *out)
{
    sj_node *node;
    unsigned long long bit;
    ARG_CHECK(out);
    TRY(sim_field(device, "clocks_event_reasons", &node));
    if (node->type != SJ_ARR)
        return sim_node_uint(node, out) ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
    *out = 0;
    for (size_t i = 0; i < node->n; i++) {
        if (node->items[i]->type != SJ_STR || sim_enum_lookup(event_reasons, node->items[i]->str, &bit))
            return NVML_ERROR_UNKNOWN;
        *out |= bit;
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t supported_reasons_of(nvmlDevice_t device, unsigned long long *out)
{
    ARG_CHECK(out);
    TRY(event_reasons_of(device, out));
    *out = nvmlClocksEventReasonAll;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r)
{
    return event_reasons_of(d, r);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r)
{
    return event_reasons_of(d, r);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t d, unsigned long long *r)
{
    return supported_reasons_of(d, r);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r)
{
    return supported_reasons_of(d, r);
}

/* ---- PCIe ---- */

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v)
{
    return put_uint(d, "pci.link_gen_current", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v)
{
    return put_uint(d, "pci.link_gen_max", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v)
{
    /* The GPU's own maximum; the profile may set it apart from the slot-limited link_gen_max. */
    if (sim_uint(d, "pci.gpu_link_gen_max", &(unsigned long long){0}) == NVML_SUCCESS)
        return put_uint(d, "pci.gpu_link_gen_max", v);
    return put_uint(d, "pci.link_gen_max", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v)
{
    return put_uint(d, "pci.link_width_current", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v)
{
    return put_uint(d, "pci.link_width_max", v);
}
