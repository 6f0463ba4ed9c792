// What every fuzz target includes: the libFuzzer entry point, FUZZ_CHECK for
// the invariants a target asserts beyond "no crash", and a reader of the
// input. A target is one file, <name>_fuzz.cc, defining
// LLVMFuzzerTestOneInput; tests/fuzz/meson.build builds it twice (with
// libFuzzer under -Dfuzz=enabled, and with replay_main.cc always) from one
// line of its table, and its seeds live in corpus/<name>/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// A failed invariant is a crash: libFuzzer keeps the input, the replay test fails.
#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

// For a target's own checkers (a JSON validator, say): their branches are
// not the parser's, and would only fill the corpus with inputs that differ
// in what the checker walked. Keeps libFuzzer's instrumentation out of them.
#if defined(__clang__)
#define FUZZ_NOT_COVERED __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_NOT_COVERED
#endif

namespace strata::fuzz {

// Takes values off the front of the input; past its end they read as zeros,
// so every input is a valid one.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <class T>
  T take() {
    T v;
    bytes(&v, sizeof(v));
    return v;
  }
  // Copies n bytes (zero-filled past the end).
  void bytes(void* out, size_t n) {
    const size_t have = n < left() ? n : left();
    if (have) std::memcpy(out, data_ + at_, have);
    std::memset(static_cast<char*>(out) + have, 0, n - have);
    at_ += have;
  }
  const uint8_t* rest() const { return data_ + at_; }
  size_t left() const { return size_ - at_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

// Rejected input logs a warning where the error is made; at the rate a
// fuzzer runs that would be all it does. STRATA_DEBUG set by the user wins.
__attribute__((constructor)) inline void quietLogs() { setenv("STRATA_DEBUG", "NONE", 0); }

}  // namespace strata::fuzz
