// The C API's contract for bad input: each mistake gets its documented code
// and a message naming the argument, and never a crash or a hang.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

TEST(Api, ResultStringsVersionAndSizes) {
  std::set<std::string> seen;
  for (int rc = STRATA_SUCCESS; rc <= STRATA_ERR_CUDA; ++rc) {
    const char* s = strata_result_string(static_cast<strata_result_t>(rc));
    ASSERT_NE(s, nullptr);
    EXPECT_GT(std::strlen(s), 0u);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(STRATA_ERR_CUDA + 1));
  int version = 0;
  ASSERT_EQ(strata_get_version(&version), STRATA_SUCCESS);
  EXPECT_EQ(version, STRATA_VERSION_CODE);
  EXPECT_EQ(strata_get_version(nullptr), STRATA_ERR_INVALID_ARGUMENT);
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  for (int dt = 0; dt < STRATA_NUM_DATATYPES; ++dt)
    EXPECT_EQ(strata_datatype_size(static_cast<strata_datatype_t>(dt)), sizes[dt]) << dt;
  EXPECT_EQ(strata_datatype_size(static_cast<strata_datatype_t>(99)), 0u);
}

TEST(Api, TransportsOfThisHost) {
  char names[64];
  ASSERT_EQ(strata_get_transports(names, sizeof(names)), STRATA_SUCCESS) << strata_last_error();
  const std::string list = std::string(" ") + names + " ";
  EXPECT_NE(list.find(" shm "), std::string::npos) << names;  // every Linux host has both
  EXPECT_NE(list.find(" tcp "), std::string::npos) << names;
  EXPECT_EQ(strata_get_transports(nullptr, 64), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_get_transports(names, 3), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(strata_last_error(), "len 3")) << strata_last_error();
}

TEST(Api, InitRejectsBadArguments) {
  strata_unique_id_t id;
  ASSERT_EQ(strata_get_unique_id(&id), STRATA_SUCCESS);
  strata_comm_t comm = nullptr;
  EXPECT_EQ(strata_comm_init_rank(nullptr, 2, id, 0), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(strata_last_error(), "comm"));
  EXPECT_EQ(strata_comm_init_rank(&comm, 0, id, 0), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(strata_last_error(), "nranks=0"));
  EXPECT_EQ(strata_comm_init_rank(&comm, -3, id, 0), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_comm_init_rank(&comm, 2, id, 2), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(strata_last_error(), "rank=2"));
  EXPECT_EQ(strata_comm_init_rank(&comm, 2, id, -1), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr) << "outputs are written only on success";
  EXPECT_EQ(strata_get_unique_id(nullptr), STRATA_ERR_INVALID_ARGUMENT);

  // A damaged id is refused before any connection is attempted.
  for (size_t byte : {size_t(0), size_t(9), size_t(20), size_t(60)}) {
    strata_unique_id_t bad = id;
    bad.internal[byte] ^= 0x41;
    EXPECT_EQ(strata_comm_init_rank(&comm, 2, bad, 1), STRATA_ERR_INVALID_ARGUMENT) << byte;
    EXPECT_TRUE(mentions(strata_last_error(), "unique id")) << strata_last_error();
  }
  strata_unique_id_t zero;
  std::memset(&zero, 0, sizeof(zero));
  EXPECT_EQ(strata_comm_init_rank(&comm, 2, zero, 0), STRATA_ERR_INVALID_ARGUMENT);

  // A config is checked field by field before the bootstrap starts.
  strata_config_t config = STRATA_CONFIG_INITIALIZER;
  config.size = sizeof(size_t);
  EXPECT_EQ(strata_comm_init_rank_config(&comm, 2, id, 0, &config), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(strata_last_error(), "config->size")) << strata_last_error();
  for (double bad : {-1.0, std::nan(""), 1e12}) {
    config = STRATA_CONFIG_INITIALIZER;
    config.timeout_seconds = bad;
    EXPECT_EQ(strata_comm_init_rank_config(&comm, 2, id, 0, &config), STRATA_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_TRUE(mentions(strata_last_error(), "config->timeout_seconds")) << strata_last_error();
  }
  config = STRATA_CONFIG_INITIALIZER;
  config.device = -2;
  EXPECT_EQ(strata_comm_init_rank_config(&comm, 2, id, 0, &config), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(strata_last_error(), "config->device=-2")) << strata_last_error();
  EXPECT_EQ(comm, nullptr);
}

// A communicator's CUDA device is fixed when it is created: the config's,
// carried through a non-blocking init (whose thread has a current device of
// its own) and into a dup; STRATA_DEVICE_CURRENT takes the creating
// thread's, -1 here where no GPU is usable. Device 0 exists wherever a GPU
// does, and is kept as given where none is.
TEST(Api, TheDeviceIsFixedAtCreation) {
  expectAllPassed(runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_config_t config = STRATA_CONFIG_INITIALIZER;
    config.device = 0;
    strata_comm_t comm = nullptr, dup = nullptr;
    if (!rep.ok(strata_comm_init_rank_config_nonblocking(&comm, nranks, id, rank, &config), nullptr, "init")) return;
    int device = -7;
    if (!rep.ok(strata_comm_device(comm, &device), comm, "strata_comm_device")) return;
    if (device != 0) rep.fail("non-blocking init with config.device=0: strata_comm_device says %d", device);
    if (!rep.ok(strata_comm_dup(comm, &dup), comm, "dup")) return;
    device = -7;
    if (rep.ok(strata_comm_device(dup, &device), dup, "strata_comm_device") && device != 0)
      rep.fail("the dup of a communicator on device 0 is on device %d", device);
    if (strata_comm_device(dup, nullptr) != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "device"))
      rep.fail("a NULL output pointer: '%s'", strata_last_error());
    rep.ok(strata_comm_destroy(dup), nullptr, "destroy dup");
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }));
}

