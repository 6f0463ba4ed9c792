// Every collective besides allreduce, and point-to-point, in real processes:
// each against a reference computed here (values.h), on 1..5 ranks, all
// datatypes and ops where they reduce, odd counts, in and out of place, every
// root; with small slots so that even modest counts are pipelined in many
// chunks. Then groups, non-blocking forms, barrier semantics and misuse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collective_checks.h"
#include "multiproc.h"
#include "values.h"

namespace strata::test {
namespace {

const std::vector<std::pair<std::string, std::string>> kSmallSlots = {
    {"STRATA_TIMEOUT", "30"}, {"STRATA_SLOT_BYTES", "8192"}};
void sweep(int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
  strata_comm_t comm;
  if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "strata_comm_init_rank")) return;
  checkEveryCollective(rank, n, comm, rep);
  rep.ok(strata_comm_destroy(comm), nullptr, "strata_comm_destroy");
}

class CollectiveSweep : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveSweep, EveryCollectiveMatchesReference) {
  expectAllPassed(runRanks(GetParam(), 240, sweep, kSmallSlots));
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectiveSweep, ::testing::Values(1, 2, 3, 4, 5));

TEST(Collectives, ForcedAlgorithmsAndChannels) {
  // Chains and rings everywhere, direct everywhere, and 3 channels with 2
  // progress threads: the same results.
  for (const auto& extra : std::vector<std::pair<std::string, std::string>>{
           {"STRATA_ALGO", "ring"}, {"STRATA_ALGO", "oneshot"}, {"STRATA_NCHANNELS", "3"}}) {
    auto env = kSmallSlots;
    env.push_back(extra);
    env.push_back({"STRATA_NTHREADS", "2"});
    expectAllPassed(runRanks(3, 240, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
      checkEveryCollective(rank, n, comm, rep);
      strata_comm_destroy(comm);
    }, env));
  }
}

// Whether strata_comm_algorithm names Bruck's schedule for `collective`,
// which the test forced; a failure says what it named instead.
bool namesBruck(strata_comm_t comm, const char* collective, Reporter& rep) {
  char name[16];
  int channels = 0;
  if (!rep.ok(strata_comm_algorithm(comm, collective, 5000, STRATA_FLOAT32, name, sizeof(name), &channels), comm,
              "strata_comm_algorithm"))
    return false;
  if (std::strcmp(name, "bruck") != 0) rep.fail("strata_comm_algorithm says %s for %s, forced bruck", name, collective);
  return true;
}

// Bruck's allgather forced (STRATA_ALLGATHER_ALGO=bruck) on 3 and 4 ranks
// over shared memory, 8 KiB slots so that the larger blocks travel in many
// pieces, over 2 channels: every block against the reference inputs, in
// place and not, blocking and not; strata_comm_algorithm names it.
TEST(Collectives, BruckAllgatherMatchesReference) {
  for (int n : {3, 4}) {
    auto env = kSmallSlots;
    env.push_back({"STRATA_ALLGATHER_ALGO", "bruck"});
    env.push_back({"STRATA_NCHANNELS", "2"});
    expectAllPassed(runRanks(n, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
      if (!namesBruck(comm, "allgather", rep)) return;
      for (auto dt : {STRATA_INT8, STRATA_INT32, STRATA_FLOAT32, STRATA_FLOAT64})
        for (size_t count : {size_t(1), size_t(1023), size_t(5000)})
          for (bool inPlace : {false, true}) {
            const size_t elem = strata_datatype_size(dt), bytes = count * elem;
            const std::string what = "bruck allgather dt" + std::to_string(dt) + "-n" + std::to_string(count) +
                                     (inPlace ? "-inplace" : "");
            std::vector<char> send = inputs(rank, count, dt);
            std::vector<char> recv(bytes * n + 8, 0x5a);
            char* own = recv.data() + bytes * rank;
            if (inPlace) std::copy(send.begin(), send.end(), own);
            strata_request_t req = nullptr;
            if (inPlace) {
              if (!rep.ok(strata_allgather(own, recv.data(), count, dt, comm), comm, what.c_str())) return;
            } else if (!rep.ok(strata_iallgather(send.data(), recv.data(), count, dt, comm, &req), comm, what.c_str()) ||
                       !rep.ok(strata_wait(req), comm, what.c_str())) {
              return;
            }
            for (int p = 0; p < n; ++p)
              check(rep, what + " block " + std::to_string(p), recv.data() + bytes * p, inputs(p, count, dt), elem);
            checkUntouched(rep, what + " (past the end)", recv.data() + bytes * n, 8);
          }
      rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
    }, env));
  }
}

