/* Shared internals of the gpufleet NVML simulator (see ../README.md for the profile schema). */
#ifndef GPUFLEET_SIM_H
#define GPUFLEET_SIM_H

/* Export both the versioned entry points and the old unversioned names, as the real library does. */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <stddef.h>

#include "sim_json.h"

#define SIM_DEFAULT_PROFILE "/etc/gpufleet/nvml-sim/profile.json"
/* Versions baked in by build.sh --driver-version / --cuda-version (empty / 0: take them from the profile). */
#ifndef GPUFLEET_NVML_SIM_BUILT_DRIVER_VERSION
#define GPUFLEET_NVML_SIM_BUILT_DRIVER_VERSION ""
#endif
#ifndef GPUFLEET_NVML_SIM_BUILT_CUDA_VERSION
#define GPUFLEET_NVML_SIM_BUILT_CUDA_VERSION 0
#endif
#define SIM_EXPORT __attribute__((visibility("default")))

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

struct nvmlDevice_st {
    sj_node *node;                 /* the GPU or MIG device object of the profile */
    struct nvmlDevice_st *parent;  /* physical GPU of a MIG device, NULL for a physical GPU */
    unsigned int index;            /* GPU index, or MIG slot on the parent */
};

/* Name tables: profile strings <-> NVML enum values. */
typedef struct {
    const char *name;
    unsigned long long value;
} sim_enum;

extern const sim_enum sim_errors[];

int sim_enum_lookup(const sim_enum *table, const char *name, unsigned long long *value);

/* State, valid between a successful nvmlInit and the last nvmlShutdown. */
int sim_initialized(void);
sj_node *sim_profile(void);
unsigned int sim_device_count(void);
struct nvmlDevice_st *sim_device_at(unsigned int index);
struct nvmlDevice_st *sim_mig_device(struct nvmlDevice_st *parent, unsigned int slot);
unsigned int sim_mig_count(struct nvmlDevice_st *parent);
/* Every device, physical GPUs first then MIG devices (handles by UUID can name either). */
unsigned int sim_all_count(void);
struct nvmlDevice_st *sim_all_at(unsigned int index);
const char *sim_driver_version(void);
const char *sim_profile_path(void);
/* Live processes registered under sim_live_dir() (sim_health.c). */
const char *sim_live_dir(void);
int sim_live_name(unsigned int pid, char *name, size_t len);
int sim_parse_bus_id(const char *text, unsigned int *domain, unsigned int *bus, unsigned int *dev);

/* Resolve a handle: UNINITIALIZED before init, INVALID_ARGUMENT for a handle we never gave out. */
nvmlReturn_t sim_dev(nvmlDevice_t device, struct nvmlDevice_st **out);
/*
 * Look up a dotted path under the device object. Absent or null means the card does not support it
 * (NOT_SUPPORTED); {"nvml_error": "NAME"} returns that error, as does a device-level "nvml_error"
 * (e.g. GPU_IS_LOST for a card that fell off the bus).
 */
nvmlReturn_t sim_field(nvmlDevice_t device, const char *path, sj_node **out);
nvmlReturn_t sim_uint(nvmlDevice_t device, const char *path, unsigned long long *out);
nvmlReturn_t sim_bool(nvmlDevice_t device, const char *path, int *out);
nvmlReturn_t sim_copy_str(nvmlDevice_t device, const char *path, char *buf, unsigned int len);
nvmlReturn_t sim_put_str(const char *value, char *buf, unsigned int len);
/* Enum given by name (via table) or number; unsigned int / milliwatts (from watts) / enable state outputs. */
nvmlReturn_t sim_enum_field(nvmlDevice_t device, const char *path, const sim_enum *table, unsigned long long *out);
nvmlReturn_t sim_put_uint(nvmlDevice_t device, const char *path, unsigned int *out);
nvmlReturn_t sim_put_mw(nvmlDevice_t device, const char *path, unsigned int *out);
nvmlReturn_t sim_put_state(nvmlDevice_t device, const char *path, nvmlEnableState_t *out);
/* Same conventions for a node already in hand. */
nvmlReturn_t sim_node_check(sj_node *node);
int sim_node_uint(const sj_node *node, unsigned long long *out);

#endif
