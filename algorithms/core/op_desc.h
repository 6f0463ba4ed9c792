// What one collective call is, packed into 64 bits so it travels with every
// slot (SlotTag::desc) and a receiver can tell when ranks disagree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "strata/strata.h"

namespace strata {

enum class Coll : uint8_t {
  Allreduce = 1,
  Broadcast,
  Reduce,
  Allgather,
  Allgatherv,
  ReduceScatter,
  Alltoall,
  Alltoallv,
  Barrier,
  SendRecv,  // point-to-point; count is the message's, op unused
};

struct OpDesc {
  Coll coll;
  strata_datatype_t datatype;
  strata_op_t op;
  uint64_t count;  // elements per rank; at most 2^48 - 1 (checked by the caller);
                   // 0 for the v-variants, whose counts differ by rank

  static constexpr uint64_t kMaxCount = (uint64_t(1) << 48) - 1;

  uint64_t pack() const {
    return (uint64_t(coll) << 56) | (uint64_t(datatype) << 52) | (uint64_t(op) << 48) | count;
  }
  // A desc may come from a peer (a slot's tag): a datatype or op past the
  // enum's values unpacks as STRATA_NUM_DATATYPES / STRATA_NUM_OPS (named
  // "invalid"), never as a value its enum cannot hold.
  static OpDesc unpack(uint64_t v) {
    const unsigned datatype = (v >> 52) & 0xf, op = (v >> 48) & 0xf;
    return {Coll(v >> 56), strata_datatype_t(std::min<unsigned>(datatype, STRATA_NUM_DATATYPES)),
            strata_op_t(std::min<unsigned>(op, STRATA_NUM_OPS)), v & kMaxCount};
  }
  // "allreduce(count=1000, float32, sum)", "send(count=10, int8)"
  std::string describe() const;
};

const char* datatypeName(strata_datatype_t datatype);
const char* opName(strata_op_t op);
const char* collName(Coll coll);
// The collectives a user names (strata_comm_algorithm, STRATA_TUNER_FILE):
// allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall, by
// collName; false for any other name.
bool namedColl(const std::string& name, Coll* out);
// The datatype datatypeName calls `name`; false for any other name.
bool namedDatatype(const std::string& name, strata_datatype_t* out);

}  // namespace strata