// A program built against the struct before `device` passes its size:
// whatever lies past it is not read, and the device is the current one (-1
// without a GPU, 0 with one; never the 5 beyond its size). An `int` device
// would have sat in that struct's tail padding, inside the old size.
TEST(Api, AnOlderConfigHasNoDevice) {
  struct OlderConfig {  // strata_config_t before `device`
    size_t size;
    double timeout_seconds;
    int reproducible;
    const char* algorithm;
    int nchannels;
  };
  expectAllPassed(runRanks(1, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_config_t config = STRATA_CONFIG_INITIALIZER;
    config.size = sizeof(OlderConfig);
    config.device = 5;
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank_config(&comm, nranks, id, rank, &config), nullptr, "init")) return;
    int device = -7;
    if (rep.ok(strata_comm_device(comm, &device), comm, "strata_comm_device") && device != -1 && device != 0)
      rep.fail("a config without the device field: strata_comm_device says %d", device);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }));
}

// A world too large to allocate for is refused before the bootstrap sizes its
// per-rank tables; before the bound, vector::resize threw std::bad_alloc
// through the C ABI and the process aborted.
TEST(Api, HugeWorldIsRefusedNotThrown) {
  strata_unique_id_t id;
  ASSERT_EQ(strata_get_unique_id(&id), STRATA_SUCCESS);
  for (int rank : {0, INT_MAX - 1}) {
    strata_comm_t comm = nullptr;
    EXPECT_EQ(strata_comm_init_rank(&comm, INT_MAX, id, rank), STRATA_ERR_INVALID_ARGUMENT) << rank;
    EXPECT_TRUE(mentions(strata_last_error(), "nranks")) << strata_last_error();
    EXPECT_EQ(comm, nullptr);
  }
}

TEST(Api, NullHandlesAreRejected) {
  int v;
  EXPECT_EQ(strata_comm_rank(nullptr, &v), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_comm_size(nullptr, &v), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_comm_destroy(nullptr), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_comm_abort(nullptr), STRATA_ERR_INVALID_ARGUMENT);
  float x = 1;
  EXPECT_EQ(strata_allreduce(&x, &x, 1, STRATA_FLOAT32, STRATA_SUM, nullptr), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(strata_last_error(), "comm"));
  int done = 0;
  EXPECT_EQ(strata_test(nullptr, &done), STRATA_SUCCESS);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(strata_wait(nullptr), STRATA_SUCCESS);
  EXPECT_EQ(strata_test(nullptr, nullptr), STRATA_ERR_INVALID_ARGUMENT);
}

