// Where an RDMA test's buffers live: host memory or GPU memory (GPUDirect RDMA), behind one
// interface so every rdma.* test runs on either (perftest's memory_ctx idea).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace kiln::worker::rdma {

class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  virtual void* data() const = 0;
  virtual std::size_t size() const = 0;
  // A dma-buf file descriptor for the range, when the backend can export one (GPU memory through
  // the CUDA driver); -1 otherwise. Registration then uses ibv_reg_dmabuf_mr instead of relying
  // on the nvidia-peermem kernel module.
  virtual int dmabuf_fd() const { return -1; }
  virtual std::string kind() const = 0;
};

// kind: "host" or "cuda". `device` is the CUDA device for "cuda". Throws with the reason when the
// backend is not available in this build or on this node.
std::unique_ptr<MemoryRegion> allocate(const std::string& kind, std::size_t bytes, int device);

}  // namespace kiln::worker::rdma
