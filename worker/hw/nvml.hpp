// NVML, loaded at run time with dlopen("libnvidia-ml.so.1") so the worker starts on a node with
// no driver (and builds on a machine with no nvml.h). Only the entry points kiln reads are
// declared, from NVML's documented C ABI; a missing optional symbol reads as NOT_SUPPORTED.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kiln::worker::gpu::nvml {

// nvmlReturn_t values used here (nvml.h).
enum Ret : int {
  kSuccess = 0,
  kErrUninitialized = 1,
  kErrInvalidArgument = 2,
  kErrNotSupported = 3,
  kErrNoPermission = 4,
  kErrNotFound = 6,
  kErrInsufficientSize = 7,
  kErrDriverNotLoaded = 9,
  kErrTimeout = 10,
  kErrFunctionNotFound = 13,
  kErrGpuIsLost = 15,
  kErrResetRequired = 16,
  kErrUnknown = 999,
};

using Device = struct nvmlDevice_st*;

// A loaded, initialised NVML. Shared by the tests of one worker process; thread-safe as NVML is.
class Lib {
 public:
  // nullptr with *why set when the library or the driver is absent.
  static std::shared_ptr<Lib> open(std::string* why);
  ~Lib();
  Lib(const Lib&) = delete;
  Lib& operator=(const Lib&) = delete;

  std::string error(int ret) const;
  std::string driver_version() const;  // "" when unknown
  int cuda_driver_version() const;     // 13000 for 13.0, 0 when unknown
  int count(int* ret = nullptr) const;
  Device handle(unsigned index, int* ret) const;
  Device handle_by_bus_id(const std::string& bus_id, int* ret) const;
  int index_of(Device d) const;  // -1 when unknown

  // Every getter returns an NVML return code and fills its outputs on kSuccess.
  int name(Device d, std::string* out) const;
  int uuid(Device d, std::string* out) const;
  int serial(Device d, std::string* out) const;
  int bus_id(Device d, std::string* out) const;
  int ecc_mode(Device d, bool* current, bool* pending) const;
  // error_type: 0 corrected, 1 uncorrected; counter: 0 volatile, 1 aggregate.
  int ecc_count(Device d, int error_type, int counter, std::uint64_t* out) const;
  // cause: 0 multiple single-bit errors, 1 double-bit error.
  int retired_pages(Device d, int cause, unsigned* count) const;
  int retired_pages_pending(Device d, bool* pending) const;
  int remapped_rows(Device d, unsigned* corr, unsigned* unc, bool* pending, bool* failed) const;
  int pcie_gen(Device d, unsigned* cur, unsigned* max) const;
  int pcie_width(Device d, unsigned* cur, unsigned* max) const;
  // clock: 0 graphics, 1 SM, 2 memory.
  int clock(Device d, int clock, unsigned* cur_mhz, unsigned* max_mhz) const;
  int power_limits(Device d, double* enforced_w, double* default_w) const;
  int power_w(Device d, double* out) const;
  int temperature_c(Device d, unsigned* out) const;
  int throttle_reasons(Device d, std::uint64_t* out) const;
  int persistence(Device d, bool* on) const;
  int mig_mode(Device d, bool* current, bool* pending) const;
  int memory(Device d, std::uint64_t* total, std::uint64_t* used) const;
  // PCIe throughput over NVML's last 20 ms, KB/s (nvmlDeviceGetPcieThroughput); direction 0 tx, 1 rx.
  int pcie_throughput_kbps(Device d, int direction, unsigned* out) const;
  // NVLink data sent and received over all links since the driver loaded, KiB (field values 138,
  // 139: NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, GPU-wide). A rate needs two readings.
  int nvlink_data_kib(Device d, std::uint64_t* tx, std::uint64_t* rx) const;
  // Whether NVLink `link` of the GPU is up (nvmlDeviceGetNvLinkState).
  int nvlink_state(Device d, unsigned link, bool* active) const;

  // XID events (critical errors) of all GPUs, for XidWatcher.
  struct Event {
    Device device;
    std::uint64_t type;
    std::uint64_t data;  // the XID number for XID events
  };
  int event_set_create(void** set) const;
  int register_xid(Device d, void* set) const;
  int event_wait(void* set, unsigned timeout_ms, Event* out) const;
  void event_set_free(void* set) const;

 private:
  Lib() = default;
  struct Fns;
  void* dl_ = nullptr;
  std::unique_ptr<Fns> f_;
};

// NVML_NVLINK_MAX_LINKS: links 0..17 (18 on Hopper and Blackwell).
inline constexpr unsigned kNvlinkMaxLinks = 18;

// A GPU's NVLink links as NVML reports them, link by link.
struct NvlinkCount {
  int active = 0;
  std::vector<int> inactive;  // links the GPU has whose state is down
  int error = kSuccess;       // set when a link could not be read: the count is then unknown
};

// Asks `state(link, &active)` for links 0..kNvlinkMaxLinks-1. NOT_SUPPORTED and INVALID_ARGUMENT
// mean the GPU has no such link (a PCIe GPU has none); any other error makes the count unknown.
NvlinkCount count_nvlinks(const std::function<int(unsigned, bool*)>& state);

// The process's NVML, opened on first use (NVML counts its own initialisations, one is enough).
// nullptr with *why when there is no NVML; a missing NVML costs telemetry, never a GPU test.
std::shared_ptr<Lib> shared(std::string* why = nullptr);

// One XID seen while the watcher ran.
struct Xid {
  int gpu_index;
  std::uint64_t xid;
  double unix_time;
};

// Collects XID critical-error events of every GPU in the background for the life of the worker
// process, so a gpu.health run at the end of a campaign reports what happened during it. NVML
// delivers events only to a set registered before they occur, hence one process-wide watcher,
// started by the first GPU test that runs (this is the one piece of process state the GPU tests
// keep, and it is owned here rather than a mutable global in the tests).
class XidWatcher {
 public:
  static XidWatcher& instance();
  // Starts watching (idempotent). Returns false with *why when NVML cannot deliver XID events.
  bool start(std::shared_ptr<Lib> lib, std::string* why);
  // Events seen since start, at or after unix time `since`.
  std::vector<Xid> since(double since_unix) const;
  bool running() const;
  double started_at() const;
  ~XidWatcher();

 private:
  XidWatcher() = default;
  void loop();
  mutable std::mutex mu_;
  std::shared_ptr<Lib> lib_;
  void* set_ = nullptr;
  std::thread thread_;
  bool stop_ = false;
  bool running_ = false;
  double started_at_ = 0.0;
  std::vector<Xid> events_;
};

double unix_now();

}  // namespace kiln::worker::gpu::nvml
