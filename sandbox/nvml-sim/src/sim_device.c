/*
 * NVML simulator: identity, PCI, memory and modes of a device, answered from its profile object.
 * Semantics follow the NVML API reference: https://docs.nvidia.com/deploy/nvml-api/
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *v) { return sim_put_uint(d, "minor_number", v); }

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

/*
 * Persistence mode is driver state that nvidia-persistenced sets while it runs: on by default, off with
 * --no-persistence-mode (NVIDIA's Ubuntu packaging starts it that way). The mirror's nvidia-persistenced stand-in
 * writes "1" or "0" to this file and its unit's ExecStopPost removes the directory, as the real unit removes
 * /var/run/nvidia-persistenced. Without the file (no daemon ran) the profile's captured value stands.
 */
static int persistence_override(int *on)
{
    const char *env = getenv("GPUFLEET_NVML_SIM_PERSISTENCE_FILE");
    FILE *f = fopen(env && *env ? env : "/run/nvidia-persistenced/gpufleet-nvml-sim-persistence", "r");
    int c;
    if (!f)
        return -1;
    c = fgetc(f);
    fclose(f);
    if (c != '0' && c != '1')
        return -1;
    *on = c == '1';
    return 0;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *m)
{
    struct nvmlDevice_st *dev;
    int on;
    TRY(sim_put_state(d, "persistence_mode", m));
    TRY(sim_dev(d, &dev));
    if (!dev->parent && !persistence_override(&on))
        *m = on ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
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
    TRY(sim_put_state(device, "ecc.current", current));
    return sim_put_state(device, "ecc.pending", pending);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetDefaultEccMode(nvmlDevice_t d, nvmlEnableState_t *m)
{
    return sim_put_state(d, "ecc.default", m);
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
