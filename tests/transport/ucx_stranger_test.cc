// A stranger on UCX's network: UCX matches a tagged message on its tag alone,
// and anyone who reaches a rank's worker can write any tag. Having read
// rank 1's worker address off the out-of-band network, a process that is not
// of the job sends rank 1 a message tagged as rank 0's first data message,
// before rank 0 sends anything. Rank 1 must fail the link (the message lacks
// the link's token), never hand the stranger's bytes to a collective.
#include <gtest/gtest.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <cstring>

#include "clock.h"
#include "pair_end.h"

namespace strata::test {
namespace {

constexpr uint64_t kDone = 7;  // rank 1 to rank 0: seen what it came to see

// Sends one data-tagged message "from rank 0, index 0" (tag layout and
// 32-byte header of transports/ucx/ucx_connector.h) to the worker at
// `address`. The context, worker and endpoint stay for the process's life,
// so the message is not torn down before rank 1 takes it.
void strangerSends(const void* address, Reporter& rep) {
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context;
  ucp_worker_h worker;
  ucp_ep_h ep;
  ucp_worker_params_t wp{};
  ucp_ep_params_t ep_params{};
  ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  ep_params.address = static_cast<const ucp_address_t*>(address);
  if (ucp_init(&params, nullptr, &context) != UCS_OK || ucp_worker_create(context, &wp, &worker) != UCS_OK ||
      ucp_ep_create(worker, &ep_params, &ep) != UCS_OK)
    return rep.fail("the stranger could not create a UCX endpoint to rank 1");
  static uint64_t message[5] = {0, 0, 8 /* bytes */, 0x5a5a5a5a5a5a5a5aull /* not the token */, 0x1122334455667788ull};
  ucp_request_param_t p{};
  const ucp_tag_t tag = uint64_t{0} << 62 | uint64_t{0} << 40 | 0;  // data, sender rank 0, message 0
  ucs_status_ptr_t r = ucp_tag_send_nbx(ep, message, sizeof(message), tag, &p);
  const double deadline = nowSeconds() + 10;
  while (r && !UCS_PTR_IS_ERR(r) && ucp_request_check_status(r) == UCS_INPROGRESS && nowSeconds() < deadline)
    ucp_worker_progress(worker);
  if (UCS_PTR_IS_ERR(r) || (r && ucp_request_check_status(r) != UCS_OK))
    return rep.fail("the stranger's message to rank 1 did not go out");
  if (r) ucp_request_free(r);
}

TEST(UcxStranger, AMessageWithoutTheTokenFailsTheLinkAndNeverLands) {
  PairOptions options;
  // Rank 0 eavesdrops: the lengths of the workers' addresses, then the
  // addresses themselves, one channel's record per rank.
  options.eavesdropper = [](int rank, const void* all, size_t bytes, uint64_t, Reporter& rep) {
    static uint64_t maxLen = 0;
    if (rank != 0) return;
    const auto* words = static_cast<const uint64_t*>(all);
    if (maxLen == 0 && bytes == 2 * sizeof(uint64_t)) {
      maxLen = std::max(words[0], words[1]);
      return;
    }
    if (maxLen == 0 || bytes != 2 * (sizeof(uint64_t) + maxLen)) return;
    const char* rank1 = static_cast<const char*>(all) + bytes / 2;
    strangerSends(rank1 + sizeof(uint64_t), rep);
    maxLen = 0;
  };
  const PairRun run = runPair("ucx", options, 60, [](PairEnd& end, Reporter& rep) {
    if (end.rank() == 0) {
      uint64_t word = 0;
      end.waitWord(rep, "rank 1's verdict", &word, false);
      return;
    }
    const double deadline = nowSeconds() + 20;
    Status health;
    while (health.isOk() && nowSeconds() < deadline) {
      end.pump();
      size_t bytes = 0;
      SlotTag tag;
      if (end.recv(0).peek(&bytes, &tag)) {
        rep.fail("the stranger's %zu-byte message landed in rank 1's slot as rank 0's data", bytes);
        break;
      }
      health = end.health();
    }
    if (health.isOk()) rep.fail("rank 1's link stayed healthy after the stranger's message");
    else if (health.message().find("does not carry its token") == std::string::npos)
      rep.fail("the link failed for another reason: %s", health.message().c_str());
    end.oob().post(kDone);
  });
  for (int rank = 0; rank < 2; ++rank) {
    if (!run.here[rank]) continue;
    for (const auto& f : run.outcomes[rank].failures) ADD_FAILURE() << "rank " << rank << ": " << f;
    if (!run.outcomes[rank].skips.empty()) GTEST_SKIP() << run.outcomes[rank].skips.front();
    EXPECT_TRUE(run.outcomes[rank].exited) << "rank " << rank << ": " << run.outcomes[rank].exitText;
  }
}

}  // namespace
}  // namespace strata::test
