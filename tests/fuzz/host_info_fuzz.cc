// Every rank's HostInfo, as the bootstrap gathers them (raw bytes from each
// peer), through what consumes them: topo::sanitizeWire, the hierarchy and
// the layout every rank builds from them, hostShares, and strata-topo's tree
// and JSON. Input: k HostInfo records (k = size / sizeof(HostInfo), 1 to 8,
// the last zero-padded), then one byte per rank naming its record (mod k),
// up to 64 ranks; without them rank r takes record r. Ranks sharing a record
// share a host, as they do in a job.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "describe.h"
#include "fuzz_support.h"
#include "hierarchy.h"
#include "host.h"
#include "layout.h"

using namespace strata;
using topo::HostInfo;

namespace {

FUZZ_NOT_COVERED bool terminated(const char* field, size_t bytes) { return std::memchr(field, '\0', bytes) != nullptr; }

FUZZ_NOT_COVERED bool allTerminated(const HostInfo& h) {
  return terminated(h.hostId, sizeof(h.hostId)) && terminated(h.machineId, sizeof(h.machineId)) &&
         terminated(h.hostname, sizeof(h.hostname)) && terminated(h.nic, sizeof(h.nic)) &&
         terminated(h.rdma, sizeof(h.rdma));
}

// Both terminated.
FUZZ_NOT_COVERED bool sameStrings(const HostInfo& a, const HostInfo& b) {
  return std::strcmp(a.hostId, b.hostId) == 0 && std::strcmp(a.machineId, b.machineId) == 0 &&
         std::strcmp(a.hostname, b.hostname) == 0 && std::strcmp(a.nic, b.nic) == 0 &&
         std::strcmp(a.rdma, b.rdma) == 0;
}

FUZZ_NOT_COVERED bool sameNumbers(const HostInfo& a, const HostInfo& b) {
  return a.pid == b.pid && a.pidNamespace == b.pidNamespace && a.cpusAllowed == b.cpusAllowed &&
         std::memcmp(a.cpuMask, b.cpuMask, sizeof(a.cpuMask)) == 0 && a.package == b.package &&
         a.numaNode == b.numaNode && a.packages == b.packages && a.numaNodes == b.numaNodes &&
         a.cores == b.cores && a.pus == b.pus;
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
// past U+10FFFF), as a JSON parser requires of its document.
FUZZ_NOT_COVERED bool wellFormedUtf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = s[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;  // the second byte's range
    if (c < 0x80) len = 1;
    else if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned b = s[i + k];
      if (k == 1 ? (b < lo || b > hi) : (b & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

// A JSON syntax check (RFC 8259), enough to say a parser would accept the
// document: values, strings with their escapes, numbers, nesting.
class Json {
 public:
  explicit Json(const std::string& text) : s_(text) {}
  FUZZ_NOT_COVERED bool valid() {
    ws();
    if (!value(0)) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  FUZZ_NOT_COVERED bool value(int depth) {
    if (depth > 64 || i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    for (const char* word : {"true", "false", "null"})
      if (s_.compare(i_, std::strlen(word), word) == 0) return i_ += std::strlen(word), true;
    return false;
  }
  FUZZ_NOT_COVERED bool object(int depth) {
    ++i_;
    ws();
    if (eat('}')) return true;
    do {
      ws();
      if (!string()) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      if (!value(depth + 1)) return false;
      ws();
    } while (eat(','));
    return eat('}');
  }
  FUZZ_NOT_COVERED bool array(int depth) {
    ++i_;
    ws();
    if (eat(']')) return true;
    do {
      ws();
      if (!value(depth + 1)) return false;
      ws();
    } while (eat(','));
    return eat(']');
  }
  FUZZ_NOT_COVERED bool string() {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') continue;
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      if (e == 'u') {
        for (int k = 0; k < 4; ++k, ++i_)
          if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
      } else if (!std::strchr("\"\\/bfnrt", e) || e == '\0') {
        return false;
      }
    }
    return false;
  }
  FUZZ_NOT_COVERED bool number() {
    eat('-');
    if (eat('0')) {
    } else if (!digits()) {
      return false;
    }
    if (eat('.') && !digits()) return false;
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (!eat('+')) eat('-');
      if (!digits()) return false;
    }
    return true;
  }
  FUZZ_NOT_COVERED bool digits() {
    const size_t from = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > from;
  }
  FUZZ_NOT_COVERED bool eat(char c) { return i_ < s_.size() && s_[i_] == c ? (++i_, true) : false; }
  FUZZ_NOT_COVERED void ws() {
    while (i_ < s_.size() && std::strchr(" \t\r\n", s_[i_]) && s_[i_] != '\0') ++i_;
  }

  const std::string& s_;
  size_t i_ = 0;
};

FUZZ_NOT_COVERED void checkHierarchy(const topo::Hierarchy& h, const std::vector<HostInfo>& all) {
  const int n = static_cast<int>(all.size());
  FUZZ_CHECK(h.nranks() == n);
  FUZZ_CHECK(h.localRank.size() == all.size() && h.socketOf.size() == all.size());
  std::vector<int> seen(all.size(), 0);
  for (size_t i = 0; i < h.nodes.size(); ++i) {
    const topo::Node& node = h.nodes[i];
    FUZZ_CHECK(!node.ranks.empty());
    FUZZ_CHECK(std::is_sorted(node.ranks.begin(), node.ranks.end()));
    for (size_t j = 0; j < i; ++j) FUZZ_CHECK(h.nodes[j].hostKey != node.hostKey);
    if (i) FUZZ_CHECK(h.nodes[i - 1].ranks.front() < node.ranks.front());  // in order of their lowest rank
    size_t inSockets = 0;
    for (size_t s = 0; s < node.sockets.size(); ++s) {
      const topo::Socket& socket = node.sockets[s];
      inSockets += socket.ranks.size();
      FUZZ_CHECK(socket.package >= -1);
      if (s) {
        const int prev = node.sockets[s - 1].package;
        FUZZ_CHECK(socket.package == -1 ? prev != -1 : (prev != -1 && prev < socket.package));  // -1 last
      }
      for (int r : socket.ranks) FUZZ_CHECK(r >= 0 && r < n && h.socketOf[r] == static_cast<int>(s));
    }
    FUZZ_CHECK(inSockets == node.ranks.size());
    for (size_t k = 0; k < node.ranks.size(); ++k) {
      const int r = node.ranks[k];
      FUZZ_CHECK(r >= 0 && r < n);
      ++seen[r];
      FUZZ_CHECK(h.nodeOf[r] == static_cast<int>(i) && h.localRank[r] == static_cast<int>(k));
      FUZZ_CHECK(topo::hostKey(all[r]) == node.hostKey);
      FUZZ_CHECK(node.hostKey.size() < topo::kHostIdBytes);
    }
  }
  for (int c : seen) FUZZ_CHECK(c == 1);  // each rank in exactly one node
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t k = std::clamp<size_t>(size / sizeof(HostInfo), 1, 8);
  fuzz::Input in(data, size);
  std::vector<HostInfo> records(k);
  for (HostInfo& h : records) in.bytes(&h, sizeof(h));
  std::vector<size_t> recordOf;
  for (size_t r = 0; r < 64 && in.left(); ++r) recordOf.push_back(in.take<uint8_t>() % k);
  if (recordOf.empty())
    for (size_t r = 0; r < k; ++r) recordOf.push_back(r);

  std::vector<HostInfo> all;
  for (size_t rec : recordOf) {
    HostInfo h = records[rec];
    const bool honest = allTerminated(h);
    topo::sanitizeWire(&h);
    FUZZ_CHECK(allTerminated(h));
    // An honest peer's record (every string terminated) loses nothing.
    if (honest) FUZZ_CHECK(sameStrings(h, records[rec]));
    FUZZ_CHECK(sameNumbers(h, records[rec]));
    all.push_back(h);
  }
  const int n = static_cast<int>(all.size());

  topo::Hierarchy h = topo::buildHierarchy(all);
  checkHierarchy(h, all);

  int sharing = 0;
  for (const auto& [key, share] : topo::hostShares(all)) {
    FUZZ_CHECK(share.ranks > 0 && share.cores >= 0);
    sharing += share.ranks;
  }
  FUZZ_CHECK(sharing == n);

  const std::string tree = topo::describeTree(h, all);
  FUZZ_CHECK(!tree.empty());
  const std::string json = topo::describeJson(h, all);
  FUZZ_CHECK(wellFormedUtf8(json));
  FUZZ_CHECK(Json(json).valid());

  // The order every algorithm walks: a permutation of the ranks.
  const Layout layout = Layout::of(std::move(h));
  FUZZ_CHECK(static_cast<int>(layout.order.size()) == n && static_cast<int>(layout.posOf.size()) == n);
  for (int p = 0; p < n; ++p) {
    const int r = layout.order[p];
    FUZZ_CHECK(r >= 0 && r < n && layout.posOf[r] == p);
  }
  return 0;
}