TEST(Api, CollectiveArgumentsAreValidated) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    float buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct Case {
      const char* what;
      strata_result_t rc;
      const char* word;
    };
    auto expect = [&](const Case& c) {
      if (c.rc != STRATA_ERR_INVALID_ARGUMENT) rep.fail("%s: got %s", c.what, strata_result_string(c.rc));
      if (!mentions(strata_last_error(), c.word))
        rep.fail("%s: thread message '%s' does not name '%s'", c.what, strata_last_error(), c.word);
      if (!mentions(strata_comm_last_error(comm), c.word))
        rep.fail("%s: comm message '%s' does not name '%s'", c.what, strata_comm_last_error(comm), c.word);
    };
    expect({"null sendbuf", strata_allreduce(nullptr, buf, 4, STRATA_FLOAT32, STRATA_SUM, comm), "sendbuf"});
    expect({"null recvbuf", strata_allreduce(buf, nullptr, 4, STRATA_FLOAT32, STRATA_SUM, comm), "recvbuf"});
    expect({"count overflow", strata_allreduce(buf, buf, SIZE_MAX, STRATA_FLOAT32, STRATA_SUM, comm), "count"});
    expect({"count overflow 2", strata_allreduce(buf, buf, SIZE_MAX / 2, STRATA_INT8, STRATA_SUM, comm), "count"});
    expect({"bad datatype", strata_allreduce(buf, buf, 4, static_cast<strata_datatype_t>(99), STRATA_SUM, comm), "datatype=99"});
    expect({"negative datatype", strata_allreduce(buf, buf, 4, static_cast<strata_datatype_t>(-1), STRATA_SUM, comm), "datatype"});
    expect({"bad op", strata_allreduce(buf, buf, 4, STRATA_FLOAT32, static_cast<strata_op_t>(7), comm), "op=7"});
    expect({"overlap", strata_allreduce(buf, buf + 1, 4, STRATA_FLOAT32, STRATA_SUM, comm), "overlap"});
    strata_request_t req;
    expect({"null request", strata_iallreduce(buf, buf, 4, STRATA_FLOAT32, STRATA_SUM, comm, nullptr), "request"});
    expect({"iallreduce bad op", strata_iallreduce(buf, buf, 4, STRATA_FLOAT32, static_cast<strata_op_t>(9), comm, &req), "op=9"});
    // Count 0 is a valid no-op, even with null buffers.
    rep.ok(strata_allreduce(nullptr, nullptr, 0, STRATA_FLOAT32, STRATA_SUM, comm), comm, "count 0");
    if (!rep.ok(strata_iallreduce(nullptr, nullptr, 0, STRATA_FLOAT32, STRATA_SUM, comm, &req), comm, "icount 0")) return;
    if (req != nullptr) rep.fail("count 0 should give a NULL request");
    // After all that, the communicator still works and nothing was disturbed.
    if (!rep.ok(strata_allreduce(buf, buf, 8, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce")) return;
    for (int i = 0; i < 8; ++i)
      if (buf[i] != 2.0f * (i + 1)) rep.fail("element %d is %g after the bad calls", i, buf[i]);
    int r = -1, n = -1;
    rep.ok(strata_comm_rank(comm, &r), comm, "rank");
    rep.ok(strata_comm_size(comm, &n), comm, "size");
    if (r != rank || n != nranks) rep.fail("rank/size %d/%d", r, n);
    if (strata_comm_rank(comm, nullptr) != STRATA_ERR_INVALID_ARGUMENT) rep.fail("null rank output accepted");
    // The transport of each pair: both ranks share this host's memory.
    char name[8];
    const int peer = 1 - rank;
    rep.ok(strata_comm_peer_transport(comm, peer, name, sizeof(name)), comm, "peer_transport");
    const char* want = std::getenv("STRATA_TRANSPORT") ? std::getenv("STRATA_TRANSPORT") : "shm";
    if (std::strcmp(name, want) != 0) rep.fail("peer %d is reached over %s, want %s", peer, name, want);
    rep.ok(strata_comm_peer_transport(comm, rank, name, sizeof(name)), comm, "peer_transport(self)");
    if (std::strcmp(name, "self") != 0) rep.fail("this rank's own transport is %s, want self", name);
    expect({"peer out of range", strata_comm_peer_transport(comm, 2, name, sizeof(name)), "peer 2"});
    expect({"null name", strata_comm_peer_transport(comm, peer, nullptr, 8), "name"});
    expect({"short name", strata_comm_peer_transport(comm, peer, name, 2), "len 2"});
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  });
  expectAllPassed(outcomes);
}

