// The fuzz targets without libFuzzer, for `meson test --suite fuzz` under any
// compiler and sanitizer: runs every file named on the command line (every
// file of a named directory) through LLVMFuzzerTestOneInput, and a few
// hundred deterministic mutations of each (truncations, extensions, bit
// flips, bytes and length-sized fields set to 0, to all ones and to large
// values), so the seeds' neighbourhood is covered too. A crash or a failed
// invariant aborts; otherwise it prints what it ran and exits 0.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_support.h"

namespace {

using Bytes = std::vector<uint8_t>;

size_t gRuns = 0;

void run(const Bytes& b) {
  ++gRuns;
  // A copy of exactly the input's size, as libFuzzer hands it: a read past
  // its end is a heap overflow under ASan.
  uint8_t* copy = new uint8_t[b.size() + (b.empty() ? 1 : 0)];
  if (!b.empty()) std::memcpy(copy, b.data(), b.size());
  LLVMFuzzerTestOneInput(copy, b.size());
  delete[] copy;
}

// xorshift64, seeded from the input: the same mutations on every run.
struct Random {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
};

template <class T>
void runWithField(Bytes b, size_t at, T value) {
  std::memcpy(&b[at], &value, sizeof(value));
  run(b);
}

void mutate(const Bytes& in) {
  uint64_t seed = 0xcbf29ce484222325ull;
  for (uint8_t c : in) seed = (seed ^ c) * 0x100000001b3ull;
  Random rnd{seed | 1};
  const size_t n = in.size();

  // Truncations and extensions.
  for (size_t k = 0; k < 8; ++k) run(Bytes(in.begin(), in.begin() + static_cast<long>(n * k / 8)));
  if (n) run(Bytes(in.begin(), in.end() - 1));
  for (uint8_t fill : {0x00, 0xff}) {
    Bytes b = in;
    b.insert(b.end(), 64, fill);
    run(b);
  }
  Bytes twice = in;
  twice.insert(twice.end(), in.begin(), in.end());
  run(twice);
  if (n == 0) return;

  // 128 single-bit flips: every bit of a small input, else bits at random.
  const size_t bits = n * 8;
  for (size_t k = 0; k < std::min<size_t>(bits, 128); ++k) {
    const size_t bit = bits <= 128 ? k : rnd.below(bits);
    Bytes b = in;
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    run(b);
  }
  // 32 bytes set to 0x00, 0xff and 0x80.
  for (size_t k = 0; k < 32; ++k) {
    const size_t at = rnd.below(n);
    for (uint8_t v : {0x00, 0xff, 0x80}) {
      Bytes b = in;
      b[at] = v;
      run(b);
    }
  }
  // Length-sized fields: at 32 aligned offsets (every one of a small input),
  // 4 and 8 bytes set to 0, all ones, the largest signed value, and a
  // length just past the input.
  const size_t slots = n / 4;
  for (size_t k = 0; k < std::min<size_t>(slots, 32); ++k) {
    const size_t at = 4 * (slots <= 32 ? k : rnd.below(slots));
    for (uint32_t v : {0u, 0xffffffffu, 0x7fffffffu, static_cast<uint32_t>(n + 1)})
      runWithField(in, at, v);
    if (at + 8 <= n)
      for (uint64_t v : {uint64_t(0), ~uint64_t(0), uint64_t(1) << 63, uint64_t(n + 1)}) runWithField(in, at, v);
  }
}

bool readFile(const std::string& path, Bytes* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

void collect(const std::string& path, std::vector<std::string>* files) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  DIR* d = opendir(path.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) collect(path + "/" + name, files);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) collect(argv[i], &files);
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s corpus-dir-or-file...: no input found\n", argv[0]);
    return 2;
  }
  for (const std::string& path : files) {
    Bytes b;
    if (!readFile(path, &b)) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    run(b);
    mutate(b);
  }
  std::printf("%zu input(s), %zu run(s) with their mutations: no crash, every invariant held\n", files.size(),
              gRuns);
  return 0;
}
