#include "message_pattern.h"

#include <cstdio>
#include <cstring>

namespace strata::test {
namespace {

// splitmix64's finalizer: every input bit moves every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t streamKey(const Stream& s, uint64_t m) {
  return mix((static_cast<uint64_t>(s.sender) << 48) ^ (static_cast<uint64_t>(s.channel) << 40) ^ m);
}

uint64_t payloadKey(const Stream& s, uint64_t m) { return streamKey(s, m) ^ 0x5bd1e995ull; }

// Byte i of message m: byte i % 8 of a word drawn for (stream, m, i / 8).
uint8_t patternByte(uint64_t key, size_t i) { return static_cast<uint8_t>(mix(key + i / 8) >> (8 * (i % 8))); }

}  // namespace

SlotTag tagOf(const Stream& s, uint64_t m) { return SlotTag{m + 1, streamKey(s, m)}; }

void fillMessage(void* dst, size_t bytes, const Stream& s, uint64_t m) {
  const uint64_t key = payloadKey(s, m);
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < bytes; ++i) out[i] = patternByte(key, i);
}

std::string checkMessage(const void* data, size_t bytes, const SlotTag& tag, const Stream& s, uint64_t m,
                         size_t wantBytes) {
  char text[256];
  const SlotTag want = tagOf(s, m);
  if (tag.seq != want.seq || tag.desc != want.desc) {
    // seq is m + 1 on every stream: name the message it belongs to, if any.
    std::snprintf(text, sizeof(text),
                  "message %llu from rank %d on channel %d: tag {%llu, %#llx}, want {%llu, %#llx}%s",
                  (unsigned long long)m, s.sender, s.channel, (unsigned long long)tag.seq,
                  (unsigned long long)tag.desc, (unsigned long long)want.seq, (unsigned long long)want.desc,
                  tag.seq != want.seq ? " (another message: lost, repeated or reordered)" : " (another stream)");
    return text;
  }
  if (bytes != wantBytes) {
    std::snprintf(text, sizeof(text), "message %llu from rank %d on channel %d: %zu bytes, want %zu",
                  (unsigned long long)m, s.sender, s.channel, bytes, wantBytes);
    return text;
  }
  const uint64_t key = payloadKey(s, m);
  const auto* in = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    if (in[i] != patternByte(key, i)) {
      std::snprintf(text, sizeof(text),
                    "message %llu from rank %d on channel %d (%zu bytes): byte %zu is %#x, want %#x",
                    (unsigned long long)m, s.sender, s.channel, bytes, i, in[i], patternByte(key, i));
      return text;
    }
  }
  return "";
}

}  // namespace strata::test
