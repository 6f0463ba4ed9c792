// Every allreduce algorithm, forced with STRATA_ALGO, in real processes on
// simulated nodes: STRATA_HOSTID gives each rank a node, so ranks of a node
// talk over shared memory and nodes over tcp (loopback), as on a cluster.
// Layouts: 2 nodes x 2 ranks, 3 + 1, interleaved (A B A B), and 3 nodes of
// 2 + 2 + 1. Every datatype-op pair checked against the reference the other
// core tests use, odd counts, in and out of place; every rank's bytes equal.
// Also strata_comm_algorithm: the forced algorithm is what it reports, and
// bad arguments get errors naming them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"
#include "values.h"

namespace strata::test {
namespace {

struct Case {
  const char* algo;  // "" for the cost model's choice
  std::vector<char> nodeOf;
};

void checkAlgorithms(int rank, int nranks, const strata_unique_id_t& id, Reporter& rep, const Case& c) {
  const std::string node(1, c.nodeOf[rank]);
  setenv("STRATA_HOSTID", node.c_str(), 1);
  strata_comm_t comm;
  if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "strata_comm_init_rank")) return;
  const bool oneshot = std::strcmp(c.algo, "oneshot") == 0;
  char name[16];
  int channels = 0;
  if (!rep.ok(strata_comm_algorithm(comm, "allreduce", 1000, STRATA_FLOAT32, name, sizeof(name), &channels),
              comm, "strata_comm_algorithm"))
    return;
  if (*c.algo && std::strcmp(name, c.algo) != 0) rep.fail("strata_comm_algorithm says %s, forced %s", name, c.algo);
  if (channels < 1) rep.fail("strata_comm_algorithm gave %d channels", channels);
  std::vector<char> input, output, want;
  for (auto dt : kTypes)
    for (auto op : kOps)
      for (size_t count : {size_t(1), size_t(13), size_t(1001), size_t(70001)}) {
        if (oneshot && count * strata_datatype_size(dt) > 16384) continue;
        if (count == 70001 && op != STRATA_SUM && dt != STRATA_FLOAT32) continue;
        expectedBuffer(want, nranks, count, op, dt);
        for (bool inPlace : {false, true}) {
          const size_t elem = strata_datatype_size(dt);
          input.assign(count * elem + 8, 0);
          output.assign(count * elem + 8, 0x5a);
          for (size_t i = 0; i < count; ++i) store(input.data(), i, inputValue(rank, i, op, dt), dt);
          char* out = inPlace ? input.data() : output.data();
          std::string what = std::string(*c.algo ? c.algo : "auto") + " dt" + std::to_string(dt) + "-op" +
                             std::to_string(op) + "-n" + std::to_string(count) + (inPlace ? "-inplace" : "");
          if (!rep.ok(strata_allreduce(input.data(), out, count, dt, op, comm), comm, what.c_str())) return;
          if (std::memcmp(out, want.data(), count * elem) != 0) {
            size_t i = 0;
            while (std::memcmp(out + i * elem, want.data() + i * elem, elem) == 0) ++i;
            rep.fail("%s: element %zu differs from the reference", what.c_str(), i);
            return;
          }
          if (!inPlace && static_cast<unsigned char>(output[count * elem]) != 0x5a)
            rep.fail("%s: wrote past the end of recvbuf", what.c_str());
          rep.value(what, hashBytes(out, count * elem));
        }
      }
  rep.ok(strata_comm_destroy(comm), nullptr, "strata_comm_destroy");
}

class Algorithms : public ::testing::TestWithParam<const char*> {};

TEST_P(Algorithms, MatchTheReferenceOnSimulatedNodes) {
  for (const auto& nodes : std::vector<std::vector<char>>{
           {'A', 'A', 'B', 'B'}, {'A', 'A', 'A', 'B'}, {'A', 'B', 'A', 'B'}, {'A', 'A', 'B', 'B', 'C'}}) {
    const Case c{GetParam(), nodes};
    SCOPED_TRACE(std::string("STRATA_ALGO=") + c.algo + " nodes " + std::string(nodes.begin(), nodes.end()));
    std::vector<std::pair<std::string, std::string>> env = {{"STRATA_TIMEOUT", "30"}};
    if (*c.algo) env.push_back({"STRATA_ALGO", c.algo});
    auto outcomes = runRanks(static_cast<int>(nodes.size()), 120,
                             [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
                               checkAlgorithms(rank, nranks, id, rep, c);
                             },
                             env);
    expectAllPassed(outcomes);
    expectValuesAgree(outcomes);
  }
}

INSTANTIATE_TEST_SUITE_P(Forced, Algorithms, ::testing::Values("", "ring", "oneshot", "rd", "hd", "tree", "hier"),
                         [](const auto& info) { return std::string(*info.param ? info.param : "auto"); });

TEST(AlgorithmQuery, BadArgumentsAreNamed) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    char name[16];
    auto expectError = [&](strata_result_t rc, const char* needle) {
      if (rc != STRATA_ERR_INVALID_ARGUMENT) rep.fail("expected INVALID_ARGUMENT for %s, got %d", needle, rc);
      else if (!std::strstr(strata_last_error(), needle)) rep.fail("error '%s' does not name %s", strata_last_error(), needle);
    };
    expectError(strata_comm_algorithm(nullptr, "allreduce", 1, STRATA_FLOAT32, name, sizeof(name), nullptr), "comm");
    expectError(strata_comm_algorithm(comm, "allreduc", 1, STRATA_FLOAT32, name, sizeof(name), nullptr), "collective");
    expectError(strata_comm_algorithm(comm, nullptr, 1, STRATA_FLOAT32, name, sizeof(name), nullptr), "collective");
    expectError(strata_comm_algorithm(comm, "allreduce", 1, static_cast<strata_datatype_t>(99), name, sizeof(name), nullptr),
                "datatype");
    expectError(strata_comm_algorithm(comm, "allreduce", 1, STRATA_FLOAT32, nullptr, 16, nullptr), "name");
    expectError(strata_comm_algorithm(comm, "allgather", SIZE_MAX / 2, STRATA_FLOAT32, name, sizeof(name), nullptr),
                "count");
    // Every collective it knows answers, with a short name.
    for (const char* coll : {"allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall"}) {
      int channels = 0;
      if (!rep.ok(strata_comm_algorithm(comm, coll, 12345, STRATA_INT8, name, sizeof(name), &channels), comm, coll))
        return;
      if (!*name || channels < 1) rep.fail("%s: name '%s', %d channels", coll, name, channels);
      rep.value(coll, hashBytes(name, std::strlen(name)));
    }
    // A short buffer gets a truncated, terminated name.
    char tiny[2] = {'x', 'x'};
    rep.ok(strata_comm_algorithm(comm, "allreduce", 1, STRATA_FLOAT32, tiny, sizeof(tiny), nullptr), comm, "tiny");
    if (tiny[1] != '\0') rep.fail("name not terminated in a 2-byte buffer");
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
  expectValuesAgree(outcomes);
}

}  // namespace
}  // namespace strata::test
