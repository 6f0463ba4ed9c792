#include "op_desc.h"

#include <cinttypes>
#include <cstdio>

namespace strata {

const char* datatypeName(strata_datatype_t datatype) {
  static const char* kNames[] = {"int8",    "uint8",    "int32",   "uint32",  "int64",
                                 "uint64",  "float16",  "bfloat16", "float32", "float64"};
  return datatype >= 0 && datatype < STRATA_NUM_DATATYPES ? kNames[datatype] : "invalid";
}

const char* opName(strata_op_t op) {
  static const char* kNames[] = {"sum", "prod", "min", "max", "avg"};
  return op >= 0 && op < STRATA_NUM_OPS ? kNames[op] : "invalid";
}

const char* collName(Coll coll) {
  switch (coll) {
    case Coll::Allreduce: return "allreduce";
    case Coll::Broadcast: return "broadcast";
    case Coll::Reduce: return "reduce";
    case Coll::Allgather: return "allgather";
    case Coll::Allgatherv: return "allgatherv";
    case Coll::ReduceScatter: return "reduce_scatter";
    case Coll::Alltoall: return "alltoall";
    case Coll::Alltoallv: return "alltoallv";
    case Coll::Barrier: return "barrier";
    case Coll::SendRecv: return "send";
  }
  return "unknown-operation";
}

bool namedColl(const std::string& name, Coll* out) {
  for (Coll c : {Coll::Allreduce, Coll::Broadcast, Coll::Reduce, Coll::Allgather, Coll::ReduceScatter, Coll::Alltoall})
    if (name == collName(c)) {
      *out = c;
      return true;
    }
  return false;
}

bool namedDatatype(const std::string& name, strata_datatype_t* out) {
  for (int t = 0; t < STRATA_NUM_DATATYPES; ++t)
    if (name == datatypeName(static_cast<strata_datatype_t>(t))) {
      *out = static_cast<strata_datatype_t>(t);
      return true;
    }
  return false;
}

std::string OpDesc::describe() const {
  char buf[128];
  const bool reduces = coll == Coll::Allreduce || coll == Coll::Reduce || coll == Coll::ReduceScatter;
  if (reduces)
    std::snprintf(buf, sizeof(buf), "%s(count=%" PRIu64 ", %s, %s)", collName(coll), count,
                  datatypeName(datatype), opName(op));
  else if (coll == Coll::Barrier)
    std::snprintf(buf, sizeof(buf), "barrier()");
  else
    std::snprintf(buf, sizeof(buf), "%s(count=%" PRIu64 ", %s)", collName(coll), count,
                  datatypeName(datatype));
  return buf;
}

}  // namespace strata

extern "C" STRATA_API size_t strata_datatype_size(strata_datatype_t datatype) {
  switch (datatype) {
    case STRATA_INT8:
    case STRATA_UINT8: return 1;
    case STRATA_FLOAT16:
    case STRATA_BFLOAT16: return 2;
    case STRATA_INT32:
    case STRATA_UINT32:
    case STRATA_FLOAT32: return 4;
    case STRATA_INT64:
    case STRATA_UINT64:
    case STRATA_FLOAT64: return 8;
    default: return 0;
  }
}
