#include "p2p_group.h"

#include <algorithm>
#include <utility>

#include "op_desc.h"

namespace strata {
namespace {

// Whether some receive's buffer overlaps some send's: the group's sends read
// their buffers until their bytes have left, in no order against its
// receives, so those receives must not land early.
bool receiveOverlapsSend(const std::vector<P2pOp>& ops) {
  auto range = [](const P2pOp& op) {
    const auto begin = reinterpret_cast<uintptr_t>(op.send ? op.sendbuf : op.recvbuf);
    return std::make_pair(begin, begin + op.count * strata_datatype_size(op.datatype));
  };
  std::vector<std::pair<uintptr_t, uintptr_t>> sends;
  for (const P2pOp& op : ops)
    if (op.send && op.count > 0) sends.push_back(range(op));
  if (sends.empty()) return false;
  std::sort(sends.begin(), sends.end());
  // reach[i]: the furthest end among the sends that begin at or before sends[i]'s begin.
  std::vector<uintptr_t> reach(sends.size());
  for (size_t i = 0; i < sends.size(); ++i) reach[i] = std::max(sends[i].second, i ? reach[i - 1] : 0);
  for (const P2pOp& op : ops) {
    if (op.send || op.count == 0) continue;
    const auto [begin, end] = range(op);
    // The sends that begin before this receive ends; one of them overlaps
    // it if the furthest of their ends lies past its begin.
    const auto after = std::lower_bound(sends.begin(), sends.end(), std::make_pair(end, uintptr_t(0)));
    if (after != sends.begin() && reach[after - sends.begin() - 1] > begin) return true;
  }
  return false;
}

}  // namespace

Status describeP2pGroup(const std::vector<P2pOp>& ops, int rank, P2pSequences* seqs,
                        std::vector<Message>* messages, ExchangeSpec* spec) {
  if (ops.size() > UINT16_MAX)  // Step::msg is 16 bits
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "a group holds at most %d sends and receives", UINT16_MAX);
  std::vector<size_t> selfSends, selfRecvs;
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2pOp& op = ops[i];
    if (op.peer == rank) (op.send ? selfSends : selfRecvs).push_back(i);
  }
  if (selfSends.size() != selfRecvs.size())
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "rank %d posted %zu send(s) to itself but %zu receive(s) from itself in "
                        "one group; they must pair up", rank, selfSends.size(), selfRecvs.size());
  auto bytesOf = [](const P2pOp& op) { return op.count * strata_datatype_size(op.datatype); };
  for (size_t k = 0; k < selfSends.size(); ++k) {
    const uint64_t sent = bytesOf(ops[selfSends[k]]), received = bytesOf(ops[selfRecvs[k]]);
    if (sent != received)
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "send to self #%zu has %llu bytes but its receive has %llu",
                          k, (unsigned long long)sent, (unsigned long long)received);
  }

  // Every message moves as bytes; each has its own buffers and tag.
  messages->clear();
  spec->clear();
  for (const P2pOp& op : ops) {
    if (op.peer == rank) continue;
    const uint64_t seq = ++(op.send ? seqs->sent : seqs->received)[op.peer];
    const SlotTag tag{seq, OpDesc{Coll::SendRecv, op.datatype, STRATA_SUM, op.count}.pack()};
    const auto msg = static_cast<uint16_t>(messages->size());
    messages->push_back({static_cast<const char*>(op.sendbuf), static_cast<char*>(op.recvbuf), tag});
    (op.send ? spec->sends : spec->recvs).push_back({op.peer, msg, 0, 0, bytesOf(op)});
  }
  for (size_t k = 0; k < selfSends.size(); ++k) {
    const P2pOp& s = ops[selfSends[k]];
    const P2pOp& r = ops[selfRecvs[k]];
    const auto msg = static_cast<uint16_t>(messages->size());
    messages->push_back({static_cast<const char*>(s.sendbuf), static_cast<char*>(r.recvbuf), {}});
    spec->copies.push_back({rank, msg, 0, 0, bytesOf(s)});
  }
  spec->landsEarly = !receiveOverlapsSend(ops);
  return Status::ok();
}

void buildP2pGroup(const PlanShape& shape, const ExchangeSpec& spec, PlanSet& plans) {
  PlanShape bytes = shape;
  bytes.elemSize = 1;
  buildExchange(bytes, spec, bytes.nchannels, plans);
}

}  // namespace strata