// Bruck's reduce-scatter forced (STRATA_REDUCE_SCATTER_ALGO=bruck) on 3 and
// 4 ranks over shared memory, 8 KiB slots and 2 channels: every datatype
// and op against values.h's reference (folded in double), in place and not,
// blocking and not; each call twice, the second reusing the cached plan's
// scratch region, and an ireduce_scatter beside another of another size;
// strata_comm_algorithm names it.
TEST(Collectives, BruckReduceScatterMatchesReference) {
  for (int n : {3, 4}) {
    auto env = kSmallSlots;
    env.push_back({"STRATA_REDUCE_SCATTER_ALGO", "bruck"});
    env.push_back({"STRATA_NCHANNELS", "2"});
    expectAllPassed(runRanks(n, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
      if (!namesBruck(comm, "reduce_scatter", rep)) return;
      for (auto dt : kTypes)
        for (auto op : kOps)
          for (size_t count : {size_t(1), size_t(1023), size_t(5000)})
            for (bool inPlace : {false, true}) {
              if (inPlace && count == 1) continue;
              const size_t elem = strata_datatype_size(dt), bytes = count * elem;
              const std::string what = "bruck reduce_scatter dt" + std::to_string(dt) + "-op" + std::to_string(op) +
                                       "-n" + std::to_string(count) + (inPlace ? "-inplace" : "");
              std::vector<char> all;
              expectedBuffer(all, n, count * n, op, dt);
              const std::vector<char> want(all.begin() + bytes * rank, all.begin() + bytes * (rank + 1));
              for (int repeat = 0; repeat < 2; ++repeat) {
                std::vector<char> send = inputs(rank, count * n, dt, op);
                std::vector<char> recv(bytes + 8, 0x5a);
                char* out = inPlace ? send.data() + bytes * rank : recv.data();
                strata_request_t req = nullptr;
                if (repeat == 0) {
                  if (!rep.ok(strata_reduce_scatter(send.data(), out, count, dt, op, comm), comm, what.c_str())) return;
                } else if (!rep.ok(strata_ireduce_scatter(send.data(), out, count, dt, op, comm, &req), comm,
                                   what.c_str()) ||
                           !rep.ok(strata_wait(req), comm, what.c_str())) {
                  return;
                }
                check(rep, what, out, want, elem);
                if (!inPlace) checkUntouched(rep, what + " (past the end)", recv.data() + bytes, 8);
              }
            }
      // Two in flight at once, on plans of their own.
      std::vector<char> a = inputs(rank, 777 * n, STRATA_FLOAT64), b = inputs(rank, 5000 * n, STRATA_FLOAT64);
      std::vector<char> aOut(777 * 8), bOut(5000 * 8), wantA, wantB;
      expectedBuffer(wantA, n, 777 * n, STRATA_SUM, STRATA_FLOAT64);
      expectedBuffer(wantB, n, 5000 * n, STRATA_SUM, STRATA_FLOAT64);
      strata_request_t ra = nullptr, rb = nullptr;
      if (!rep.ok(strata_ireduce_scatter(a.data(), aOut.data(), 777, STRATA_FLOAT64, STRATA_SUM, comm, &ra), comm,
                  "ireduce_scatter a") ||
          !rep.ok(strata_ireduce_scatter(b.data(), bOut.data(), 5000, STRATA_FLOAT64, STRATA_SUM, comm, &rb), comm,
                  "ireduce_scatter b") ||
          !rep.ok(strata_wait(ra), comm, "wait a") || !rep.ok(strata_wait(rb), comm, "wait b"))
        return;
      check(rep, "ireduce_scatter a", aOut.data(),
            std::vector<char>(wantA.begin() + rank * 777 * 8, wantA.begin() + (rank + 1) * 777 * 8), 8);
      check(rep, "ireduce_scatter b", bOut.data(),
            std::vector<char>(wantB.begin() + rank * 5000 * 8, wantB.begin() + (rank + 1) * 5000 * 8), 8);
      rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
    }, env));
  }
}

