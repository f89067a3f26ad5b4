#include "common/hostlist.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

namespace kiln::hostlist {
namespace {

[[noreturn]] void fail(const std::string& text, const std::string& why) {
  throw HostlistError("bad hostlist '" + text + "': " + why);
}

bool valid_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// Splits at top-level commas (commas inside brackets belong to ranges).
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') {
      if (depth > 0) fail(s, "nested '['");
      ++depth;
    } else if (c == ']') {
      if (depth == 0) fail(s, "unmatched ']'");
      --depth;
    }
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) fail(s, "unclosed '['");
  parts.push_back(cur);
  return parts;
}

std::vector<std::string> expand_ranges(const std::string& whole, const std::string& body) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= body.size()) {
    auto comma = body.find(',', start);
    std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) fail(whole, "empty range");
    auto dash = item.find('-');
    std::string lo = item.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    auto digits = [](const std::string& t) {
      return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    if (!digits(lo) || !digits(hi)) fail(whole, "range '" + item + "' is not numeric");
    if (lo.size() > 18 || hi.size() > 18) fail(whole, "number too long in '" + item + "'");
    const long long a = std::stoll(lo), b = std::stoll(hi);
    if (b < a) fail(whole, "range '" + item + "' runs backwards");
    const std::size_t width = lo.size();
    if (b - a > 10'000'000) fail(whole, "range '" + item + "' is too large");
    for (long long v = a; v <= b; ++v) {
      std::string num = std::to_string(v);
      if (num.size() < width) num.insert(0, width - num.size(), '0');
      out.push_back(num);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> expand(const std::string& hostlist, std::size_t max_hosts) {
  std::string text;
  for (char c : hostlist)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  if (text.empty()) fail(hostlist, "empty");
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  for (const auto& part : split_top(text)) {
    if (part.empty()) fail(hostlist, "empty name between commas");
    // Cartesian product over bracket groups, left to right.
    std::vector<std::string> acc{""};
    std::size_t i = 0;
    while (i < part.size()) {
      if (part[i] == '[') {
        auto close = part.find(']', i);
        auto nums = expand_ranges(hostlist, part.substr(i + 1, close - i - 1));
        std::vector<std::string> next;
        if (acc.size() * nums.size() > max_hosts) fail(hostlist, "expands to too many hosts");
        next.reserve(acc.size() * nums.size());
        for (const auto& a : acc)
          for (const auto& n : nums) next.push_back(a + n);
        acc = std::move(next);
        i = close + 1;
      } else {
        if (!valid_name_char(part[i])) fail(hostlist, std::string("invalid character '") + part[i] + "'");
        for (auto& a : acc) a += part[i];
        ++i;
      }
    }
    for (auto& h : acc) {
      if (seen.insert(h).second) hosts.push_back(std::move(h));
      if (hosts.size() > max_hosts) fail(hostlist, "expands to too many hosts");
    }
  }
  return hosts;
}

std::string compress(const std::vector<std::string>& hosts) {
  struct Key {
    std::string prefix, suffix;
    std::size_t width;
    bool operator<(const Key& o) const {
      return std::tie(prefix, suffix, width) < std::tie(o.prefix, o.suffix, o.width);
    }
  };
  std::vector<Key> order;
  std::map<Key, std::set<long long>> groups;
  std::map<Key, std::size_t> widths;
  std::vector<std::string> plain_order;  // names without digits, in order, as their own "groups"
  std::vector<std::pair<bool, std::size_t>> sequence;  // (is_group, index) in first-seen order
  std::set<std::string> plain_seen;
  for (const auto& h : hosts) {
    // Last run of digits in the name.
    std::size_t end = h.size();
    while (end > 0 && !std::isdigit(static_cast<unsigned char>(h[end - 1]))) --end;
    std::size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(h[begin - 1]))) --begin;
    if (end == 0 || end - begin > 18) {
      if (plain_seen.insert(h).second) {
        sequence.emplace_back(false, plain_order.size());
        plain_order.push_back(h);
      }
      continue;
    }
    const std::string digits = h.substr(begin, end - begin);
    // Numbers are padded to the width of the zero-led numbers of their prefix ("001" -> 3), so
    // gpu099 and gpu100 stay in one range.
    Key k{h.substr(0, begin), h.substr(end), 0};
    if (!groups.count(k)) {
      sequence.emplace_back(true, order.size());
      order.push_back(k);
    }
    groups[k].insert(std::stoll(digits));
    if (digits.size() > 1 && digits[0] == '0') widths[k] = std::max(widths[k], digits.size());
  }
  auto pad = [](long long v, std::size_t width) {
    std::string s = std::to_string(v);
    if (s.size() < width) s.insert(0, width - s.size(), '0');
    return s;
  };
  std::string out;
  for (auto [is_group, idx] : sequence) {
    if (!out.empty()) out += ',';
    if (!is_group) {
      out += plain_order[idx];
      continue;
    }
    Key k = order[idx];
    const auto& nums = groups[k];
    k.width = widths[k];
    if (nums.size() == 1) {
      out += k.prefix + pad(*nums.begin(), k.width) + k.suffix;
      continue;
    }
    std::string body;
    auto it = nums.begin();
    while (it != nums.end()) {
      long long a = *it, b = a;
      auto next = std::next(it);
      while (next != nums.end() && *next == b + 1) {
        b = *next;
        ++next;
      }
      if (!body.empty()) body += ',';
      body += pad(a, k.width);
      if (b != a) body += "-" + pad(b, k.width);
      it = next;
    }
    out += k.prefix + "[" + body + "]" + k.suffix;
  }
  return out;
}

}  // namespace kiln::hostlist
