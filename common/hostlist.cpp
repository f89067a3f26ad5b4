#include "common/hostlist.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

namespace kiln::hostlist {
namespace {

using u64 = std::uint64_t;
constexpr u64 kSaturated = std::numeric_limits<u64>::max();
constexpr std::size_t kMaxDigits = 18;  // every number fits an int64, and so does hi - lo + 1

// One bracket item: "lo-hi" or "n", zero-padded to the width of lo.
struct Range {
  u64 lo = 0, hi = 0;
  std::size_t width = 0;
};
// A piece of one name: literal text, or a bracket group (ranges not empty).
struct Segment {
  std::string text;
  std::vector<Range> ranges;
  bool is_group() const { return !ranges.empty(); }
};
// One top-level, comma-separated name: its pieces, left to right.
using Pattern = std::vector<Segment>;

std::string excerpt(const std::string& s) { return s.size() > 80 ? s.substr(0, 80) + "..." : s; }

[[noreturn]] void fail(const std::string& text, const std::string& why) {
  throw HostlistError("bad hostlist '" + excerpt(text) + "': " + why);
}

u64 sat_add(u64 a, u64 b) { return a > kSaturated - b ? kSaturated : a + b; }
u64 sat_mul(u64 a, u64 b) { return a != 0 && b > kSaturated / a ? kSaturated : a * b; }

bool valid_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view t) { return !t.empty() && std::all_of(t.begin(), t.end(), is_digit); }

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

Range parse_range(const std::string& whole, const std::string& item) {
  if (item.empty()) fail(whole, "empty range");
  const auto dash = item.find('-');
  const std::string lo = item.substr(0, dash);
  const std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
  if (!all_digits(lo) || !all_digits(hi)) fail(whole, "range '" + excerpt(item) + "' is not numeric");
  if (lo.size() > kMaxDigits || hi.size() > kMaxDigits) fail(whole, "number too long in '" + excerpt(item) + "'");
  Range r{std::stoull(lo), std::stoull(hi), lo.size()};
  if (r.hi < r.lo) fail(whole, "range '" + item + "' runs backwards");
  return r;
}

// The items of one bracket group, "001-004,010" (no brackets: split_top has checked them).
std::vector<Range> parse_group(const std::string& whole, const std::string& body) {
  std::vector<Range> ranges;
  std::size_t start = 0;
  for (;;) {
    const auto comma = body.find(',', start);
    ranges.push_back(parse_range(whole, body.substr(start, comma == std::string::npos ? comma : comma - start)));
    if (comma == std::string::npos) return ranges;
    start = comma + 1;
  }
}

Pattern parse_pattern(const std::string& whole, const std::string& part) {
  Pattern p;
  std::size_t i = 0;
  while (i < part.size()) {
    if (part[i] == '[') {
      const auto close = part.find(']', i);  // split_top has checked that it is there
      p.push_back(Segment{"", parse_group(whole, part.substr(i + 1, close - i - 1))});
      i = close + 1;
      continue;
    }
    if (!valid_name_char(part[i])) fail(whole, std::string("invalid character '") + part[i] + "'");
    if (p.empty() || p.back().is_group()) p.emplace_back();
    p.back().text += part[i++];
  }
  return p;
}

std::size_t digit_count(u64 v) { return std::to_string(v).size(); }

// The longest name the pattern can produce.
std::size_t longest_name(const Pattern& p) {
  std::size_t n = 0;
  for (const auto& s : p) {
    std::size_t w = s.text.size();
    for (const auto& r : s.ranges) w = std::max({w, r.width, digit_count(r.hi)});
    n += w;
  }
  return n;
}

u64 count_pattern(const Pattern& p) {
  u64 n = 1;
  for (const auto& s : p) {
    u64 in_group = 0;
    for (const auto& r : s.ranges) in_group = sat_add(in_group, r.hi - r.lo + 1);
    if (s.is_group()) n = sat_mul(n, in_group);
  }
  return n;
}

// Checks the whole syntax; allocates in proportion to the text, never to the hosts it names.
std::vector<Pattern> parse(const std::string& hostlist) {
  if (hostlist.size() > kMaxChars)
    fail(hostlist, "is " + std::to_string(hostlist.size()) + " characters long, more than the limit of " +
                       std::to_string(kMaxChars));
  std::string text;
  for (char c : hostlist)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  if (text.empty()) fail(hostlist, "empty");
  std::vector<Pattern> patterns;
  for (const auto& part : split_top(text)) {
    if (part.empty()) fail(hostlist, "empty name between commas");
    patterns.push_back(parse_pattern(hostlist, part));
    if (longest_name(patterns.back()) > kMaxNameChars)
      fail(hostlist, "a host name would be longer than " + std::to_string(kMaxNameChars) + " characters");
  }
  return patterns;
}

u64 count_all(const std::vector<Pattern>& patterns) {
  u64 n = 0;
  for (const auto& p : patterns) n = sat_add(n, count_pattern(p));
  return n;
}

std::string pad(u64 v, std::size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// Where an odometer over a pattern's bracket groups stands in one group.
struct Cursor {
  std::size_t range = 0;
  u64 value = 0;
};

// Moves to the next name, the rightmost group turning fastest; false after the last one.
bool advance(const Pattern& p, std::vector<Cursor>& cur) {
  for (std::size_t i = p.size(); i-- > 0;) {
    const auto& rs = p[i].ranges;
    if (rs.empty()) continue;
    auto& c = cur[i];
    if (c.value < rs[c.range].hi) {
      ++c.value;
      return true;
    }
    if (c.range + 1 < rs.size()) {
      c.value = rs[++c.range].lo;
      return true;
    }
    c = Cursor{0, rs[0].lo};
  }
  return false;
}

void emit(const Pattern& p, std::vector<std::string>& hosts, std::unordered_set<std::string>& seen) {
  std::vector<Cursor> cur(p.size());
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i].is_group()) cur[i].value = p[i].ranges[0].lo;
  do {
    std::string name;
    for (std::size_t i = 0; i < p.size(); ++i)
      name += p[i].is_group() ? pad(cur[i].value, p[i].ranges[cur[i].range].width) : p[i].text;
    if (seen.insert(name).second) hosts.push_back(std::move(name));
  } while (advance(p, cur));
}

}  // namespace

