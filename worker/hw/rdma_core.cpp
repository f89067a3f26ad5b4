#include "worker/hw/rdma_core.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace kiln::worker::rdma {

namespace {

bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The path of the libibverbs.so.1 the dynamic loader resolves, symlinks followed; "" with *why.
std::string loaded_libibverbs(std::string* why) {
  void* h = ::dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    *why = std::string("libibverbs.so.1 not loadable") + (e ? std::string(" (") + e + ")" : "");
    return "";
  }
  std::string path;
  link_map* lm = nullptr;
  if (::dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) path = lm->l_name;
  ::dlclose(h);
  if (path.empty()) {
    *why = "libibverbs.so.1 loaded, but the loader does not say from where";
    return "";
  }
  std::error_code ec;
  const auto real = std::filesystem::canonical(path, ec);
  return ec ? path : real.string();
}

}  // namespace

std::string rdma_core_from_soname(std::string_view file_name) {
  constexpr std::string_view stem = "libibverbs.so.1.";
  const auto at = file_name.rfind(stem);
  if (at == std::string_view::npos) return "";
  auto rest = file_name.substr(at + stem.size());  // "14.44.0"
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || !std::all_of(rest.begin(), rest.begin() + dot, digit)) return "";
  rest = rest.substr(dot + 1);  // "44.0"
  // The legacy libibverbs (before rdma-core) was libibverbs.so.1.0.0: a bare number is no version.
  if (rest.empty() || !digit(rest.front()) || std::all_of(rest.begin(), rest.end(), digit)) return "";
  return std::string(rest);
}

std::string rdma_core_from_dpkg(std::string_view status_text) {
  std::string found_rdma, found_verbs;
  std::string package, version;
  bool installed = false;
  auto finish = [&] {
    if (installed && !version.empty()) {
      if (package == "rdma-core") found_rdma = version;
      else if (package == "libibverbs1") found_verbs = version;
    }
    package.clear();
    version.clear();
    installed = false;
  };
  std::istringstream in{std::string(status_text)};
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty()) {
      finish();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') continue;  // a continuation line
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    const std::string value(trim(std::string_view(line).substr(colon + 1)));
    if (key == "Package") package = value;
    else if (key == "Version") version = value;
    else if (key == "Status") installed = value.ends_with(" installed");
  }
  finish();
  std::string v = !found_rdma.empty() ? found_rdma : found_verbs;
  if (const auto epoch = v.find(':'); epoch != std::string::npos) v = v.substr(epoch + 1);
  if (const auto rev = v.rfind('-'); rev != std::string::npos) v.resize(rev);
  return v;
}

RdmaCoreVersion read_rdma_core(const std::filesystem::path& dpkg_status) {
  std::string why;
  const std::string lib = loaded_libibverbs(&why);
  if (!lib.empty()) {
    const std::string v = rdma_core_from_soname(std::filesystem::path(lib).filename().string());
    if (!v.empty()) return {v, lib};
    why = lib + " names no rdma-core version";
  }
  std::ifstream in(dpkg_status);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string v = rdma_core_from_dpkg(ss.str());
    if (!v.empty()) return {v, "dpkg: " + dpkg_status.string()};
    return {"", why + "; no rdma-core or libibverbs1 package installed (" + dpkg_status.string() + ")"};
  }
  return {"", why + "; no " + dpkg_status.string()};
}

}  // namespace kiln::worker::rdma
