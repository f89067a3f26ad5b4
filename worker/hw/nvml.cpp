#include "worker/hw/nvml.hpp"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstring>

namespace kiln::worker::gpu::nvml {

namespace {

// Structs of NVML's C ABI that cross the boundary (nvml.h, unchanged since NVML 10).
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct Memory {
  unsigned long long total, free, used;
};
// nvmlEventData_t as nvmlEventSetWait_v2 fills it.
struct EventData {
  Device device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
constexpr unsigned long long kEventXidCritical = 0x8;

using Set = void*;

// nvmlFieldValue_t (nvml.h): value is a union read by valueType.
struct FieldValue {
  unsigned field_id;
  unsigned scope_id;
  long long timestamp;
  long long latency_us;
  int value_type;  // 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 signed long long, 5 int, 6 ushort
  int ret;
  union {
    double d;
    unsigned u;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int i;
    unsigned short us;
  } value;
};
constexpr unsigned kFieldNvlinkDataTx = 138;
constexpr unsigned kFieldNvlinkDataRx = 139;
constexpr unsigned kScopeAllLinks = 0xFFFFFFFFu;

std::uint64_t field_u64(const FieldValue& f) {
  switch (f.value_type) {
    case 0: return f.value.d > 0 ? static_cast<std::uint64_t>(f.value.d) : 0;
    case 1: return f.value.u;
    case 2: return f.value.ul;
    case 3: return f.value.ull;
    case 4: return f.value.sll > 0 ? static_cast<std::uint64_t>(f.value.sll) : 0;
    case 5: return f.value.i > 0 ? static_cast<std::uint64_t>(f.value.i) : 0;
    default: return f.value.us;
  }
}

}  // namespace

// Function pointers, resolved once at open(); an absent optional symbol stays null.
struct Lib::Fns {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  int (*cuda_driver_version)(int*) = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*by_index)(unsigned, Device*) = nullptr;
  int (*by_bus_id)(const char*, Device*) = nullptr;
  int (*index)(Device, unsigned*) = nullptr;
  int (*name)(Device, char*, unsigned) = nullptr;
  int (*uuid)(Device, char*, unsigned) = nullptr;
  int (*serial)(Device, char*, unsigned) = nullptr;
  int (*pci)(Device, PciInfo*) = nullptr;
  int (*ecc_mode)(Device, int*, int*) = nullptr;
  int (*ecc_total)(Device, int, int, unsigned long long*) = nullptr;
  int (*retired)(Device, int, unsigned*, unsigned long long*) = nullptr;
  int (*retired_pending)(Device, int*) = nullptr;
  int (*remapped)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  int (*gen_cur)(Device, unsigned*) = nullptr;
  int (*gen_max)(Device, unsigned*) = nullptr;
  int (*width_cur)(Device, unsigned*) = nullptr;
  int (*width_max)(Device, unsigned*) = nullptr;
  int (*clock)(Device, int, unsigned*) = nullptr;
  int (*max_clock)(Device, int, unsigned*) = nullptr;
  int (*enforced_limit)(Device, unsigned*) = nullptr;
  int (*default_limit)(Device, unsigned*) = nullptr;
  int (*power)(Device, unsigned*) = nullptr;
  int (*temperature)(Device, int, unsigned*) = nullptr;
  int (*reasons)(Device, unsigned long long*) = nullptr;
  int (*persistence)(Device, int*) = nullptr;
  int (*mig)(Device, unsigned*, unsigned*) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
  int (*nvlink_state)(Device, unsigned, int*) = nullptr;
  int (*pcie_throughput)(Device, int, unsigned*) = nullptr;
  int (*field_values)(Device, int, FieldValue*) = nullptr;
  int (*set_create)(Set*) = nullptr;
  int (*register_events)(Device, unsigned long long, Set) = nullptr;
  int (*set_wait)(Set, EventData*, unsigned) = nullptr;
  int (*set_free)(Set) = nullptr;
};

namespace {
template <class F>
void bind(void* dl, F& fn, const char* name, const char* fallback = nullptr) {
  void* p = dlsym(dl, name);
  if (!p && fallback) p = dlsym(dl, fallback);
  fn = reinterpret_cast<F>(p);
}
}  // namespace

std::shared_ptr<Lib> Lib::open(std::string* why) {
  void* dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    if (why) *why = std::string("NVML not loadable: ") + dlerror();
    return nullptr;
  }
  std::shared_ptr<Lib> lib(new Lib());
  lib->dl_ = dl;
  lib->f_ = std::make_unique<Fns>();
  Fns& f = *lib->f_;
  bind(dl, f.init, "nvmlInit_v2");
  bind(dl, f.shutdown, "nvmlShutdown");
  bind(dl, f.error_string, "nvmlErrorString");
  bind(dl, f.driver_version, "nvmlSystemGetDriverVersion");
  bind(dl, f.cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2",
       "nvmlSystemGetCudaDriverVersion");
  bind(dl, f.count, "nvmlDeviceGetCount_v2");
  bind(dl, f.by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(dl, f.by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(dl, f.index, "nvmlDeviceGetIndex");
  bind(dl, f.name, "nvmlDeviceGetName");
  bind(dl, f.uuid, "nvmlDeviceGetUUID");
  bind(dl, f.serial, "nvmlDeviceGetSerial");
  bind(dl, f.pci, "nvmlDeviceGetPciInfo_v3");
  bind(dl, f.ecc_mode, "nvmlDeviceGetEccMode");
  bind(dl, f.ecc_total, "nvmlDeviceGetTotalEccErrors");
  bind(dl, f.retired, "nvmlDeviceGetRetiredPages");
  bind(dl, f.retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  bind(dl, f.remapped, "nvmlDeviceGetRemappedRows");
  bind(dl, f.gen_cur, "nvmlDeviceGetCurrPcieLinkGeneration");
  bind(dl, f.gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
  bind(dl, f.width_cur, "nvmlDeviceGetCurrPcieLinkWidth");
  bind(dl, f.width_max, "nvmlDeviceGetMaxPcieLinkWidth");
  bind(dl, f.clock, "nvmlDeviceGetClockInfo");
  bind(dl, f.max_clock, "nvmlDeviceGetMaxClockInfo");
  bind(dl, f.enforced_limit, "nvmlDeviceGetEnforcedPowerLimit");
  bind(dl, f.default_limit, "nvmlDeviceGetPowerManagementDefaultLimit");
  bind(dl, f.power, "nvmlDeviceGetPowerUsage");
  bind(dl, f.temperature, "nvmlDeviceGetTemperature");
  // Renamed in r535; the old name stays exported for compatibility.
  bind(dl, f.reasons, "nvmlDeviceGetCurrentClocksEventReasons",
       "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(dl, f.persistence, "nvmlDeviceGetPersistenceMode");
  bind(dl, f.mig, "nvmlDeviceGetMigMode");
  bind(dl, f.memory, "nvmlDeviceGetMemoryInfo");
  bind(dl, f.nvlink_state, "nvmlDeviceGetNvLinkState");
  bind(dl, f.pcie_throughput, "nvmlDeviceGetPcieThroughput");
  bind(dl, f.field_values, "nvmlDeviceGetFieldValues");
  bind(dl, f.set_create, "nvmlEventSetCreate");
  bind(dl, f.register_events, "nvmlDeviceRegisterEvents");
  bind(dl, f.set_wait, "nvmlEventSetWait_v2");
  bind(dl, f.set_free, "nvmlEventSetFree");
  if (!f.init || !f.count || !f.by_index) {
    if (why) *why = "NVML library lacks nvmlInit_v2/nvmlDeviceGetCount_v2";
    f.shutdown = nullptr;  // never initialised
    return nullptr;  // ~Lib closes the handle
  }
  const int rc = f.init();
  if (rc != kSuccess) {
    if (why) *why = "nvmlInit failed: " + lib->error(rc);
    f.shutdown = nullptr;  // nothing to shut down
    return nullptr;
  }
  return lib;
}

Lib::~Lib() {
  if (f_ && f_->shutdown) f_->shutdown();
  if (dl_) dlclose(dl_);
}

std::string Lib::error(int ret) const {
  if (f_ && f_->error_string) {
    if (const char* s = f_->error_string(ret)) return s;
  }
  return "NVML error " + std::to_string(ret);
}

#define KILN_NVML_CALL(fn, ...) (f_->fn ? f_->fn(__VA_ARGS__) : kErrFunctionNotFound)

std::string Lib::driver_version() const {
  char buf[96] = {};
  return KILN_NVML_CALL(driver_version, buf, sizeof buf) == kSuccess ? buf : "";
}

int Lib::cuda_driver_version() const {
  int v = 0;
  return KILN_NVML_CALL(cuda_driver_version, &v) == kSuccess ? v : 0;
}

int Lib::count(int* ret) const {
  unsigned n = 0;
  const int rc = f_->count(&n);
  if (ret) *ret = rc;
  return rc == kSuccess ? static_cast<int>(n) : 0;
}

Device Lib::handle(unsigned index, int* ret) const {
  Device d = nullptr;
  *ret = f_->by_index(index, &d);
  return *ret == kSuccess ? d : nullptr;
}

Device Lib::handle_by_bus_id(const std::string& bus_id, int* ret) const {
  Device d = nullptr;
  *ret = KILN_NVML_CALL(by_bus_id, bus_id.c_str(), &d);
  return *ret == kSuccess ? d : nullptr;
}

int Lib::index_of(Device d) const {
  unsigned i = 0;
  return KILN_NVML_CALL(index, d, &i) == kSuccess ? static_cast<int>(i) : -1;
}

namespace {
template <class F>
int get_string(F fn, Device d, std::string* out) {
  if (!fn) return kErrFunctionNotFound;
  char buf[256] = {};
  const int rc = fn(d, buf, sizeof buf);
  if (rc == kSuccess) *out = buf;
  return rc;
}
}  // namespace

int Lib::name(Device d, std::string* out) const { return get_string(f_->name, d, out); }
int Lib::uuid(Device d, std::string* out) const { return get_string(f_->uuid, d, out); }
int Lib::serial(Device d, std::string* out) const { return get_string(f_->serial, d, out); }

int Lib::bus_id(Device d, std::string* out) const {
  PciInfo p{};
  const int rc = KILN_NVML_CALL(pci, d, &p);
  if (rc == kSuccess) *out = std::string(p.bus_id, strnlen(p.bus_id, sizeof p.bus_id));
  return rc;
}

int Lib::ecc_mode(Device d, bool* current, bool* pending) const {
  int c = 0, p = 0;
  const int rc = KILN_NVML_CALL(ecc_mode, d, &c, &p);
  *current = c != 0;
  *pending = p != 0;
  return rc;
}

int Lib::ecc_count(Device d, int error_type, int counter, std::uint64_t* out) const {
  unsigned long long v = 0;
  const int rc = KILN_NVML_CALL(ecc_total, d, error_type, counter, &v);
  *out = v;
  return rc;
}

int Lib::retired_pages(Device d, int cause, unsigned* count) const {
  // A zero-sized buffer asks for the count only; NVML answers INSUFFICIENT_SIZE when pages exist.
  unsigned n = 0;
  int rc = KILN_NVML_CALL(retired, d, cause, &n, nullptr);
  if (rc == kErrInsufficientSize) rc = kSuccess;
  *count = n;
  return rc;
}

int Lib::retired_pages_pending(Device d, bool* pending) const {
  int p = 0;
  const int rc = KILN_NVML_CALL(retired_pending, d, &p);
  *pending = p != 0;
  return rc;
}

int Lib::remapped_rows(Device d, unsigned* corr, unsigned* unc, bool* pending, bool* failed) const {
  unsigned p = 0, f = 0;
  const int rc = KILN_NVML_CALL(remapped, d, corr, unc, &p, &f);
  *pending = p != 0;
  *failed = f != 0;
  return rc;
}

int Lib::pcie_gen(Device d, unsigned* cur, unsigned* max) const {
  const int rc = KILN_NVML_CALL(gen_cur, d, cur);
  return rc != kSuccess ? rc : KILN_NVML_CALL(gen_max, d, max);
}

int Lib::pcie_width(Device d, unsigned* cur, unsigned* max) const {
  const int rc = KILN_NVML_CALL(width_cur, d, cur);
  return rc != kSuccess ? rc : KILN_NVML_CALL(width_max, d, max);
}

int Lib::clock(Device d, int clock, unsigned* cur_mhz, unsigned* max_mhz) const {
  const int rc = KILN_NVML_CALL(clock, d, clock, cur_mhz);
  if (rc != kSuccess || !max_mhz) return rc;
  return KILN_NVML_CALL(max_clock, d, clock, max_mhz);
}

int Lib::power_limits(Device d, double* enforced_w, double* default_w) const {
  unsigned e = 0, def = 0;
  int rc = KILN_NVML_CALL(enforced_limit, d, &e);
  if (rc != kSuccess) return rc;
  rc = KILN_NVML_CALL(default_limit, d, &def);
  *enforced_w = e / 1000.0;
  *default_w = def / 1000.0;
  return rc;
}

int Lib::power_w(Device d, double* out) const {
  unsigned mw = 0;
  const int rc = KILN_NVML_CALL(power, d, &mw);
  *out = mw / 1000.0;
  return rc;
}

int Lib::temperature_c(Device d, unsigned* out) const {
  return KILN_NVML_CALL(temperature, d, /*NVML_TEMPERATURE_GPU*/ 0, out);
}

int Lib::throttle_reasons(Device d, std::uint64_t* out) const {
  unsigned long long v = 0;
  const int rc = KILN_NVML_CALL(reasons, d, &v);
  *out = v;
  return rc;
}

int Lib::persistence(Device d, bool* on) const {
  int v = 0;
  const int rc = KILN_NVML_CALL(persistence, d, &v);
  *on = v != 0;
  return rc;
}

int Lib::mig_mode(Device d, bool* current, bool* pending) const {
  unsigned c = 0, p = 0;
  const int rc = KILN_NVML_CALL(mig, d, &c, &p);
  *current = c != 0;
  *pending = p != 0;
  return rc;
}

int Lib::memory(Device d, std::uint64_t* total, std::uint64_t* used) const {
  Memory m{};
  const int rc = KILN_NVML_CALL(memory, d, &m);
  *total = m.total;
  *used = m.used;
  return rc;
}

int Lib::nvlink_state(Device d, unsigned link, bool* active) const {
  int on = 0;  // nvmlEnableState_t: 0 disabled, 1 enabled
  const int rc = KILN_NVML_CALL(nvlink_state, d, link, &on);
  *active = rc == kSuccess && on == 1;
  return rc;
}

int Lib::pcie_throughput_kbps(Device d, int direction, unsigned* out) const {
  return KILN_NVML_CALL(pcie_throughput, d, direction, out);
}

int Lib::nvlink_data_kib(Device d, std::uint64_t* tx, std::uint64_t* rx) const {
  FieldValue v[2] = {};
  v[0].field_id = kFieldNvlinkDataTx;
  v[1].field_id = kFieldNvlinkDataRx;
  v[0].scope_id = v[1].scope_id = kScopeAllLinks;
  int rc = KILN_NVML_CALL(field_values, d, 2, v);
  if (rc == kSuccess) rc = v[0].ret != kSuccess ? v[0].ret : v[1].ret;
  if (rc != kSuccess) return rc;
  *tx = field_u64(v[0]);
  *rx = field_u64(v[1]);
  return rc;
}

NvlinkCount count_nvlinks(const std::function<int(unsigned, bool*)>& state) {
  NvlinkCount n;
  for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
    bool on = false;
    const int rc = state(link, &on);
    if (rc == kErrNotSupported || rc == kErrInvalidArgument) continue;  // no such link
    if (rc != kSuccess) {
      n.error = rc;
      return n;
    }
    if (on) ++n.active;
    else n.inactive.push_back(static_cast<int>(link));
  }
  return n;
}

int Lib::event_set_create(void** set) const { return KILN_NVML_CALL(set_create, set); }

int Lib::register_xid(Device d, void* set) const {
  return KILN_NVML_CALL(register_events, d, kEventXidCritical, set);
}

int Lib::event_wait(void* set, unsigned timeout_ms, Event* out) const {
  EventData e{};
  const int rc = KILN_NVML_CALL(set_wait, set, &e, timeout_ms);
  if (rc == kSuccess) *out = {e.device, e.event_type, e.event_data};
  return rc;
}

void Lib::event_set_free(void* set) const {
  if (f_->set_free && set) f_->set_free(set);
}

#undef KILN_NVML_CALL

std::shared_ptr<Lib> shared(std::string* why) {
  static std::mutex mu;
  static std::weak_ptr<Lib> cached;
  std::lock_guard<std::mutex> lock(mu);
  if (auto lib = cached.lock()) return lib;
  auto lib = Lib::open(why);
  cached = lib;
  return lib;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

XidWatcher& XidWatcher::instance() {
  static XidWatcher w;
  return w;
}

bool XidWatcher::start(std::shared_ptr<Lib> lib, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return true;
  void* set = nullptr;
  int rc = lib->event_set_create(&set);
  if (rc != kSuccess) {
    if (why) *why = "nvmlEventSetCreate: " + lib->error(rc);
    return false;
  }
  int registered = 0;
  std::string last;
  for (int i = 0, n = lib->count(); i < n; ++i) {
    int hr = 0;
    Device d = lib->handle(static_cast<unsigned>(i), &hr);
    if (!d) continue;
    rc = lib->register_xid(d, set);
    if (rc == kSuccess) ++registered;
    else last = lib->error(rc);
  }
  if (registered == 0) {
    lib->event_set_free(set);
    if (why) *why = "no GPU accepts XID event registration" + (last.empty() ? "" : ": " + last);
    return false;
  }
  lib_ = std::move(lib);
  set_ = set;
  stop_ = false;
  running_ = true;
  started_at_ = unix_now();
  thread_ = std::thread([this] { loop(); });
  return true;
}

void XidWatcher::loop() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    Lib::Event e{};
    // A short wait keeps shutdown prompt; NVML queues events between waits.
    const int rc = lib_->event_wait(set_, 500, &e);
    if (rc == kSuccess) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back({lib_->index_of(e.device), e.data, unix_now()});
    } else if (rc != kErrTimeout) {
      // GPU_IS_LOST and friends: do not spin; the health test reports the GPU itself.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

std::vector<Xid> XidWatcher::since(double since_unix) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Xid> out;
  for (const auto& x : events_)
    if (x.unix_time >= since_unix) out.push_back(x);
  return out;
}

bool XidWatcher::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

double XidWatcher::started_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_at_;
}

XidWatcher::~XidWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (lib_) lib_->event_set_free(set_);
}

}  // namespace kiln::worker::gpu::nvml
