#include "worker/hw/cuda_util.hpp"

#if KILN_HAVE_CUDA

#include <cctype>
#include <thread>

#include <cublas_v2.h>

namespace kiln::worker::gpu {

bool is_hardware_error(cudaError_t e) {
  switch (e) {
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoDevice:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorSystemNotReady:
      return true;
    default:
      return false;
  }
}

namespace {
std::string where(const char* expr, const char* file, int line) {
  int dev = -1;
  cudaGetDevice(&dev);
  const char* base = file;
  for (const char* p = file; *p; ++p)
    if (*p == '/') base = p + 1;
  return std::string(expr) + " on CUDA device " + std::to_string(dev) + " (" + base + ":" +
         std::to_string(line) + ")";
}
}  // namespace

void throw_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  throw GpuError(std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) + " in " +
                     where(expr, file, line),
                 static_cast<int>(e), is_hardware_error(e));
}

void throw_cublas(int status, const char* expr, const char* file, int line) {
  // CUBLAS_STATUS_EXECUTION_FAILED (13) is a kernel that failed on the device.
  throw GpuError(std::string(cublasGetStatusString(static_cast<cublasStatus_t>(status))) + " in " +
                     where(expr, file, line),
                 status, status == CUBLAS_STATUS_EXECUTION_FAILED);
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : device_(device), bytes_(bytes) {
  KILN_CUDA(cudaSetDevice(device));
  KILN_CUDA(cudaMalloc(&p_, bytes));
}

DeviceBuffer DeviceBuffer::adopt(int device, void* p, std::size_t bytes) {
  DeviceBuffer b;
  b.device_ = device;
  b.p_ = p;
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) {
    cudaSetDevice(device_);
    cudaFree(p_);
  }
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) {
      cudaSetDevice(device_);
      cudaFree(p_);
    }
    device_ = o.device_;
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) {
  KILN_CUDA(cudaHostAlloc(&p_, bytes, cudaHostAllocPortable));
}
PinnedBuffer::~PinnedBuffer() {
  if (p_) cudaFreeHost(p_);
}

Stream::Stream(int device) : device_(device) {
  KILN_CUDA(cudaSetDevice(device));
  KILN_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  if (s_) {
    cudaSetDevice(device_);
    cudaStreamDestroy(s_);
  }
}

Event::Event(int device) : device_(device) {
  KILN_CUDA(cudaSetDevice(device));
  KILN_CUDA(cudaEventCreate(&e_));
}
Event::~Event() {
  if (e_) {
    cudaSetDevice(device_);
    cudaEventDestroy(e_);
  }
}

bool wait_event(cudaEvent_t e, Clock::time_point deadline) {
  for (;;) {
    const cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess) return true;
    if (r != cudaErrorNotReady) KILN_CUDA(r);
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

bool wait_stream(cudaStream_t s, Clock::time_point deadline) {
  for (;;) {
    const cudaError_t r = cudaStreamQuery(s);
    if (r == cudaSuccess) return true;
    if (r != cudaErrorNotReady) KILN_CUDA(r);
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

float elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0.0f;
  KILN_CUDA(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

std::vector<GpuInfo> list_gpus(const nvml::Lib* lib) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return {};
  std::vector<GpuInfo> out;
  for (int d = 0; d < n; ++d) {
    GpuInfo g;
    g.ordinal = d;
    g.index = d;
    cudaDeviceProp p{};
    KILN_CUDA(cudaGetDeviceProperties(&p, d));
    g.name = p.name;
    g.sm_count = p.multiProcessorCount;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.total_mem = p.totalGlobalMem;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess) g.bus_id = bus;
    if (lib && !g.bus_id.empty()) {
      int rc = 0;
      if (nvml::Device h = lib->handle_by_bus_id(g.bus_id, &rc)) {
        g.nvml = h;
        if (int i = lib->index_of(h); i >= 0) g.index = i;
        lib->uuid(h, &g.uuid);
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

bool enable_peer(int from, int to) {
  int can = 0;
  KILN_CUDA(cudaDeviceCanAccessPeer(&can, from, to));
  if (!can) return false;
  KILN_CUDA(cudaSetDevice(from));
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clear the non-sticky error
    return true;
  }
  KILN_CUDA(e);
  return true;
}

}  // namespace kiln::worker::gpu

#endif  // KILN_HAVE_CUDA
