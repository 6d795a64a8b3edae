/*
 * NVML simulator: temperatures, power, clocks and clock event reasons, PCIe link state.
 * The profile has watts, NVML answers milliwatts; reasons are nvmlClocksEventReason* bits.
 */
#include "sim.h"

#include <stdio.h>
#include <string.h>

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

/* ---- thermals and power ---- */

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                                 unsigned int *temp)
{
    ARG_CHECK(sensor == NVML_TEMPERATURE_GPU);
    return sim_put_uint(device, "temperature.gpu", temp);
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
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: return sim_put_uint(device, "temperature.shutdown", temp);
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: return sim_put_uint(device, "temperature.slowdown", temp);
    case NVML_TEMPERATURE_THRESHOLD_MEM_MAX: return sim_put_uint(device, "temperature.memory_max", temp);
    case NVML_TEMPERATURE_THRESHOLD_GPU_MAX: return sim_put_uint(device, "temperature.max_operating", temp);
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *p) { return sim_put_mw(d, "power.usage_w", p); }
SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *p)
{
    return sim_put_mw(d, "power.limit_w", p);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int *p)
{
    return sim_put_mw(d, "power.default_limit_w", p);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *p)
{
    return sim_put_mw(d, "power.enforced_limit_w", p);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int *min_limit,
                                                                     unsigned int *max_limit)
{
    ARG_CHECK(min_limit && max_limit);
    TRY(sim_put_mw(device, "power.min_limit_w", min_limit));
    return sim_put_mw(device, "power.max_limit_w", max_limit);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    unsigned int mw;
    ARG_CHECK(mode);
    TRY(sim_put_mw(device, "power.limit_w", &mw)); /* a card with a settable limit has power management on */
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
    return sim_put_uint(device, path, clock);
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
    return sim_put_uint(d, "pci.link_gen_current", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v)
{
    return sim_put_uint(d, "pci.link_gen_max", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v)
{
    /* The GPU's own maximum; the profile may set it apart from the slot-limited link_gen_max. */
    if (sim_uint(d, "pci.gpu_link_gen_max", &(unsigned long long){0}) == NVML_SUCCESS)
        return sim_put_uint(d, "pci.gpu_link_gen_max", v);
    return sim_put_uint(d, "pci.link_gen_max", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v)
{
    return sim_put_uint(d, "pci.link_width_current", v);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v)
{
    return sim_put_uint(d, "pci.link_width_max", v);
}
