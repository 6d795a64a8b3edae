// gpufleet-allreduce: NCCL all-reduce bus bandwidth on one node, all its GPUs driven by one process (as nccl-tests'
// all_reduce_perf -g N does), for gpufleet.stack's gpu_validation role. Built on the node with its own nvcc against
// its own NCCL, so it tests the stack that is installed. Prints one JSON object on stdout.
//
// Bandwidths follow nccl-tests' definitions (doc/PERFORMANCE.md in NVIDIA/nccl-tests): algbw = bytes / time;
// for all-reduce busbw = algbw * 2 (n - 1) / n, comparable across GPU counts and with the hardware's link speed.
//
// usage: gpufleet-allreduce [MIN_BYTES [MAX_BYTES [ITERS [WARMUP]]]]   (defaults 8M 1G 20 5; sizes double)
// exit: 0 measured, 3 CUDA could not start (the reason in "error"), 4 NCCL or a CUDA call failed during the run,
// 5 wrong results. Exactly one JSON object is printed, whatever happens.
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_GPUS 64
#define CHECKED 1024  // elements compared at each end of every GPU's result

static char results[64 * 160];
static size_t used = 0;

static void json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') putchar('\\');
    if ((unsigned char)*s >= 0x20) putchar(*s);
  }
  putchar('"');
}

static int runtime_version = 0, driver_version = 0;

static int fail(int code, const char *stage, const char *name, const char *text) {
  printf("{\"ok\": false, \"stage\": \"%s\", \"code\": ", stage);
  json_string(name);
  printf(", \"error\": ");
  json_string(text);
  int nccl = 0;
  ncclGetVersion(&nccl);
  // cuda_driver 0: no libcuda.so.1 answered (no driver installed or loaded).
  printf(", \"nccl_version\": %d, \"cuda_runtime\": %d, \"cuda_driver\": %d}\n", nccl, runtime_version,
         driver_version);
  return code;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__global__ void fill(float *buf, size_t count, float value) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
    buf[i] = value;
}

int main(int argc, char **argv) {
  size_t min_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (8u << 20);
  size_t max_bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (1u << 30);
  int iters = argc > 3 ? atoi(argv[3]) : 20, warmup = argc > 4 ? atoi(argv[4]) : 5;
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  cudaRuntimeGetVersion(&runtime_version);
  cudaDriverGetVersion(&driver_version);
  if (err != cudaSuccess) return fail(3, "cuda", cudaGetErrorName(err), cudaGetErrorString(err));
  if (n < 1) return fail(3, "cuda", "no devices", "cudaGetDeviceCount found no GPU");
  if (n > MAX_GPUS) n = MAX_GPUS;
  int devs[MAX_GPUS];
  ncclComm_t comms[MAX_GPUS];
  cudaStream_t streams[MAX_GPUS];
  float *send[MAX_GPUS], *recv[MAX_GPUS];
  for (int i = 0; i < n; i++) devs[i] = i;
  ncclResult_t nr = ncclCommInitAll(comms, n, devs);
  if (nr != ncclSuccess) return fail(4, "nccl", "ncclCommInitAll", ncclGetErrorString(nr));
  for (int i = 0; i < n; i++) {
    cudaSetDevice(i);
    cudaStreamCreate(&streams[i]);
    if (cudaMalloc(&send[i], max_bytes) != cudaSuccess || cudaMalloc(&recv[i], max_bytes) != cudaSuccess)
      return fail(4, "run", "cudaMalloc", "could not allocate the buffers: other processes hold GPU memory, or lower "
                                         "MAX_BYTES");
  }
  int version = 0;
  ncclGetVersion(&version);
  char name[256] = "";
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) snprintf(name, sizeof name, "%s", prop.name);
  double sum_busbw = 0;
  int sizes = 0, wrong_total = 0;
  static float probe[2 * CHECKED];
  if (min_bytes < 2 * CHECKED * sizeof(float)) min_bytes = 2 * CHECKED * sizeof(float);
  for (size_t bytes = min_bytes; bytes <= max_bytes && sizes < 64; bytes *= 2) {
    size_t count = bytes / sizeof(float);
    for (int i = 0; i < n; i++) {
      cudaSetDevice(i);
      fill<<<256, 256, 0, streams[i]>>>(send[i], count, (float)(i + 1));
      if ((err = cudaGetLastError()) != cudaSuccess) return fail(4, "run", cudaGetErrorName(err), cudaGetErrorString(err));
    }
    double start = 0;
    for (int it = -warmup; it < iters; it++) {
      if (it == 0) {
        for (int i = 0; i < n; i++)
          if ((err = cudaStreamSynchronize(streams[i])) != cudaSuccess)
            return fail(4, "run", cudaGetErrorName(err), cudaGetErrorString(err));
        start = now();
      }
      ncclGroupStart();
      for (int i = 0; i < n; i++) ncclAllReduce(send[i], recv[i], count, ncclFloat, ncclSum, comms[i], streams[i]);
      nr = ncclGroupEnd();
      if (nr != ncclSuccess) return fail(4, "nccl", "ncclAllReduce", ncclGetErrorString(nr));
    }
    for (int i = 0; i < n; i++) {
      ncclResult_t async = ncclSuccess;
      if ((err = cudaStreamSynchronize(streams[i])) != cudaSuccess)
        return fail(4, "run", cudaGetErrorName(err), cudaGetErrorString(err));
      if (ncclCommGetAsyncError(comms[i], &async) == ncclSuccess && async != ncclSuccess)
        return fail(4, "nccl", "ncclCommGetAsyncError", ncclGetErrorString(async));
    }
    double seconds = (now() - start) / iters;
    // Every rank sent i + 1: every element of every result is n (n + 1) / 2. Compare the first and last CHECKED
    // elements of each GPU's result (a transfer that stopped short leaves the end wrong).
    float expect = n * (n + 1) / 2.0f;
    int wrong = 0;
    for (int i = 0; i < n; i++) {
      for (int k = 0; k < 2 * CHECKED; k++) probe[k] = -1.0f;
      cudaSetDevice(i);
      if ((err = cudaMemcpy(probe, recv[i], CHECKED * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess ||
          (err = cudaMemcpy(probe + CHECKED, recv[i] + count - CHECKED, CHECKED * sizeof(float),
                            cudaMemcpyDeviceToHost)) != cudaSuccess)
        return fail(4, "run", cudaGetErrorName(err), cudaGetErrorString(err));
      for (int k = 0; k < 2 * CHECKED; k++) wrong += probe[k] != expect;
    }
    double algbw = bytes / seconds / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
    used += snprintf(results + used, sizeof results - used,
                     "%s{\"bytes\": %zu, \"time_us\": %.1f, \"algbw_gbs\": %.2f, \"busbw_gbs\": %.2f, \"wrong\": %d}",
                     sizes ? ", " : "", bytes, seconds * 1e6, algbw, busbw, wrong);
    sum_busbw += busbw;
    wrong_total += wrong;
    sizes++;
  }
  printf("{\"ok\": true, \"gpus\": %d, \"gpu_name\": ", n);
  json_string(name);
  printf(", \"nccl_version\": %d, \"cuda_runtime\": %d, \"cuda_driver\": %d, \"results\": [%s]", version,
         runtime_version, driver_version, results);
  printf(", \"avg_busbw_gbs\": %.2f, \"wrong\": %d}\n", sizes ? sum_busbw / sizes : 0.0, wrong_total);
  for (int i = 0; i < n; i++) ncclCommDestroy(comms[i]);
  return wrong_total ? 5 : 0;
}
