#include "allreduce.h"

namespace strata {

const std::vector<const AllreduceAlgorithm*>& allreduceAlgorithms() {
  static const std::vector<const AllreduceAlgorithm*> all = {
#define STRATA_ALLREDUCE(descriptor, file) &descriptor,
#include "registry.def"
#undef STRATA_ALLREDUCE
  };
  return all;
}

const AllreduceAlgorithm* findAllreduce(const std::string& name) {
  for (const AllreduceAlgorithm* a : allreduceAlgorithms())
    if (name == a->name) return a;
  return nullptr;
}

}  // namespace strata