// Point-to-point, in groups: a ring shift of a message larger than a
// connector's FIFO (8 slots of 8 KiB), an all-pairs exchange of different
// sizes with a message to oneself, then plain blocking and non-blocking pairs.
TEST(PointToPoint, GroupedExchangesAndPairs) {
  for (int nranks : {2, 3, 4}) {
    expectAllPassed(runRanks(nranks, 120, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
      const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
      const size_t big = 100000;  // floats: 400 KB, > 64 KiB of FIFO
      std::vector<char> send = inputs(rank, big, STRATA_FLOAT32), recv(big * 4, 0x5a);
      strata_group_start();
      strata_send(send.data(), big, STRATA_FLOAT32, next, comm);
      strata_recv(recv.data(), big, STRATA_FLOAT32, prev, comm);
      if (!rep.ok(strata_group_end(), comm, "ring shift")) return;
      check(rep, "ring shift", recv.data(), inputs(prev, big, STRATA_FLOAT32), 4);

      // All pairs, rank a -> b carries (a + 2b) * 777 + 1 int32s, starting at
      // a's element 1000 * b; two messages to each peer, matched in order.
      auto size = [](int a, int b) { return size_t(a + 2 * b) * 777 + 1; };
      std::vector<std::vector<char>> outs(2 * n), ins(2 * n);
      strata_group_start();
      for (int p = 0; p < n; ++p)
        for (int k = 0; k < 2; ++k) {
          outs[2 * p + k] = inputs(rank, size(rank, p) + k, STRATA_INT32, STRATA_SUM, 1000 * p + k);
          ins[2 * p + k].assign((size(p, rank) + k) * 4, 0x5a);
          strata_send(outs[2 * p + k].data(), size(rank, p) + k, STRATA_INT32, p, comm);
          strata_recv(ins[2 * p + k].data(), size(p, rank) + k, STRATA_INT32, p, comm);
        }
      if (!rep.ok(strata_group_end(), comm, "all pairs")) return;
      for (int p = 0; p < n; ++p)
        for (int k = 0; k < 2; ++k)
          check(rep, "all pairs from " + std::to_string(p) + " #" + std::to_string(k), ins[2 * p + k].data(),
                inputs(p, size(p, rank) + k, STRATA_INT32, STRATA_SUM, 1000 * rank + k), 4);

      // Blocking pairs 0 -> 1 and back, small and large; non-blocking shift.
      if (rank < 2 && n >= 2) {
        for (size_t count : {size_t(3), size_t(20000)}) {
          std::vector<char> mine = inputs(rank, count, STRATA_FLOAT64), theirs(count * 8, 0x5a);
          const int other = 1 - rank;
          for (int turn = 0; turn < 2; ++turn) {
            if (turn == rank) {
              if (!rep.ok(strata_send(mine.data(), count, STRATA_FLOAT64, other, comm), comm, "send")) return;
            } else if (!rep.ok(strata_recv(theirs.data(), count, STRATA_FLOAT64, other, comm), comm, "recv")) {
              return;
            }
          }
          check(rep, "blocking pair", theirs.data(), inputs(other, count, STRATA_FLOAT64), 8);
        }
      }
      strata_request_t sreq = nullptr, rreq = nullptr;
      std::fill(recv.begin(), recv.end(), 0x5a);
      if (!rep.ok(strata_irecv(recv.data(), 5000, STRATA_FLOAT32, prev, comm, &rreq), comm, "irecv")) return;
      if (!rep.ok(strata_isend(send.data(), 5000, STRATA_FLOAT32, next, comm, &sreq), comm, "isend")) return;
      if (!rep.ok(strata_wait(sreq), comm, "wait isend") || !rep.ok(strata_wait(rreq), comm, "wait irecv")) return;
      check(rep, "non-blocking shift", recv.data(), inputs(prev, 5000, STRATA_FLOAT32), 4);
      rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
    }, kSmallSlots));
  }
}