// Env init errors are checked in a child so the test's environment is untouched.
TEST(Api, EnvInitNamesTheBadVariable) {
  auto outcomes = runRanks(1, 60, [](int, int, const strata_unique_id_t&, Reporter& rep) {
    struct Case {
      const char* rank;
      const char* size;
      const char* addr;
      const char* port;
      const char* word;
    };
    const Case cases[] = {
        {nullptr, "2", "127.0.0.1", "29500", "RANK"},
        {"0", nullptr, "127.0.0.1", "29500", "WORLD_SIZE"},
        {"0", "2", nullptr, "29500", "MASTER_ADDR"},
        {"0", "2", "127.0.0.1", nullptr, "MASTER_PORT"},
        {"x", "2", "127.0.0.1", "29500", "RANK"},
        {"2", "2", "127.0.0.1", "29500", "RANK"},
        {"0", "0", "127.0.0.1", "29500", "WORLD_SIZE"},
        {"0", "2", "127.0.0.1", "70000", "MASTER_PORT"},
        {"0", "2", "no.such.host.invalid", "29500", "no.such.host.invalid"},
    };
    for (const auto& c : cases) {
      auto set = [](const char* name, const char* v) { v ? setenv(name, v, 1) : unsetenv(name); };
      set("RANK", c.rank);
      set("WORLD_SIZE", c.size);
      set("MASTER_ADDR", c.addr);
      set("MASTER_PORT", c.port);
      strata_comm_t comm = nullptr;
      strata_result_t rc = strata_comm_init_env(&comm);
      if (rc != STRATA_ERR_INVALID_ARGUMENT) rep.fail("case %s: got %s", c.word, strata_result_string(rc));
      if (!mentions(strata_last_error(), c.word)) rep.fail("message '%s' does not name %s", strata_last_error(), c.word);
    }
    if (strata_comm_init_env(nullptr) != STRATA_ERR_INVALID_ARGUMENT) rep.fail("null comm accepted");
  });
  expectAllPassed(outcomes);
}

TEST(Api, BadConfigurationIsReported) {
  auto outcomes = runRanks(1, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    setenv("STRATA_NSLOTS", "3", 1);
    strata_comm_t comm = nullptr;
    if (strata_comm_init_rank(&comm, nranks, id, rank) != STRATA_ERR_INVALID_ARGUMENT ||
        !mentions(strata_last_error(), "STRATA_NSLOTS"))
      rep.fail("STRATA_NSLOTS=3 not rejected: %s", strata_last_error());
  });
  expectAllPassed(outcomes);
}

// STRATA_BOOTSTRAP_TIMEOUT bounds the wait for the ranks to meet on its own:
// rank 0 of 2, alone, gives up after 1 s although STRATA_TIMEOUT is 300.
TEST(Api, BootstrapTimeoutBoundsTheJoin) {
  auto outcomes = runRanks(1, 60, [](int, int, const strata_unique_id_t& id, Reporter& rep) {
    setenv("STRATA_TIMEOUT", "300", 1);
    setenv("STRATA_BOOTSTRAP_TIMEOUT", "1", 1);
    strata_comm_t comm = nullptr;
    const double start = now();
    const strata_result_t rc = strata_comm_init_rank(&comm, 2, id, 0);
    const double took = now() - start;
    if (rc != STRATA_ERR_TIMEOUT || !mentions(strata_last_error(), "within 1 s"))
      rep.fail("rank 0 alone: %s: %s", strata_result_string(rc), strata_last_error());
    if (took < 0.9 || took > 10) rep.fail("rank 0 alone gave up after %.1f s, expected about 1 s", took);
  });
  expectAllPassed(outcomes);
}

}  // namespace
}  // namespace strata::test