std::uint64_t count(const std::string& hostlist) { return count_all(parse(hostlist)); }

std::vector<std::string> expand(const std::string& hostlist, std::size_t max_hosts) {
  const auto patterns = parse(hostlist);
  const u64 total = count_all(patterns);
  if (total > max_hosts)
    fail(hostlist, "names " + (total == kSaturated ? "more than 2^64" : std::to_string(total)) +
                       " hosts, more than the limit of " + std::to_string(max_hosts));
  std::vector<std::string> hosts;
  std::unordered_set<std::string> seen;
  hosts.reserve(static_cast<std::size_t>(total));
  seen.reserve(static_cast<std::size_t>(total));
  for (const auto& p : patterns) emit(p, hosts, seen);
  return hosts;
}

namespace {

// A name around its last run of digits: "gpu007a" is ("gpu", "007", "a").
struct Numbered {
  std::string prefix, digits, suffix;
};

std::optional<Numbered> split_number(const std::string& h) {
  std::size_t end = h.size();
  while (end > 0 && !is_digit(h[end - 1])) --end;
  std::size_t begin = end;
  while (begin > 0 && is_digit(h[begin - 1])) --begin;
  if (end == 0 || end - begin > kMaxDigits) return std::nullopt;
  return Numbered{h.substr(0, begin), h.substr(begin, end - begin), h.substr(end)};
}

bool zero_led(const std::string& digits) { return digits.size() > 1 && digits[0] == '0'; }

// The names one range can print: same prefix and suffix, numbers padded to one width.
struct GroupKey {
  std::string prefix, suffix;
  std::size_t width = 0;
  bool operator<(const GroupKey& o) const { return std::tie(prefix, suffix, width) < std::tie(o.prefix, o.suffix, o.width); }
};

// The width a number is printed at: its own size when zero-led ("007"); otherwise the widest
// zero-led width of its prefix that it fills without padding (gpu100 joins gpu099), else none.
std::size_t width_for(const std::string& digits, const std::set<std::size_t>& zero_led_widths) {
  if (zero_led(digits)) return digits.size();
  const auto it = zero_led_widths.upper_bound(digits.size());
  return it == zero_led_widths.begin() ? 0 : *std::prev(it);
}

// "001-004,010" for {1, 2, 3, 4, 10} at width 3.
std::string range_body(const std::set<u64>& nums, std::size_t width) {
  std::string body;
  for (auto it = nums.begin(); it != nums.end();) {
    const u64 a = *it;
    u64 b = a;
    for (++it; it != nums.end() && *it == b + 1; ++it) b = *it;
    if (!body.empty()) body += ',';
    body += pad(a, width);
    if (b != a) body += "-" + pad(b, width);
  }
  return body;
}

}  // namespace

std::string compress(const std::vector<std::string>& hosts) {
  std::map<std::pair<std::string, std::string>, std::set<std::size_t>> zero_led_widths;
  for (const auto& h : hosts)
    if (auto n = split_number(h); n && zero_led(n->digits)) zero_led_widths[{n->prefix, n->suffix}].insert(n->digits.size());

  struct Item {
    bool is_group = false;
    std::string plain;
    GroupKey key;
  };
  std::vector<Item> items;  // in order of first appearance
  std::map<GroupKey, std::set<u64>> groups;
  std::set<std::string> plain_seen;
  for (const auto& h : hosts) {
    const auto n = split_number(h);
    if (!n) {
      if (plain_seen.insert(h).second) items.push_back(Item{false, h, {}});
      continue;
    }
    GroupKey k{n->prefix, n->suffix, width_for(n->digits, zero_led_widths[{n->prefix, n->suffix}])};
    auto [it, fresh] = groups.try_emplace(k);
    if (fresh) items.push_back(Item{true, "", k});
    it->second.insert(std::stoull(n->digits));
  }
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ',';
    if (!item.is_group) {
      out += item.plain;
      continue;
    }
    const auto& k = item.key;
    const auto& nums = groups[k];
    out += nums.size() == 1 ? k.prefix + pad(*nums.begin(), k.width) + k.suffix
                            : k.prefix + "[" + range_body(nums, k.width) + "]" + k.suffix;
  }
  return out;
}

}  // namespace kiln::hostlist