// Blocking collectives inside a group are queued and run at group end (small
// allreduces fused into one, or not with STRATA_FUSION_BYTES=0); the
// non-blocking forms run side by side; a barrier holds every rank until all
// have arrived.
class GroupsNonBlockingAndBarrier : public ::testing::TestWithParam<const char*> {};

TEST_P(GroupsNonBlockingAndBarrier, AllMatchReference) {
  const std::string marks = "/tmp/strata-barrier-test-" + std::to_string(getpid());
  auto env = kSmallSlots;
  env.push_back({"STRATA_FUSION_BYTES", GetParam()});
  expectAllPassed(runRanks(4, 120, [&](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    // Ten allreduces of different sizes (the seventh an int32 max, out of
    // place, which splits the run of float sums) and a broadcast, in one group.
    std::vector<std::vector<char>> bufs(10);
    std::vector<char> maxOut(601 * 4, 0x5a);
    std::vector<char> bcast(777 * 4, 0x5a);
    auto typeOf = [](size_t k) { return k == 6 ? STRATA_INT32 : STRATA_FLOAT32; };
    auto opOf = [](size_t k) { return k == 6 ? STRATA_MAX : STRATA_SUM; };
    if (rank == 2) bcast = inputs(2, 777, STRATA_INT32);
    if (!rep.ok(strata_group_start(), comm, "group start")) return;
    for (size_t k = 0; k < bufs.size(); ++k) {
      bufs[k] = inputs(rank, 100 * k + 1, typeOf(k), opOf(k));
      void* out = k == 6 ? maxOut.data() : bufs[k].data();
      strata_allreduce(bufs[k].data(), out, 100 * k + 1, typeOf(k), opOf(k), comm);
    }
    strata_broadcast(bcast.data(), bcast.data(), 777, STRATA_INT32, 2, comm);
    if (!rep.ok(strata_group_end(), comm, "group end")) return;
    for (size_t k = 0; k < bufs.size(); ++k) {
      std::vector<char> want;
      expectedBuffer(want, n, 100 * k + 1, opOf(k), typeOf(k));
      check(rep, "grouped allreduce " + std::to_string(k), k == 6 ? maxOut.data() : bufs[k].data(), want, 4);
    }
    check(rep, "grouped broadcast", bcast.data(), inputs(2, 777, STRATA_INT32), 4);

    // An allgather and a reduce_scatter in flight together.
    std::vector<char> gin = inputs(rank, 3000, STRATA_INT64), gout(3000 * 8 * n);
    std::vector<char> rsin = inputs(rank, 2000 * n, STRATA_FLOAT64), rsout(2000 * 8);
    strata_request_t g = nullptr, rs = nullptr;
    if (!rep.ok(strata_iallgather(gin.data(), gout.data(), 3000, STRATA_INT64, comm, &g), comm, "iallgather")) return;
    if (!rep.ok(strata_ireduce_scatter(rsin.data(), rsout.data(), 2000, STRATA_FLOAT64, STRATA_MAX, comm, &rs), comm, "ireduce_scatter")) return;
    int done = 0;
    while (!done)
      if (!rep.ok(strata_test(rs, &done), comm, "test")) return;
    if (!rep.ok(strata_wait(g), comm, "wait")) return;
    for (int p = 0; p < n; ++p)
      check(rep, "iallgather block", gout.data() + p * 3000 * 8, inputs(p, 3000, STRATA_INT64), 8);
    std::vector<char> all;
    expectedBuffer(all, n, 2000 * n, STRATA_MAX, STRATA_FLOAT64);
    check(rep, "ireduce_scatter", rsout.data(), std::vector<char>(all.begin() + rank * 16000, all.begin() + (rank + 1) * 16000), 8);

    // Barrier: rank 0 arrives late; nobody may leave before its mark exists.
    if (rank == 0) usleep(200000);
    FILE* f = fopen((marks + "-" + std::to_string(rank)).c_str(), "w");
    if (f) fclose(f);
    if (!rep.ok(strata_barrier(comm), comm, "barrier")) return;
    for (int p = 0; p < n; ++p)
      if (access((marks + "-" + std::to_string(p)).c_str(), F_OK) != 0)
        rep.fail("left the barrier before rank %d entered it", p);
    strata_request_t b = nullptr;
    if (!rep.ok(strata_ibarrier(comm, &b), comm, "ibarrier") || !rep.ok(strata_wait(b), comm, "wait ibarrier")) return;
    unlink((marks + "-" + std::to_string(rank)).c_str());
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, env));
}

INSTANTIATE_TEST_SUITE_P(Fusion, GroupsNonBlockingAndBarrier, ::testing::Values("1048576", "0"));

// Split into odds and evens (ranked by descending key), a split where one
// rank opts out, and a dup: each new communicator has the expected ranks and
// reduces over exactly its members, interleaved with the parent's calls.
TEST(Communicators, SplitAndDup) {
  expectAllPassed(runRanks(4, 120, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm, half = nullptr, some = nullptr, dup = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    if (!rep.ok(strata_comm_split(comm, rank % 2, -rank, &half), comm, "split odd/even")) return;
    int hr = -1, hs = -1;
    strata_comm_rank(half, &hr);
    strata_comm_size(half, &hs);
    // Members of color c in descending rank order: rank 3 -> 0, rank 1 -> 1.
    const int wantRank = (rank % 2 == 1) ? (rank == 3 ? 0 : 1) : (rank == 2 ? 0 : 1);
    if (hs != 2 || hr != wantRank) rep.fail("split: rank %d/%d, expected %d/2", hr, hs, wantRank);
    if (!rep.ok(strata_comm_split(comm, rank == 3 ? STRATA_SPLIT_NOCOLOR : 7, rank, &some), comm, "split nocolor")) return;
    if ((rank == 3) != (some == nullptr)) rep.fail("split with NOCOLOR: newcomm %p on rank %d", (void*)some, rank);
    if (!rep.ok(strata_comm_dup(comm, &dup), comm, "dup")) return;

    int64_t v = rank + 1, sumHalf = v, sumAll = v, sumSome = v;
    if (!rep.ok(strata_allreduce(&sumHalf, &sumHalf, 1, STRATA_INT64, STRATA_SUM, half), half, "allreduce half")) return;
    if (!rep.ok(strata_allreduce(&sumAll, &sumAll, 1, STRATA_INT64, STRATA_SUM, dup), dup, "allreduce dup")) return;
    if (some && !rep.ok(strata_allreduce(&sumSome, &sumSome, 1, STRATA_INT64, STRATA_SUM, some), some, "allreduce some")) return;
    int64_t parent = v;
    if (!rep.ok(strata_allreduce(&parent, &parent, 1, STRATA_INT64, STRATA_SUM, comm), comm, "allreduce parent")) return;
    const int64_t wantHalf = rank % 2 ? 2 + 4 : 1 + 3;
    if (sumHalf != wantHalf) rep.fail("half sum %lld, expected %lld", (long long)sumHalf, (long long)wantHalf);
    if (sumAll != 10 || parent != 10) rep.fail("dup/parent sums %lld/%lld, expected 10", (long long)sumAll, (long long)parent);
    if (some && sumSome != 6) rep.fail("nocolor split sum %lld, expected 6", (long long)sumSome);
    strata_result_t async = STRATA_ERR_INTERNAL;
    if (!rep.ok(strata_comm_get_async_error(dup, &async), dup, "get_async_error") || async != STRATA_SUCCESS)
      rep.fail("healthy communicator reports async error %d", async);
    strata_comm_destroy(half);
    if (some) strata_comm_destroy(some);
    strata_comm_destroy(dup);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, kSmallSlots));
}

// Non-blocking init: reports STRATA_IN_PROGRESS while a rank is missing, then
// success, and the communicator works; when a rank never comes, the error
// arrives through strata_comm_get_async_error and every later call.
TEST(Communicators, NonBlockingInit) {
  expectAllPassed(runRanks(3, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    if (rank == 2) usleep(300000);
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank_nonblocking(&comm, n, id, rank), nullptr, "init_rank_nonblocking")) return;
    strata_result_t state = STRATA_ERR_INTERNAL;
    strata_comm_get_async_error(comm, &state);
    if (rank < 2 && state != STRATA_IN_PROGRESS) rep.fail("init finished before rank 2 joined (%d)", state);
    for (int polls = 0; state == STRATA_IN_PROGRESS && polls < 10000; ++polls) {
      usleep(1000);
      strata_comm_get_async_error(comm, &state);
    }
    if (state != STRATA_SUCCESS) rep.fail("non-blocking init ended with %d: %s", state, strata_comm_last_error(comm));
    int64_t v = rank + 1;
    if (!rep.ok(strata_allreduce(&v, &v, 1, STRATA_INT64, STRATA_SUM, comm), comm, "allreduce")) return;
    if (v != 6) rep.fail("allreduce after non-blocking init: %lld", (long long)v);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }));
  expectAllPassed(runRanks(2, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    if (rank == 1) return;  // never joins
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank_nonblocking(&comm, n, id, rank), nullptr, "init_rank_nonblocking")) return;
    strata_result_t state = STRATA_IN_PROGRESS;
    for (int polls = 0; state == STRATA_IN_PROGRESS && polls < 10000; ++polls) {
      usleep(1000);
      strata_comm_get_async_error(comm, &state);
    }
    if (state != STRATA_ERR_TIMEOUT) rep.fail("init without rank 1 ended with %d", state);
    if (!strlen(strata_comm_last_error(comm))) rep.fail("no message for the failed init");
    float x = 1;
    if (strata_allreduce(&x, &x, 1, STRATA_FLOAT32, STRATA_SUM, comm) == STRATA_SUCCESS)
      rep.fail("allreduce on a communicator whose init failed succeeded");
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy after failed init");
  }, {{"STRATA_TIMEOUT", "1"}}));
}

