// References for gpu.memtest and gpu.copy_bw, measured with the plainest CUDA calls:
//   - cudaMemcpy device-to-device on each GPU (bytes copied per second, and bytes read plus
//     written per second, which is what a memory test's read or write pass compares with),
//   - cudaMemset on each GPU (a write-only pass),
//   - cudaMemcpyPeer between every ordered pair of GPUs (blocking calls, host-timed after a
//     warm-up, peer access enabled as the copy_bw test does).
// Prints one JSON line per figure.
//
//   gpu_ref_copy [--d2d-mb 8192] [--peer-mb 1024] [--iters 10]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

using C = std::chrono::steady_clock;

template <class F>
double median_seconds(int iters, F f) {
  f();  // warm-up
  CK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto a = C::now();
    f();
    CK(cudaDeviceSynchronize());
    t.push_back(std::chrono::duration<double>(C::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  size_t d2d_mb = 8192, peer_mb = 1024;
  int iters = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--d2d-mb") d2d_mb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--peer-mb") peer_mb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--iters") iters = std::atoi(argv[i + 1]);
  }
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  for (int d = 0; d < n; ++d) {
    CK(cudaSetDevice(d));
    const size_t bytes = d2d_mb << 20;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 0x5a, bytes));
    const double tc = median_seconds(iters, [&] { CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)); });
    const double ts = median_seconds(iters, [&] { CK(cudaMemset(b, 0xa5, bytes)); });
    std::printf("{\"ref\":\"memcpy_d2d\",\"cuda_ordinal\":%d,\"bytes\":%zu,\"copy_gbps\":%.1f,\"rw_gbps\":%.1f}\n",
                d, bytes, bytes / tc / 1e9, 2.0 * bytes / tc / 1e9);
    std::printf("{\"ref\":\"memset\",\"cuda_ordinal\":%d,\"bytes\":%zu,\"write_gbps\":%.1f}\n", d, bytes,
                bytes / ts / 1e9);
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const size_t bytes = peer_mb << 20;
      int can = 0;
      CK(cudaDeviceCanAccessPeer(&can, s, d));
      if (can) {
        CK(cudaSetDevice(s));
        cudaError_t e = cudaDeviceEnablePeerAccess(d, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
        CK(cudaSetDevice(d));
        e = cudaDeviceEnablePeerAccess(s, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
        cudaGetLastError();
      }
      void *a, *b;
      CK(cudaSetDevice(s));
      CK(cudaMalloc(&a, bytes));
      CK(cudaMemset(a, 0x5a, bytes));
      CK(cudaSetDevice(d));
      CK(cudaMalloc(&b, bytes));
      CK(cudaSetDevice(s));
      // cudaDeviceSynchronize in median_seconds waits on the current device (the source);
      // cudaMemcpyPeer is synchronous with respect to the host anyway.
      const double t = median_seconds(iters, [&] { CK(cudaMemcpyPeer(b, d, a, s, bytes)); });
      std::printf("{\"ref\":\"memcpy_peer\",\"src\":%d,\"dst\":%d,\"p2p\":%s,\"bytes\":%zu,\"gbps\":%.1f}\n", s,
                  d, can ? "true" : "false", bytes, bytes / t / 1e9);
      CK(cudaFree(a));
      CK(cudaSetDevice(d));
      CK(cudaFree(b));
    }
  return 0;
}
