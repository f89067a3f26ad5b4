#include "worker/checks/rdma/memory.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#if KILN_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace kiln::worker::rdma {
namespace {

class HostRegion final : public MemoryRegion {
 public:
  explicit HostRegion(std::size_t bytes) : size_(bytes) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (posix_memalign(&ptr_, page, (bytes + page - 1) / page * page) != 0) throw std::bad_alloc();
    std::memset(ptr_, 0x5a, bytes);  // touched, so registration pins real pages
  }
  ~HostRegion() override { std::free(ptr_); }
  void* data() const override { return ptr_; }
  std::size_t size() const override { return size_; }
  std::string kind() const override { return "host"; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

#if KILN_HAVE_CUDA
// cuMemGetHandleForAddressRange is a driver API call; it is looked up through the runtime so the
// worker does not link libcuda directly.
using GetHandleFn = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);

class CudaRegion final : public MemoryRegion {
 public:
  CudaRegion(std::size_t bytes, int device) : size_(bytes) {
    if (cudaSetDevice(device) != cudaSuccess) throw std::runtime_error("cudaSetDevice failed for GPU memory");
    if (cudaMalloc(&ptr_, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc failed for GPU memory");
    cudaMemset(ptr_, 0x5a, bytes);
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn, 11070, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess && fn) {
      int fd = -1;
      auto get = reinterpret_cast<GetHandleFn>(fn);
      if (get(&fd, reinterpret_cast<CUdeviceptr>(ptr_), bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) == CUDA_SUCCESS)
        fd_ = fd;
    }
  }
  ~CudaRegion() override {
    if (fd_ >= 0) ::close(fd_);
    cudaFree(ptr_);
  }
  void* data() const override { return ptr_; }
  std::size_t size() const override { return size_; }
  int dmabuf_fd() const override { return fd_; }
  std::string kind() const override { return "cuda"; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
};
#endif

}  // namespace

std::unique_ptr<MemoryRegion> allocate(const std::string& kind, std::size_t bytes, int device) {
  if (kind == "host") return std::make_unique<HostRegion>(bytes);
  if (kind == "cuda") {
#if KILN_HAVE_CUDA
    return std::make_unique<CudaRegion>(bytes, device);
#else
    (void)device;
    throw std::runtime_error("GPU memory asked for, but kiln-worker was built without CUDA");
#endif
  }
  throw std::invalid_argument("memory must be host or cuda, not '" + kind + "'");
}

}  // namespace kiln::worker::rdma
