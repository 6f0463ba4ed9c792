#include "collective_checks.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "values.h"

namespace strata::test {
namespace {

const size_t kCounts[] = {0, 1, 7, 1023, 5000};
// Datatypes for collectives that only move bytes: one of each width.
const strata_datatype_t kMoveTypes[] = {STRATA_INT8, STRATA_FLOAT16, STRATA_FLOAT32, STRATA_FLOAT64};

std::string label(const char* coll, strata_datatype_t dt, size_t count, const std::string& extra = "") {
  return std::string(coll) + "-dt" + std::to_string(dt) + "-n" + std::to_string(count) + extra;
}

#define OK_OR_RETURN(call, what) \
  if (!rep.ok((call), comm, (what).c_str())) return false

bool broadcasts(int rank, int n, strata_comm_t comm, Reporter& rep) {
  for (auto dt : kMoveTypes)
    for (size_t count : kCounts)
      for (int root : {0, n - 1})
        for (bool inPlace : {false, true}) {
          const size_t elem = strata_datatype_size(dt), bytes = count * elem;
          std::string what = label("broadcast", dt, count, "-root" + std::to_string(root) + (inPlace ? "-inplace" : ""));
          std::vector<char> want = inputs(root, count, dt);
          std::vector<char> send = rank == root ? want : std::vector<char>();
          std::vector<char> recv(bytes + 8, 0x5a);
          if (inPlace && rank == root) std::copy(send.begin(), send.end(), recv.begin());
          const void* sendbuf = rank != root ? nullptr : inPlace ? recv.data() : send.data();
          OK_OR_RETURN(strata_broadcast(sendbuf, recv.data(), count, dt, root, comm), what);
          check(rep, what, recv.data(), want, elem);
          checkUntouched(rep, what + " (past the end)", recv.data() + bytes, 8);
        }
  return true;
}

bool reduces(int rank, int n, strata_comm_t comm, Reporter& rep) {
  for (auto dt : kTypes)
    for (auto op : kOps)
      for (size_t count : {size_t(1), size_t(7), size_t(1023), size_t(5000)})
        for (int root : {0, n - 1})
          for (bool inPlace : {false, true}) {
            if (inPlace && count != 1023) continue;
            const size_t elem = strata_datatype_size(dt), bytes = count * elem;
            std::string what = label("reduce", dt, count, "-op" + std::to_string(op) + "-root" +
                                                          std::to_string(root) + (inPlace ? "-inplace" : ""));
            std::vector<char> send = inputs(rank, count, dt, op);
            std::vector<char> recv(bytes + 8, 0x5a);
            if (inPlace) std::copy(send.begin(), send.end(), recv.begin());
            OK_OR_RETURN(strata_reduce(inPlace ? recv.data() : send.data(), recv.data(), count, dt, op, root, comm), what);
            if (rank == root) {
              std::vector<char> want;
              expectedBuffer(want, n, count, op, dt);
              check(rep, what, recv.data(), want, elem);
              checkUntouched(rep, what + " (past the end)", recv.data() + bytes, 8);
            } else if (!inPlace) {
              checkUntouched(rep, what + " (recvbuf of a non-root)", recv.data(), bytes + 8);
            }
          }
  return true;
}

bool allgathers(int rank, int n, strata_comm_t comm, Reporter& rep) {
  for (auto dt : kMoveTypes)
    for (size_t count : kCounts)
      for (bool inPlace : {false, true}) {
        const size_t elem = strata_datatype_size(dt), bytes = count * elem;
        std::string what = label("allgather", dt, count, inPlace ? "-inplace" : "");
        std::vector<char> want;
        for (int p = 0; p < n; ++p) {
          std::vector<char> block = inputs(p, count, dt);
          want.insert(want.end(), block.begin(), block.end());
        }
        std::vector<char> send = inputs(rank, count, dt);
        std::vector<char> recv(bytes * n + 8, 0x5a);
        char* own = recv.data() + bytes * rank;
        if (inPlace) std::copy(send.begin(), send.end(), own);
        OK_OR_RETURN(strata_allgather(inPlace ? own : send.data(), recv.data(), count, dt, comm), what);
        check(rep, what, recv.data(), want, elem);
        checkUntouched(rep, what + " (past the end)", recv.data() + bytes * n, 8);
      }
  return true;
}

bool reduceScatters(int rank, int n, strata_comm_t comm, Reporter& rep) {
  for (auto dt : kTypes)
    for (auto op : kOps)
      for (size_t count : {size_t(1), size_t(7), size_t(1023), size_t(5000)})
        for (bool inPlace : {false, true}) {
          if (inPlace && count != 1023) continue;
          const size_t elem = strata_datatype_size(dt), bytes = count * elem;
          std::string what = label("reduce_scatter", dt, count, "-op" + std::to_string(op) + (inPlace ? "-inplace" : ""));
          std::vector<char> send = inputs(rank, count * n, dt, op);
          std::vector<char> all;
          expectedBuffer(all, n, count * n, op, dt);
          std::vector<char> want(all.begin() + bytes * rank, all.begin() + bytes * (rank + 1));
          std::vector<char> recv(bytes + 8, 0x5a);
          char* out = inPlace ? send.data() + bytes * rank : recv.data();
          OK_OR_RETURN(strata_reduce_scatter(send.data(), out, count, dt, op, comm), what);
          check(rep, what, out, want, elem);
          if (!inPlace) checkUntouched(rep, what + " (past the end)", recv.data() + bytes, 8);
        }
  return true;
}

bool alltoalls(int rank, int n, strata_comm_t comm, Reporter& rep) {
  for (auto dt : kMoveTypes)
    for (size_t count : kCounts) {
      const size_t elem = strata_datatype_size(dt), bytes = count * elem;
      std::string what = label("alltoall", dt, count);
      // Block p of rank r's input: r's values at p*count ..; it lands as block r on p.
      std::vector<char> send = inputs(rank, count * n, dt);
      std::vector<char> want;
      for (int p = 0; p < n; ++p) {
        std::vector<char> block = inputs(p, count, dt, STRATA_SUM, rank * count);
        want.insert(want.end(), block.begin(), block.end());
      }
      std::vector<char> recv(bytes * n + 8, 0x5a);
      OK_OR_RETURN(strata_alltoall(send.data(), recv.data(), count, dt, comm), what);
      check(rep, what, recv.data(), want, elem);
      checkUntouched(rep, what + " (past the end)", recv.data() + bytes * n, 8);
    }
  return true;
}

// Uneven blocks (one rank contributes nothing), with gaps that must stay untouched.
bool vVariants(int rank, int n, strata_comm_t comm, Reporter& rep) {
  const strata_datatype_t dt = STRATA_FLOAT32;
  for (size_t scale : {size_t(1), size_t(3001)}) {
    std::vector<size_t> counts(n), displs(n);
    size_t extent = 0;
    for (int p = 0; p < n; ++p) {
      counts[p] = p == 1 ? 0 : (p + 1) * scale;
      displs[p] = extent + 3;  // a 3-element gap before each block
      extent = displs[p] + counts[p];
    }
    std::string what = "allgatherv-scale" + std::to_string(scale);
    std::vector<char> send = inputs(rank, counts[rank], dt);
    std::vector<char> recv(extent * 4, 0x5a);
    OK_OR_RETURN(strata_allgatherv(send.data(), counts[rank], recv.data(), counts.data(), displs.data(), dt, comm), what);
    size_t prevEnd = 0;
    for (int p = 0; p < n; ++p) {
      checkUntouched(rep, what + " gap", recv.data() + prevEnd * 4, (displs[p] - prevEnd) * 4);
      check(rep, what + " block " + std::to_string(p), recv.data() + displs[p] * 4, inputs(p, counts[p], dt), 4);
      prevEnd = displs[p] + counts[p];
    }

    // alltoallv: rank a sends f(a, b) elements to rank b.
    auto f = [&](int a, int b) { return size_t((a * 3 + b * 5) % 7) * scale; };
    std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
    size_t sendExtent = 0, recvExtent = 0;
    for (int p = 0; p < n; ++p) {
      sc[p] = f(rank, p), sd[p] = sendExtent, sendExtent += sc[p] + 1;
      rc[p] = f(p, rank), rd[p] = recvExtent, recvExtent += rc[p] + 1;
    }
    what = "alltoallv-scale" + std::to_string(scale);
    std::vector<char> vsend = inputs(rank, sendExtent, dt);
    std::vector<char> vrecv(recvExtent * 4, 0x5a);
    OK_OR_RETURN(strata_alltoallv(vsend.data(), sc.data(), sd.data(), vrecv.data(), rc.data(), rd.data(), dt, comm), what);
    for (int p = 0; p < n; ++p) {
      // What p sent us: its elements at its send displacement for rank `rank`.
      size_t theirDispl = 0;
      for (int q = 0; q < rank; ++q) theirDispl += f(p, q) + 1;
      check(rep, what + " from " + std::to_string(p), vrecv.data() + rd[p] * 4,
            inputs(p, rc[p], dt, STRATA_SUM, theirDispl), 4);
      checkUntouched(rep, what + " gap", vrecv.data() + (rd[p] + rc[p]) * 4, 4);
    }
  }
  return true;
}

}  // namespace

std::vector<char> inputs(int rank, size_t count, strata_datatype_t dt, strata_op_t op, size_t first) {
  std::vector<char> buf(count * strata_datatype_size(dt));
  for (size_t i = 0; i < count; ++i) store(buf.data(), i, inputValue(rank, first + i, op, dt), dt);
  return buf;
}

void check(Reporter& rep, const std::string& what, const char* got, const std::vector<char>& want,
           size_t elem) {
  if (want.empty() || std::memcmp(got, want.data(), want.size()) == 0) return;
  size_t i = 0;
  while (std::memcmp(got + i * elem, want.data() + i * elem, elem) == 0) ++i;
  rep.fail("%s: element %zu differs from the reference", what.c_str(), i);
}

void checkUntouched(Reporter& rep, const std::string& what, const char* p, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    if (static_cast<unsigned char>(p[i]) != 0x5a) {
      rep.fail("%s: byte %zu outside the result was written", what.c_str(), i);
      return;
    }
}

bool checkEveryCollective(int rank, int n, strata_comm_t comm, Reporter& rep) {
  return broadcasts(rank, n, comm, rep) && reduces(rank, n, comm, rep) && allgathers(rank, n, comm, rep) &&
         reduceScatters(rank, n, comm, rep) && alltoalls(rank, n, comm, rep) && vVariants(rank, n, comm, rep);
}

}  // namespace strata::test
