/*
 * NVML simulator core: profile loading, init/shutdown, error strings, the device table and the two
 * gpufleet_nvml_sim_* marker symbols. System queries and handles: sim_system.c; device queries:
 * sim_device.c, sim_thermal.c, sim_health.c; lookup helpers: sim_lookup.c.
 */
#include "sim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int refcount;
static sj_node *profile;
static struct nvmlDevice_st *devices; /* physical GPUs first, then every MIG device */
static unsigned int ndevices, nall;
static char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];

/* nvmlReturn_t names as the profile spells them (without the NVML_ERROR_ prefix) and nvmlErrorString text. */
const sim_enum sim_errors[] = {
    {"SUCCESS", NVML_SUCCESS},
    {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
    {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
    {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
    {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
    {"ALREADY_INITIALIZED", NVML_ERROR_ALREADY_INITIALIZED},
    {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
    {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
    {"INSUFFICIENT_POWER", NVML_ERROR_INSUFFICIENT_POWER},
    {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
    {"TIMEOUT", NVML_ERROR_TIMEOUT},
    {"IRQ_ISSUE", NVML_ERROR_IRQ_ISSUE},
    {"LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND},
    {"FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND},
    {"CORRUPTED_INFOROM", NVML_ERROR_CORRUPTED_INFOROM},
    {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
    {"RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED},
    {"OPERATING_SYSTEM", NVML_ERROR_OPERATING_SYSTEM},
    {"LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH},
    {"IN_USE", NVML_ERROR_IN_USE},
    {"MEMORY", NVML_ERROR_MEMORY},
    {"NO_DATA", NVML_ERROR_NO_DATA},
    {"INSUFFICIENT_RESOURCES", NVML_ERROR_INSUFFICIENT_RESOURCES},
    {"ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
    {"NOT_READY", NVML_ERROR_NOT_READY},
    {"GPU_NOT_FOUND", NVML_ERROR_GPU_NOT_FOUND},
    {"INVALID_STATE", NVML_ERROR_INVALID_STATE},
    {"UNKNOWN", NVML_ERROR_UNKNOWN},
    {NULL, 0},
};

static const struct {
    nvmlReturn_t code;
    const char *text;
} error_texts[] = {
    {NVML_SUCCESS, "Success"},
    {NVML_ERROR_UNINITIALIZED, "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "Interrupt request issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "GPU requires restart"},
    {NVML_ERROR_OPERATING_SYSTEM, "The operating system has blocked the request."},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "RM has detected an NVML/RM version mismatch."},
    {NVML_ERROR_IN_USE, "In use by another client"},
    {NVML_ERROR_MEMORY, "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "No data"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch"},
    {NVML_ERROR_GPU_NOT_FOUND, "No GPUs were found"},
    {NVML_ERROR_UNKNOWN, "Unknown Error"},
};

int sim_enum_lookup(const sim_enum *table, const char *name, unsigned long long *value)
{
    if (!strncmp(name, "NVML_ERROR_", 11) && table == sim_errors)
        name += 11;
    for (; table->name; table++)
        if (!strcasecmp(table->name, name)) {
            *value = table->value;
            return 0;
        }
    return -1;
}

static void debug(const char *fmt, const char *arg)
{
    if (getenv("GPUFLEET_NVML_SIM_DEBUG")) {
        fprintf(stderr, "gpufleet-nvml-sim: ");
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
}

const char *sim_profile_path(void)
{
    const char *p = getenv("GPUFLEET_NVML_SIM_PROFILE");
    return p && *p ? p : SIM_DEFAULT_PROFILE;
}

/*
 * Read and parse the profile; NULL (with a debug note) when it is missing or not JSON. *why says which:
 * no profile is a host with the library but no driver, a broken one is an internal error.
 */
static sj_node *load_profile(nvmlReturn_t *why)
{
    const char *path = sim_profile_path();
    FILE *f = fopen(path, "rb");
    char err[128];
    *why = NVML_ERROR_UNKNOWN;
    if (!f) {
        debug("cannot open profile %s", path);
        *why = NVML_ERROR_DRIVER_NOT_LOADED;
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    while (text) {
        len += fread(text + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        char *bigger = realloc(text, cap *= 2);
        if (!bigger)
            free(text);
        text = bigger;
    }
    fclose(f);
    if (!text)
        return NULL;
    text[len] = '\0';
    sj_node *root = sj_parse(text, err, sizeof(err));
    if (!root || root->type != SJ_OBJ) {
        debug("profile is not a JSON object: %s", root ? "top level" : err);
        sj_free(root);
        root = NULL;
    }
    /* Keep the text alive for gpufleet_nvml_sim_host_json() spans: stash it in an unused node field. */
    if (root)
        root->str = text;
    else
        free(text);
    return root;
}

static const char *str_of(const sj_node *n)
{
    return n && n->type == SJ_STR ? n->str : NULL;
}

/* Library ("user-space") driver version: env override, then the version the build was made for, then the profile. */
static const char *library_version(const sj_node *root)
{
    const char *env = getenv("GPUFLEET_NVML_SIM_DRIVER_VERSION");
    if (env && *env)
        return env;
    if (GPUFLEET_NVML_SIM_BUILT_DRIVER_VERSION[0])
        return GPUFLEET_NVML_SIM_BUILT_DRIVER_VERSION;
    return str_of(sj_get(root, "driver_version"));
}

/* Why nvmlInit fails on this host, mirroring the checks the real library makes against the kernel module. */
static nvmlReturn_t init_verdict(sj_node *root)
{
    unsigned long long code;
    const char *err = str_of(sj_get(root, "init_error"));
    sj_node *host = sj_get(root, "host");
    sj_node *loaded = sj_get(host, "driver_loaded");
    const char *kmod = str_of(sj_get(host, "kernel_module_version"));
    const char *lib = library_version(root);

    if (err) {
        if (sim_enum_lookup(sim_errors, err, &code)) {
            debug("unknown init_error %s; using UNKNOWN", err);
            return NVML_ERROR_UNKNOWN;
        }
        debug("init_error %s set by the profile", err);
        return (nvmlReturn_t)code;
    }
    if (loaded && loaded->type == SJ_BOOL && !loaded->boolean) {
        debug("host.driver_loaded is false in %s", sim_profile_path());
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    /* After a package upgrade without reboot the loaded module is older than libnvidia-ml. */
    if (kmod && lib && strcmp(kmod, lib)) {
        char why[192];
        snprintf(why, sizeof(why), "kernel module %.60s, library %.60s", kmod, lib);
        debug("version mismatch: %s", why);
        return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    }
    return NVML_SUCCESS;
}

/* A GPU with "nvml_visible": false is on the PCI bus (host.pci_devices) but the driver did not bring it up
 * (RmInitAdapter failed, fell off the bus before the driver loaded): NVML does not enumerate it, and the
 * GPUs after it take the lower indices, as nvidia-smi then shows 7 GPUs numbered 0-6. */
static int nvml_visible(sj_node *gpu)
{
    sj_node *v = sj_get(gpu, "nvml_visible");
    return !(v && v->type == SJ_BOOL && !v->boolean);
}

static int build_devices(sj_node *root)
{
    sj_node *gpus = sj_get(root, "gpus");
    unsigned int listed = gpus && gpus->type == SJ_ARR ? (unsigned int)gpus->n : 0, n = 0, total = 0;
    for (unsigned int i = 0; i < listed; i++) {
        if (!nvml_visible(gpus->items[i]))
            continue;
        sj_node *migdevs = sj_get(sj_get(gpus->items[i], "mig"), "devices");
        n++;
        total += 1 + (migdevs && migdevs->type == SJ_ARR ? (unsigned int)migdevs->n : 0);
    }
    devices = calloc(total ? total : 1, sizeof(*devices));
    if (!devices)
        return -1;
    unsigned int next = n, at = 0;
    for (unsigned int i = 0; i < listed; i++) {
        if (!nvml_visible(gpus->items[i]))
            continue;
        devices[at].node = gpus->items[i];
        devices[at].index = at;
        sj_node *migdevs = sj_get(sj_get(gpus->items[i], "mig"), "devices");
        for (unsigned int m = 0; migdevs && migdevs->type == SJ_ARR && m < migdevs->n; m++, next++) {
            devices[next].node = migdevs->items[m];
            devices[next].parent = &devices[at];
            devices[next].index = m;
        }
        at++;
    }
    ndevices = n;
    nall = total;
    return 0;
}

static void unload(void)
{
    sj_free(profile); /* also frees the source text kept in profile->str */
    free(devices);
    profile = NULL;
    devices = NULL;
    ndevices = nall = 0;
}

static nvmlReturn_t do_init(void)
{
    nvmlReturn_t ret = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (refcount == 0) {
        sj_node *root = load_profile(&ret);
        if (root)
            ret = init_verdict(root);
        if (ret == NVML_SUCCESS) {
            profile = root;
            root = NULL;
            const char *lib = library_version(profile);
            snprintf(driver_version, sizeof(driver_version), "%s", lib ? lib : "");
            if (build_devices(profile)) {
                unload();
                ret = NVML_ERROR_MEMORY;
            }
        }
        sj_free(root);
    }
    if (ret == NVML_SUCCESS)
        refcount++;
    pthread_mutex_unlock(&lock);
    return ret;
}

SIM_EXPORT nvmlReturn_t nvmlInit(void) { return do_init(); }
SIM_EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init(); }
SIM_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags; /* NVML_INIT_FLAG_NO_GPUS / NO_ATTACH change nothing for a simulated device list */
    return do_init();
}

SIM_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t ret = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (refcount == 0)
        ret = NVML_ERROR_UNINITIALIZED;
    else if (--refcount == 0)
        unload();
    pthread_mutex_unlock(&lock);
    return ret;
}

SIM_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    for (size_t i = 0; i < sizeof(error_texts) / sizeof(error_texts[0]); i++)
        if (error_texts[i].code == result)
            return error_texts[i].text;
    return "Unknown Error";
}

int sim_initialized(void) { return refcount > 0; }
sj_node *sim_profile(void) { return profile; }
unsigned int sim_device_count(void) { return ndevices; }
struct nvmlDevice_st *sim_device_at(unsigned int index) { return index < ndevices ? &devices[index] : NULL; }

unsigned int sim_mig_count(struct nvmlDevice_st *parent)
{
    unsigned int count = 0;
    for (unsigned int i = ndevices; i < nall; i++)
        count += devices[i].parent == parent;
    return count;
}

struct nvmlDevice_st *sim_mig_device(struct nvmlDevice_st *parent, unsigned int slot)
{
    for (unsigned int i = ndevices; i < nall; i++)
        if (devices[i].parent == parent && devices[i].index == slot)
            return &devices[i];
    return NULL;
}

nvmlReturn_t sim_dev(nvmlDevice_t device, struct nvmlDevice_st **out)
{
    if (!sim_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!device || device < devices || device >= devices + nall)
        return NVML_ERROR_INVALID_ARGUMENT;
    *out = device;
    return NVML_SUCCESS;
}

unsigned int sim_all_count(void) { return nall; }
struct nvmlDevice_st *sim_all_at(unsigned int index) { return index < nall ? &devices[index] : NULL; }
const char *sim_driver_version(void) { return driver_version; }

/* ---- markers that tell the simulator from the real library without nvmlInit ---- */

SIM_EXPORT const char *gpufleet_nvml_sim_profile_path(void) { return sim_profile_path(); }

SIM_EXPORT const char *gpufleet_nvml_sim_host_json(void)
{
    static char *cached;
    static char cached_for[4096];
    const char *path = sim_profile_path();
    pthread_mutex_lock(&lock);
    if (!cached || strcmp(cached_for, path)) {
        nvmlReturn_t why;
        sj_node *root = load_profile(&why);
        sj_node *host = sj_get(root, "host");
        free(cached);
        cached = NULL;
        if (root) {
            size_t len = host ? host->src_end - host->src_start : 2;
            cached = malloc(len + 1);
            if (cached) {
                memcpy(cached, host ? root->str + host->src_start : "{}", len);
                cached[len] = '\0';
            }
            snprintf(cached_for, sizeof(cached_for), "%s", path);
            sj_free(root);
        }
    }
    pthread_mutex_unlock(&lock);
    return cached;
}
