#include "worker/node_info.hpp"

#include <unistd.h>

#include <filesystem>

#include "worker/hw/ib_sysfs.hpp"
#include "worker/hw/pci_topology.hpp"

#if KILN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#if KILN_HAVE_NCCL
#include <nccl.h>
#endif

namespace kiln::worker {

namespace {
std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

NodeInfo gather_node_info() {
  NodeInfo n;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  n.host = host;
  MPI_Comm_rank(MPI_COMM_WORLD, &n.world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n.world_size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, n.world_rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &n.local_rank);
  MPI_Comm_size(local, &n.local_size);
  MPI_Comm_free(&local);
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi_version, &len);
  n.mpi_version = std::string(mpi_version, static_cast<std::size_t>(len));
  if (auto nl = n.mpi_version.find_first_of(",\n"); nl != std::string::npos) n.mpi_version.resize(nl);
#if KILN_HAVE_CUDA
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    n.gpu_skip_reason = std::string("no usable GPU: ") + cudaGetErrorString(err);
    count = 0;
  } else if (count == 0) {
    n.gpu_skip_reason = "no GPU visible to CUDA";
  }
  n.gpu_count = count;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess) n.gpu_models.push_back(p.name);
  }
  if (count > 0) {
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, n.local_rank % count) == cudaSuccess)
      if (auto b = topo::nearest_hca(bus_id, rdma::ib_root_from_env())) n.hca = b->hca;
  }
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) n.cuda_driver = cuda_version_string(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) n.cuda_runtime = cuda_version_string(v);
#else
  n.gpu_skip_reason = "kiln-worker was built without CUDA";
#endif
#if KILN_HAVE_NCCL
  int nv = 0;
  if (ncclGetVersion(&nv) == ncclSuccess)
    n.nccl_version = std::to_string(nv / 10000) + "." + std::to_string((nv % 10000) / 100) + "." + std::to_string(nv % 100);
#endif
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(rdma::ib_root_from_env(), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n.ib_device_count;
  return n;
}

}  // namespace kiln::worker
