// C API: strata_comm_check, the diagnostics STRATA_CHECK=1 runs at init and
// strata-doctor runs on demand. Collective, over the communicator itself:
// every rank's fingerprint (check/fingerprint.h) gathered and compared, then
// every pair of ranks tested on the transport the communicator chose, in the
// rounds of a round-robin tournament (each rank meets each other once, all
// pairs of a round at once): a pattern written and read back, the latency of
// small exchanges and the bandwidth of large ones. Every rank ends with the
// same report.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api_state.h"
#include "clock.h"
#include "fingerprint.h"
#include "log.h"
#include "params.h"

using strata::api::finish;

namespace strata::api {
namespace {

constexpr int kLatencyRounds = 10;
constexpr int kBandwidthRounds = 3;
constexpr size_t kBandwidthBytes = 1 << 20;
// A pair this many times slower than the median pair is named; more when a
// machine runs more ranks than it has cores, where a pair whose two ranks
// share a core measured 7x slower than the median alone (4 ranks, 2 cores).
constexpr double kSlowFactor = 4;
constexpr double kSlowFactorOversubscribed = 20;

// What rank r measured with each peer: the bandwidth it sent at (timed by
// the sender up to the receiver's one-byte answer, one direction at a time,
// so that a slow direction does not hide behind the other), the round trip
// of 8 bytes, and whether the bytes it received were right.
struct PairResult {
  double gbps;
  double microseconds;
  int32_t ok;
  char transport[12];  // what the measuring rank reaches the peer over
};

uint8_t patternByte(int sender, size_t i) { return static_cast<uint8_t>(i * 31 + sender * 7 + 1); }

// Partner of `rank` in round `round` of a tournament over n ranks (the
// circle method over m = n rounded up to even seats, m - 1 rounds): seat m-1
// meets `round`, and the others pair up as a + b = 2 round (mod m - 1).
// -1: a bye (n odd).
int partnerOf(int rank, int round, int n) {
  const int m = n + (n & 1);
  const int other = rank == m - 1 ? round : rank == round ? m - 1 : ((2 * round - rank) % (m - 1) + (m - 1)) % (m - 1);
  return other < n ? other : -1;
}

Status exchange(strata_comm* comm, int peer, const void* out, void* in, size_t bytes) {
  strata_group_start();
  strata_send(out, bytes, STRATA_UINT8, peer, comm);
  strata_recv(in, bytes, STRATA_UINT8, peer, comm);
  if (strata_group_end() != STRATA_SUCCESS)
    return makeErrorQuiet(comm->impl->failed() ? comm->impl->failure().code() : STRATA_ERR_REMOTE,
                          "exchange with rank %d failed: %s", peer, strata_comm_last_error(comm));
  return Status::ok();
}

Status transfer(strata_comm* comm, int peer, bool sending, const void* out, void* in, size_t bytes) {
  uint8_t ack = 0;
  strata_result_t rc = sending ? strata_send(out, bytes, STRATA_UINT8, peer, comm) : strata_recv(in, bytes, STRATA_UINT8, peer, comm);
  if (rc == STRATA_SUCCESS)
    rc = sending ? strata_recv(&ack, 1, STRATA_UINT8, peer, comm) : strata_send(&ack, 1, STRATA_UINT8, peer, comm);
  if (rc != STRATA_SUCCESS)
    return makeErrorQuiet(rc, "%s rank %d failed: %s", sending ? "sending to" : "receiving from", peer,
                          strata_comm_last_error(comm));
  return Status::ok();
}

Status testPair(strata_comm* comm, int peer, PairResult* out) {
  const int me = comm->impl->rank();
  std::snprintf(out->transport, sizeof(out->transport), "%s", comm->impl->transportTo(peer));
  std::vector<uint8_t> send(kBandwidthBytes), recv(kBandwidthBytes);
  for (size_t i = 0; i < send.size(); ++i) send[i] = patternByte(me, i);
  std::vector<double> trips;
  for (int i = 0; i < kLatencyRounds; ++i) {
    const double t = nowSeconds();
    STRATA_CHECK(exchange(comm, peer, send.data(), recv.data(), 8));
    trips.push_back(nowSeconds() - t);
  }
  std::sort(trips.begin(), trips.end());
  out->microseconds = trips[trips.size() / 2] * 1e6;
  double best = 1e30;
  out->ok = 1;
  for (int i = 0; i < kBandwidthRounds; ++i)
    for (bool lowerSends : {true, false}) {
      const bool sending = (me < peer) == lowerSends;
      if (!sending) std::memset(recv.data(), 0, recv.size());
      const double t = nowSeconds();
      STRATA_CHECK(transfer(comm, peer, sending, send.data(), recv.data(), recv.size()));
      if (sending) best = std::min(best, nowSeconds() - t);
      for (size_t b = 0; !sending && b < recv.size() && out->ok; ++b)
        if (recv[b] != patternByte(peer, b)) out->ok = 0;
    }
  out->gbps = kBandwidthBytes / best / 1e9;
  return Status::ok();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

Status runCheck(strata_comm* comm, std::string* report, int* findings) {
  const int n = comm->impl->size(), me = comm->impl->rank();
  const double start = nowSeconds();
  char transports[64] = "";
  strata_get_transports(transports, sizeof(transports));
  const check::Fingerprint mine = check::take(transports);
  std::vector<check::Fingerprint> all(n);
  if (strata_allgather(&mine, all.data(), sizeof(mine), STRATA_UINT8, comm) != STRATA_SUCCESS)
    return makeErrorQuiet(STRATA_ERR_REMOTE, "check: gathering fingerprints: %s", strata_comm_last_error(comm));
  const std::vector<std::string> differences = check::compare(all);

  std::vector<PairResult> row(n, PairResult{0, 0, 1, ""});
  for (int round = 0; round < n - 1 + (n & 1); ++round) {
    const int peer = partnerOf(me, round, n);
    if (peer >= 0) STRATA_CHECK(testPair(comm, peer, &row[peer]));
  }
  std::vector<PairResult> matrix(static_cast<size_t>(n) * n);
  if (strata_allgather(row.data(), matrix.data(), sizeof(PairResult) * n, STRATA_UINT8, comm) != STRATA_SUCCESS)
    return makeErrorQuiet(STRATA_ERR_REMOTE, "check: gathering pair results: %s", strata_comm_last_error(comm));
  for (PairResult& m : matrix) m.transport[sizeof(m.transport) - 1] = '\0';  // written by other processes

  // matrix[r * n + p]: what r measured with p (sending to it). With more ranks
  // than cores a pair measured beside busy ones can look slow: each pair
  // that does is measured again alone, while the others wait, and judged
  // on its better figures.
  auto medians = [&](double* gbps, double* micros) {
    std::vector<double> g, u;
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p)
        if (p != r) {
          g.push_back(matrix[r * n + p].gbps);
          u.push_back(matrix[r * n + p].microseconds);
        }
    *gbps = median(g);
    *micros = median(u);
  };
  double medGbps, medMicros;
  medians(&medGbps, &medMicros);
  const double factor = comm->impl->oversubscribed() ? kSlowFactorOversubscribed : kSlowFactor;
  auto slow = [&](const PairResult& m) {
    return m.gbps * factor < medGbps || (m.microseconds > factor * medMicros && m.microseconds > medMicros + 50);
  };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      if (!slow(matrix[a * n + b]) && !slow(matrix[b * n + a])) continue;
      PairResult again{0, 0, 1, ""};
      if (me == a || me == b) STRATA_CHECK(testPair(comm, me == a ? b : a, &again));
      for (int end : {a, b}) {
        PairResult got = again;
        if (strata_broadcast(&got, &got, sizeof(got), STRATA_UINT8, end, comm) != STRATA_SUCCESS)
          return makeErrorQuiet(STRATA_ERR_REMOTE, "check: sharing a pair's second measurement: %s",
                                strata_comm_last_error(comm));
        PairResult& kept = matrix[end * n + (end == a ? b : a)];
        got.transport[sizeof(got.transport) - 1] = '\0';
        kept.gbps = std::max(kept.gbps, got.gbps);
        kept.microseconds = std::min(kept.microseconds, got.microseconds);
        kept.ok = kept.ok && got.ok;
      }
    }
  std::vector<std::string> lines = differences;
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      const PairResult& m = matrix[r * n + p];
      if (!m.ok) lines.push_back(formatText("rank %d -> rank %d over %s: the bytes arrived wrong", p, r, m.transport));
      else if (m.gbps * factor < medGbps)
        lines.push_back(formatText("rank %d -> rank %d over %s: %.2f GB/s, median pair %.2f GB/s", r, p, m.transport,
                               m.gbps, medGbps));
      else if (m.microseconds > factor * medMicros && m.microseconds > medMicros + 50 && p < r)
        lines.push_back(formatText("rank %d <-> rank %d over %s: %.1f us round trip, median pair %.1f us", p, r,
                               m.transport, m.microseconds, medMicros));
    }
  *findings = static_cast<int>(lines.size());
  std::string text = formatText("strata check, %d ranks: %s\n", n, check::describeCommon(all).c_str());
  text += formatText("  %d pairs tested in %.2f s: median %.2f GB/s, %.1f us round trip; a pair is named when %.0fx "
                 "slower%s\n",
                 n * (n - 1) / 2, nowSeconds() - start, medGbps, medMicros, factor,
                 comm->impl->oversubscribed() ? " (a machine runs more ranks than it has cores)" : "");
  for (const auto& line : lines) text += "  " + line + "\n";
  if (lines.empty()) text += "  no differences between ranks, no slow or failing pair\n";
  *report = text;
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p)
      if (p != r && !matrix[r * n + p].ok)
        return makeErrorQuiet(STRATA_ERR_REMOTE, "check: bytes from rank %d reached rank %d wrong\n%s", p, r,
                              text.c_str());
  return Status::ok();
}

}  // namespace strata::api

extern "C" {

STRATA_API strata_result_t strata_comm_check(strata_comm_t comm, char* report, size_t len, int* findings) try {
  strata::Status checked = comm ? strata::api::ready(comm) : STRATA_INVALID_ARG("comm is NULL");
  if (!checked.isOk()) return finish(checked, comm);
  if (report && len == 0) return finish(STRATA_INVALID_ARG("len is 0 with a report buffer"), comm);
  if (strata::api::groupActive())
    return finish(strata::makeErrorQuiet(STRATA_ERR_INVALID_USAGE, "strata_comm_check inside strata_group_start/end"),
                  comm);
  std::string text;
  int found = 0;
  strata::Status st = strata::api::runCheck(comm, &text, &found);
  if (!st.isOk()) return finish(st, comm);
  if (findings) *findings = found;
  if (report || comm->impl->rank() == 0) strata::api::deliverReport(text, "strata_comm_check", report, len);
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

}  // extern "C"
