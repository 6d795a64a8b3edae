/*
 * NVML simulator: memory health (retired pages, remapped rows), NVLink, MIG, processes and topology.
 * Counted lists follow NVML's sizing protocol: a short buffer returns NVML_ERROR_INSUFFICIENT_SIZE and
 * the needed count, as https://docs.nvidia.com/deploy/nvml-api/ describes for each call.
 */
#include "sim.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- retired pages and row remapping ---- */

static nvmlReturn_t retired(nvmlDevice_t device, nvmlPageRetirementCause_t cause, unsigned int *count,
                            unsigned long long *addresses, unsigned long long *timestamps)
{
    sj_node *list;
    const char *path = cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS ? "retired_pages.single_bit"
                       : cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR       ? "retired_pages.double_bit"
                                                                                        : NULL;
    if (!path || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(sim_field(device, path, &list));
    if (list->type != SJ_ARR)
        return NVML_ERROR_UNKNOWN;
    unsigned int have = (unsigned int)list->n;
    if (have == 0 || (addresses && *count >= have)) {
        for (unsigned int i = 0; i < have; i++) {
            sj_node *item = list->items[i];
            unsigned long long addr = 0, ts = 0;
            if (sim_node_uint(item, &addr)) { /* {"address": ..., "timestamp": ...} form */
                sim_node_uint(sj_get(item, "address"), &addr);
                sim_node_uint(sj_get(item, "timestamp"), &ts);
            }
            addresses[i] = addr;
            if (timestamps)
                timestamps[i] = ts;
        }
        *count = have;
        return NVML_SUCCESS;
    }
    *count = have;
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, nvmlPageRetirementCause_t c, unsigned int *n,
                                                  unsigned long long *a)
{
    return retired(d, c, n, a, NULL);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t d, nvmlPageRetirementCause_t c, unsigned int *n,
                                                     unsigned long long *a, unsigned long long *t)
{
    return retired(d, c, n, a, t);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *pending)
{
    int v;
    if (!pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(sim_bool(device, "retired_pages.pending", &v));
    *pending = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corr, unsigned int *unc,
                                                  unsigned int *pending, unsigned int *failure)
{
    unsigned long long c, u;
    int p, f;
    if (!corr || !unc || !pending || !failure)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(sim_uint(device, "remapped_rows.correctable", &c));
    TRY(sim_uint(device, "remapped_rows.uncorrectable", &u));
    TRY(sim_bool(device, "remapped_rows.pending", &p));
    TRY(sim_bool(device, "remapped_rows.failure", &f));
    *corr = (unsigned int)c;
    *unc = (unsigned int)u;
    *pending = (unsigned int)p;
    *failure = (unsigned int)f;
    return NVML_SUCCESS;
}

/* ---- NVLink ---- */

static nvmlReturn_t nvlink(nvmlDevice_t device, unsigned int link, sj_node **nv)
{
    unsigned long long links;
    if (link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(sim_field(device, "nvlink", nv));
    TRY(sim_uint(device, "nvlink.links", &links));
    return link < links ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *active)
{
    sj_node *nv, *down;
    unsigned long long v;
    if (!active)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(nvlink(device, link, &nv));
    *active = NVML_FEATURE_ENABLED;
    down = sj_get(nv, "inactive");
    for (size_t i = 0; down && down->type == SJ_ARR && i < down->n; i++)
        if (!sim_node_uint(down->items[i], &v) && v == link)
            *active = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link, unsigned int *version)
{
    sj_node *nv;
    unsigned long long v;
    if (!version)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(nvlink(device, link, &nv));
    TRY(sim_uint(device, "nvlink.version", &v));
    *version = (unsigned int)v;
    return NVML_SUCCESS;
}

/* ---- MIG ---- */

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    unsigned long long v;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(sim_uint(device, "mig.max_devices", &v));
    *count = (unsigned int)v;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                            nvmlDevice_t *mig)
{
    struct nvmlDevice_st *dev;
    unsigned int max;
    int enabled;
    TRY(sim_dev(device, &dev));
    if (!mig || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(nvmlDeviceGetMaxMigDeviceCount(device, &max));
    if (index >= max)
        return NVML_ERROR_INVALID_ARGUMENT;
    TRY(sim_bool(device, "mig.current", &enabled));
    *mig = enabled ? sim_mig_device(dev, index) : NULL;
    return *mig ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *is_mig)
{
    struct nvmlDevice_st *dev;
    TRY(sim_dev(device, &dev));
    if (!is_mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    *is_mig = dev->parent != NULL;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *device)
{
    struct nvmlDevice_st *dev;
    TRY(sim_dev(mig, &dev));
    if (!device || !dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = dev->parent;
    return NVML_SUCCESS;
}

static nvmlReturn_t mig_id(nvmlDevice_t device, const char *key, unsigned int *id)
{
    struct nvmlDevice_st *dev;
    unsigned long long v;
    TRY(sim_dev(device, &dev));
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->parent)
        return NVML_ERROR_NOT_SUPPORTED;
    TRY(sim_uint(device, key, &v));
    *id = (unsigned int)v;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
    return mig_id(d, "gpu_instance_id", id);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
    return mig_id(d, "compute_instance_id", id);
}

/* ---- processes ---- */

typedef struct {
    unsigned int pid, gi, ci;
    unsigned long long mem;
} proc_row;

/* Append a device's "processes" rows; gi/ci come from the MIG device they run on. */
static unsigned int collect(struct nvmlDevice_st *dev, proc_row *rows, unsigned int at, unsigned int cap)
{
    sj_node *procs = sj_get(dev->node, "processes");
    unsigned long long gi = 0xFFFFFFFFULL, ci = 0xFFFFFFFFULL, v;
    if (dev->parent) {
        sim_node_uint(sj_get(dev->node, "gpu_instance_id"), &gi);
        sim_node_uint(sj_get(dev->node, "compute_instance_id"), &ci);
    }
    for (size_t i = 0; procs && procs->type == SJ_ARR && i < procs->n; i++, at++) {
        if (at >= cap)
            continue;
        sj_node *p = procs->items[i];
        rows[at].pid = sim_node_uint(sj_get(p, "pid"), &v) ? 0 : (unsigned int)v;
        rows[at].mem = sim_node_uint(sj_get(p, "used_memory_mib"), &v) ? 0 : v << 20;
        rows[at].gi = (unsigned int)gi;
        rows[at].ci = (unsigned int)ci;
    }
    return at;
}

/*
 * Live processes: a file <dir>/<NVML index>/<pid> ("NAME USED_MIB") stands for a CUDA context that process holds
 * on that GPU, for as long as the process lives, as the real driver lists a process only while it runs. A Slurm
 * job in the sandbox registers itself for the GPUs of CUDA_VISIBLE_DEVICES (sandbox/slurm/gpu-job), so its
 * processes appear and vanish with the job; a process left behind is a stray. Dir: $GPUFLEET_NVML_SIM_PROCESSES_DIR,
 * default /run/gpufleet/nvml-sim/processes.
 */
const char *sim_live_dir(void)
{
    const char *env = getenv("GPUFLEET_NVML_SIM_PROCESSES_DIR");
    return env && *env ? env : "/run/gpufleet/nvml-sim/processes";
}

static int alive(unsigned long pid)
{
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Name and memory of one live registration; 0 when the file names a live process. */
static int live_entry(const char *dir, const char *file, char *name, size_t len, unsigned long long *mib)
{
    char path[600];
    char *end;
    unsigned long pid = strtoul(file, &end, 10);
    if (!*file || *end || pid == 0 || !alive(pid))
        return -1;
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    char buf[160] = "";
    if (!f)
        return -1;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = 0;
    fclose(f);
    *mib = 0;
    if (sscanf(buf, "%63s %llu", name, mib) < 1)
        snprintf(name, len, "process");
    return 0;
}

static unsigned int collect_live(struct nvmlDevice_st *dev, proc_row *rows, unsigned int at, unsigned int cap)
{
    char dir[520], name[64];
    unsigned long long mib;
    snprintf(dir, sizeof(dir), "%s/%u", sim_live_dir(), dev->index);
    DIR *d = opendir(dir);
    if (!d)
        return at;
    for (struct dirent *e; (e = readdir(d));) {
        if (live_entry(dir, e->d_name, name, sizeof(name), &mib))
            continue;
        if (at < cap) {
            rows[at].pid = (unsigned int)strtoul(e->d_name, NULL, 10);
            rows[at].mem = mib << 20;
            rows[at].gi = rows[at].ci = 0xFFFFFFFFu;
        }
        at++;
    }
    closedir(d);
    return at;
}

/* The name of a live registered process, for nvmlSystemGetProcessName; 0 when found. */
int sim_live_name(unsigned int pid, char *name, size_t len)
{
    char dir[520], file[24];
    unsigned long long mib;
    snprintf(file, sizeof(file), "%u", pid);
    for (unsigned int i = 0; i < sim_device_count(); i++) {
        snprintf(dir, sizeof(dir), "%s/%u", sim_live_dir(), i);
        if (!live_entry(dir, file, name, len, &mib))
            return 0;
    }
    return -1;
}

static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *count, void *infos, int v1)
{
    enum { CAP = 512 };
    static __thread proc_row rows[CAP];
    struct nvmlDevice_st *dev;
    sj_node *unused;
    TRY(sim_dev(device, &dev));
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* An absent list means no processes; only an explicit null (or nvml_error) marks it unsupported. */
    if (sj_get(dev->node, "processes"))
        TRY(sim_field(device, "processes", &unused));
    else
        TRY(sim_field(device, "", &unused));
    unsigned int n = collect(dev, rows, 0, CAP);
    if (!dev->parent) {
        for (unsigned int m = 0; m < sim_mig_count(dev); m++)
            n = collect(sim_mig_device(dev, m), rows, n, CAP);
        n = collect_live(dev, rows, n, CAP);
    }
    if (n > CAP)
        n = CAP;
    if (n > 0 && (!infos || *count < n)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; i++) {
        if (v1) {
            nvmlProcessInfo_v1_t *out = (nvmlProcessInfo_v1_t *)infos + i;
            out->pid = rows[i].pid;
            out->usedGpuMemory = rows[i].mem;
        } else {
            nvmlProcessInfo_t *out = (nvmlProcessInfo_t *)infos + i;
            out->pid = rows[i].pid;
            out->usedGpuMemory = rows[i].mem;
            out->gpuInstanceId = rows[i].gi;
            out->computeInstanceId = rows[i].ci;
        }
    }
    *count = n;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_v1_t *p)
{
    return processes(d, n, p, 1);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_v2_t *p)
{
    return processes(d, n, p, 0);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *p)
{
    return processes(d, n, p, 0);
}

/* ---- topology ---- */

static const sim_enum topology_levels[] = {
    {"INTERNAL", NVML_TOPOLOGY_INTERNAL}, {"SINGLE", NVML_TOPOLOGY_SINGLE},
    {"MULTIPLE", NVML_TOPOLOGY_MULTIPLE}, {"HOSTBRIDGE", NVML_TOPOLOGY_HOSTBRIDGE},
    {"NODE", NVML_TOPOLOGY_NODE},         {"SYSTEM", NVML_TOPOLOGY_SYSTEM},
    {NULL, 0},
};

static int in_group(const sj_node *gpus, unsigned int index)
{
    unsigned long long v;
    for (size_t i = 0; gpus && gpus->type == SJ_ARR && i < gpus->n; i++)
        if (!sim_node_uint(gpus->items[i], &v) && v == index)
            return 1;
    return 0;
}

/*
 * "topology" lists groups of GPU indexes with the PCIe level that joins them; the common ancestor of
 * two GPUs is the closest level of any group holding both, SYSTEM when none does.
 */
SIM_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                            nvmlGpuTopologyLevel_t *path)
{
    struct nvmlDevice_st *a, *b;
    unsigned long long level, best = NVML_TOPOLOGY_SYSTEM;
    TRY(sim_dev(device1, &a));
    TRY(sim_dev(device2, &b));
    if (!path || a->parent || b->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    sj_node *groups = sj_get(sim_profile(), "topology");
    if (!groups || groups->type != SJ_ARR)
        return NVML_ERROR_NOT_SUPPORTED;
    if (a == b) {
        *path = NVML_TOPOLOGY_INTERNAL;
        return NVML_SUCCESS;
    }
    for (size_t i = 0; i < groups->n; i++) {
        sj_node *lvl = sj_get(groups->items[i], "level"), *gpus = sj_get(groups->items[i], "gpus");
        if (!lvl || lvl->type != SJ_STR || sim_enum_lookup(topology_levels, lvl->str, &level))
            return NVML_ERROR_UNKNOWN;
        if (in_group(gpus, a->index) && in_group(gpus, b->index) && level < best)
            best = level;
    }
    *path = (nvmlGpuTopologyLevel_t)best;
    return NVML_SUCCESS;
}

/* ---- NVLink fabric (Hopper and newer behind NVSwitch: the GPU's registration with Fabric Manager) ---- */

static const sim_enum fabric_states[] = {
    {"NOT_SUPPORTED", NVML_GPU_FABRIC_STATE_NOT_SUPPORTED}, {"NOT_STARTED", NVML_GPU_FABRIC_STATE_NOT_STARTED},
    {"IN_PROGRESS", NVML_GPU_FABRIC_STATE_IN_PROGRESS},     {"COMPLETED", NVML_GPU_FABRIC_STATE_COMPLETED},
    {NULL, 0}};

/* "fabric": {"state": "COMPLETED", "status": "SUCCESS", "clique_id": 32766, "cluster_uuid": "hex32",
 * "health_mask": 0}; absent -> NOT_SUPPORTED, as on A100 and on GPUs without NVSwitch. */
static nvmlReturn_t fabric(nvmlDevice_t device, unsigned char *uuid, nvmlReturn_t *status, unsigned int *clique,
                           nvmlGpuFabricState_t *state, unsigned int *health)
{
    sj_node *node, *s;
    unsigned long long v = 0;
    TRY(sim_field(device, "fabric", &node));
    TRY(sim_enum_field(device, "fabric.state", fabric_states, &v));
    *state = (nvmlGpuFabricState_t)v;
    s = sj_get(node, "status");
    *status = NVML_SUCCESS;
    if (s && s->type == SJ_STR && !sim_enum_lookup(sim_errors, s->str, &v))
        *status = (nvmlReturn_t)v;
    *clique = sim_node_uint(sj_get(node, "clique_id"), &v) ? 0 : (unsigned int)v;
    if (health)
        *health = sim_node_uint(sj_get(node, "health_mask"), &v) ? 0 : (unsigned int)v;
    memset(uuid, 0, NVML_GPU_FABRIC_UUID_LEN);
    s = sj_get(node, "cluster_uuid");
    for (unsigned int i = 0; s && s->type == SJ_STR && i < NVML_GPU_FABRIC_UUID_LEN && s->str[2 * i]; i++) {
        unsigned int byte = 0;
        if (sscanf(s->str + 2 * i, "%2x", &byte) == 1)
            uuid[i] = (unsigned char)byte;
    }
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *info)
{
    ARG_CHECK(info);
    return fabric(device, info->clusterUuid, &info->status, &info->cliqueId, &info->state, NULL);
}

/* The caller sets .version (nvmlGpuFabricInfo_v2 or _v3); another version is refused as the library refuses it. */
SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t *info)
{
    ARG_CHECK(info);
    if (info->version != nvmlGpuFabricInfo_v2 && info->version != nvmlGpuFabricInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    TRY(fabric(device, info->clusterUuid, &info->status, &info->cliqueId, &info->state, &info->healthMask));
    if (info->version == nvmlGpuFabricInfo_v3)
        info->healthSummary = NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY;
    return NVML_SUCCESS;
}