// Requests still pending when their communicator is aborted or destroyed
// complete with an error (no hang, and under ASan no use after free); the
// peers' operations that wait on this rank fail too.
TEST(Communicators, AbortAndDestroyWithPendingRequests) {
  auto env = kSmallSlots;
  env[0].second = "5";  // STRATA_TIMEOUT
  for (bool abort : {true, false}) {
    expectAllPassed(runRanks(2, 60, [abort](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
      std::vector<float> a(100000, 1.0f), b(100000);
      strata_request_t recv = nullptr, bcast = nullptr;
      if (rank == 0) {
        // Nobody sends to rank 0, and rank 1 never joins this broadcast.
        if (!rep.ok(strata_irecv(b.data(), 10, STRATA_FLOAT32, 1, comm, &recv), comm, "irecv")) return;
        if (!rep.ok(strata_ibroadcast(a.data(), a.data(), a.size(), STRATA_FLOAT32, 0, comm, &bcast), comm, "ibroadcast")) return;
        strata_result_t rc = abort ? strata_comm_abort(comm) : strata_comm_destroy(comm);
        if (rc != STRATA_SUCCESS) rep.fail("%s with requests pending: %s", abort ? "abort" : "destroy", strata_result_string(rc));
        if (strata_wait(recv) == STRATA_SUCCESS) rep.fail("pending irecv succeeded after %s", abort ? "abort" : "destroy");
        int done = 0;
        if (strata_test(bcast, &done) == STRATA_SUCCESS || !done) rep.fail("pending ibroadcast did not fail");
      } else {
        // Once rank 0 has posted and left, rank 1 waits for a message it
        // never sends: it must fail, not hang.
        usleep(200000);
        if (strata_recv(b.data(), 10, STRATA_FLOAT32, 0, comm) == STRATA_SUCCESS)
          rep.fail("recv succeeded with rank 0 gone");
        strata_comm_destroy(comm);
      }
    }, env));
  }
}

