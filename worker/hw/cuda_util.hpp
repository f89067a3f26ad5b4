// CUDA plumbing shared by the GPU tests: a check macro that carries the expression, device and
// file:line; RAII for device/pinned memory, streams and events; deadline-bounded waits; and the
// node's GPU list with the physical index each GPU is named by. Only compiled with CUDA.
#pragma once

#if KILN_HAVE_CUDA

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "worker/hw/nvml.hpp"

namespace kiln::worker::gpu {

// A failed CUDA or cuBLAS call. `hardware` marks errors that leave the GPU unusable until reset
// (fell off the bus, uncorrectable ECC, a fault inside a kernel kiln knows to be correct): those
// become a FAIL for the GPU; anything else is an ERROR of the test.
struct GpuError : std::runtime_error {
  GpuError(const std::string& what, int code, bool hardware)
      : std::runtime_error(what), code(code), hardware(hardware) {}
  int code;
  bool hardware;
};

bool is_hardware_error(cudaError_t e);
[[noreturn]] void throw_cuda(cudaError_t e, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas(int status, const char* expr, const char* file, int line);

#define KILN_CUDA(expr)                                                          \
  do {                                                                           \
    const cudaError_t kiln_e_ = (expr);                                          \
    if (kiln_e_ != cudaSuccess) ::kiln::worker::gpu::throw_cuda(kiln_e_, #expr, __FILE__, __LINE__); \
  } while (0)

#define KILN_CUBLAS(expr)                                                        \
  do {                                                                           \
    const int kiln_s_ = static_cast<int>(expr);                                  \
    if (kiln_s_ != 0) ::kiln::worker::gpu::throw_cublas(kiln_s_, #expr, __FILE__, __LINE__); \
  } while (0)

// Device memory of one GPU (cudaMalloc, never managed memory).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes);
  // Takes ownership of memory already allocated with cudaMalloc on `device`.
  static DeviceBuffer adopt(int device, void* p, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  std::size_t size() const { return bytes_; }

 private:
  int device_ = 0;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory, so copies run on the copy engines at full rate.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
};

class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  int device_;
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(int device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  int device_;
  cudaEvent_t e_ = nullptr;
};

using Clock = std::chrono::steady_clock;

// Polls the event until it completes (true) or the deadline passes (false). Never blocks in the
// driver, so a hung GPU turns into a TIMEOUT for that GPU instead of a hung worker.
bool wait_event(cudaEvent_t e, Clock::time_point deadline);
bool wait_stream(cudaStream_t s, Clock::time_point deadline);
// Milliseconds between two completed events.
float elapsed_ms(cudaEvent_t from, cudaEvent_t to);

// One CUDA-visible GPU of this node.
struct GpuInfo {
  int ordinal = 0;     // CUDA device ordinal in this process
  int index = 0;       // physical index (NVML), used in entity names; ordinal when unknown
  std::string bus_id;  // "0000:1B:00.0"
  std::string name;
  std::string uuid;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::size_t total_mem = 0;
  nvml::Device nvml = nullptr;  // null without NVML
};

// Every CUDA-visible GPU, mapped to NVML by PCI bus id when `lib` is given.
std::vector<GpuInfo> list_gpus(const nvml::Lib* lib);

// cudaDeviceEnablePeerAccess, tolerating "already enabled". False when the pair has no P2P.
bool enable_peer(int from, int to);

}  // namespace kiln::worker::gpu

#endif  // KILN_HAVE_CUDA