// The torch backend's pattern: one thread issues non-blocking collectives
// (and blocking groups) while another tests and waits on their requests.
TEST(Requests, CompletedByAnotherThreadWhileTheOwnerIssues) {
  expectAllPassed(runRanks(3, 120, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    constexpr int kOps = 60;
    constexpr size_t kCount = 5000;
    std::vector<std::vector<double>> bufs(kOps, std::vector<double>(kCount));
    std::vector<strata_request_t> requests(kOps, nullptr);
    std::vector<std::atomic<bool>> issued(kOps);
    std::vector<strata_result_t> results(kOps, STRATA_SUCCESS);
    std::thread completer([&] {
      for (int i = 0; i < kOps; ++i) {
        while (!issued[i].load(std::memory_order_acquire)) std::this_thread::yield();
        int done = 0;
        // Alternate test loops and waits, as the backend does.
        if (i % 2) {
          while (!done) results[i] = strata_test(requests[i], &done);
        } else {
          results[i] = strata_wait(requests[i]);
        }
      }
    });
    double groupSum[2] = {1.0 + rank, 2.0 * rank};
    for (int i = 0; i < kOps; ++i) {
      for (size_t k = 0; k < kCount; ++k) bufs[i][k] = rank * 1000.0 + i + static_cast<double>(k);
      if (!rep.ok(strata_iallreduce(bufs[i].data(), bufs[i].data(), kCount, STRATA_FLOAT64, STRATA_SUM, comm,
                                    &requests[i]),
                  comm, "iallreduce"))
        break;
      issued[i].store(true, std::memory_order_release);
      if (i % 10 == 0) {  // a blocking group in between, on the owner's thread
        strata_group_start();
        strata_allreduce(&groupSum[0], &groupSum[0], 1, STRATA_FLOAT64, STRATA_SUM, comm);
        strata_allreduce(&groupSum[1], &groupSum[1], 1, STRATA_FLOAT64, STRATA_MAX, comm);
        rep.ok(strata_group_end(), comm, "group_end");
      }
    }
    for (int i = 0; i < kOps; ++i) issued[i].store(true, std::memory_order_release);
    completer.join();
    for (int i = 0; i < kOps; ++i) {
      if (results[i] != STRATA_SUCCESS) {
        rep.fail("request %d: %s", i, strata_result_string(results[i]));
        continue;
      }
      for (size_t k = 0; k < kCount; k += 997) {
        double want = 1000.0 * n * (n - 1) / 2 + n * (i + static_cast<double>(k));
        if (bufs[i][k] != want) rep.fail("allreduce %d element %zu: %g, expected %g", i, k, bufs[i][k], want);
      }
    }
    strata_comm_destroy(comm);
  }));
}

// Bad arguments: the documented code, a message naming the argument, and the
// communicator still usable afterwards (checked with a final allreduce).
TEST(Collectives, BadArgumentsAreRejected) {
  expectAllPassed(runRanks(2, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    float a[8] = {0}, b[16] = {0};
    size_t counts[2] = {4, 4}, displs[2] = {0, 4};
    strata_request_t req;
    auto expect = [&](strata_result_t rc, strata_result_t want, const char* needle, const char* what) {
      const char* msg = strata_comm_last_error(comm);
      if (rc != want) rep.fail("%s: returned %d, expected %d", what, rc, want);
      else if (!strstr(msg, needle)) rep.fail("%s: message '%s' does not name '%s'", what, msg, needle);
    };
    const auto INV = STRATA_ERR_INVALID_ARGUMENT;
    expect(strata_broadcast(a, a, 4, STRATA_FLOAT32, 2, comm), INV, "root=2", "broadcast root");
    expect(strata_broadcast(a, nullptr, 4, STRATA_FLOAT32, 0, comm), INV, "recvbuf", "broadcast recvbuf");
    expect(strata_reduce(a, b, 4, STRATA_FLOAT32, strata_op_t(9), 0, comm), INV, "op=9", "reduce op");
    expect(strata_reduce(nullptr, b, 4, STRATA_FLOAT32, STRATA_SUM, 0, comm), INV, "sendbuf", "reduce sendbuf");
    expect(strata_allgather(a, b, 4, strata_datatype_t(42), comm), INV, "datatype=42", "allgather datatype");
    expect(strata_allgather(b + 1, b, 4, STRATA_FLOAT32, comm), INV, "overlap", "allgather overlap");
    expect(strata_alltoall(a, a, 4, STRATA_FLOAT32, comm), INV, "never in place", "alltoall in place");
    expect(strata_reduce_scatter(a, b, SIZE_MAX / 2, STRATA_FLOAT32, STRATA_SUM, comm), INV, "count=", "reduce_scatter count");
    expect(strata_allgatherv(a, 3, b, counts, displs, STRATA_FLOAT32, comm), INV, "sendcount=3", "allgatherv sendcount");
    expect(strata_allgatherv(a, 4, b, nullptr, displs, STRATA_FLOAT32, comm), INV, "recvcounts", "allgatherv counts");
    expect(strata_alltoallv(a, counts, nullptr, b, counts, displs, STRATA_FLOAT32, comm), INV, "sdispls", "alltoallv displs");
    expect(strata_send(a, 4, STRATA_FLOAT32, -1, comm), INV, "peer=-1", "send peer");
    expect(strata_recv(nullptr, 4, STRATA_FLOAT32, 0, comm), INV, "recvbuf", "recv buffer");
    expect(strata_send(a, 4, STRATA_FLOAT32, rank, comm), STRATA_ERR_INVALID_USAGE, "itself", "send to self");
    expect(strata_iallgather(a, b, 4, STRATA_FLOAT32, comm, nullptr), INV, "request", "iallgather request");
    if (strata_barrier(nullptr) != INV || !strstr(strata_last_error(), "comm is NULL"))
      rep.fail("barrier(NULL): not rejected ('%s')", strata_last_error());
    if (strata_group_end() != STRATA_ERR_INVALID_USAGE || !strstr(strata_last_error(), "without"))
      rep.fail("group end without start: not rejected ('%s')", strata_last_error());
    strata_group_start();
    expect(strata_ibroadcast(a, a, 4, STRATA_FLOAT32, 0, comm, &req), STRATA_ERR_INVALID_USAGE, "inside", "ibroadcast in a group");
    if (!rep.ok(strata_group_end(), comm, "empty group end")) return;
    float x = 1.0f + rank;
    if (!rep.ok(strata_allreduce(&x, &x, 1, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce after bad calls")) return;
    if (x != 3.0f) rep.fail("allreduce after bad calls gave %g", x);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }));
}

// Ranks that disagree fail with a clear error on every rank, never a hang.
TEST(Collectives, MisuseEndsInErrorsNotHangs) {
  auto env = kSmallSlots;
  env[0].second = "2";  // STRATA_TIMEOUT
  // A broadcast with counts that differ between ranks.
  auto outcomes = runRanks(2, 30, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    std::vector<float> buf(50000, 1.0f);
    strata_result_t rc = strata_broadcast(buf.data(), buf.data(), rank == 0 ? 50000 : 40000, STRATA_FLOAT32, 0, comm);
    // The receiver names the mismatch. The root may have finished (its
    // chunks buffered in the transport), but then its next call fails.
    if (rank == 1 && (rc != STRATA_ERR_INVALID_USAGE || !strstr(strata_comm_last_error(comm), "mismatched")))
      rep.fail("rank 1: %s: %s", strata_result_string(rc), strata_comm_last_error(comm));
    if (rc == STRATA_SUCCESS && strata_barrier(comm) == STRATA_SUCCESS)
      rep.fail("mismatched broadcast counts went unnoticed");
    strata_comm_destroy(comm);
  }, env);
  expectAllPassed(outcomes);
  // A send larger than the FIFO that nobody receives: it times out, or
  // completes into the transport's buffers (TCP's socket buffers hold it);
  // either way the next collective fails on both ranks.
  outcomes = runRanks(2, 30, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    std::vector<float> buf(100000, 1.0f);
    if (rank == 0) {
      strata_result_t rc = strata_send(buf.data(), buf.size(), STRATA_FLOAT32, 1, comm);
      if (rc != STRATA_ERR_TIMEOUT && rc != STRATA_SUCCESS)
        rep.fail("unmatched send: %s (%s)", strata_result_string(rc), strata_comm_last_error(comm));
    } else {
      sleep(3);
    }
    if (strata_barrier(comm) == STRATA_SUCCESS) rep.fail("barrier after an unmatched send succeeded");
    strata_result_t async = STRATA_SUCCESS;
    strata_comm_get_async_error(comm, &async);
    if (async == STRATA_SUCCESS) rep.fail("a failed communicator reports no async error");
    strata_comm_destroy(comm);
  }, env);
  expectAllPassed(outcomes);
}

}  // namespace
}  // namespace strata::test
