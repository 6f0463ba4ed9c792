// Every collective except allreduce, checked against values.h's reference
// on a communicator the caller made: broadcast and reduce from every root
// kind, allgather, reduce_scatter, alltoall, allgatherv and alltoallv, each
// over datatypes, ops, odd counts, in and out of place. Shared by the
// single-host and multi-host suites.
#pragma once

#include <string>
#include <vector>

#include "multiproc.h"

namespace strata::test {

// Runs the whole sweep; false after the first call that failed outright
// (wrong results are reported and the sweep goes on).
bool checkEveryCollective(int rank, int nranks, strata_comm_t comm, Reporter& rep);

// Rank `rank`'s input, elements first .. first+count, stored as dt.
std::vector<char> inputs(int rank, size_t count, strata_datatype_t dt, strata_op_t op = STRATA_SUM,
                         size_t first = 0);
// Reports the first element of got that differs from want.
void check(Reporter& rep, const std::string& what, const char* got, const std::vector<char>& want,
           size_t elem);
// Reports a byte of p[0..bytes) that is not the 0x5a filler.
void checkUntouched(Reporter& rep, const std::string& what, const char* p, size_t bytes);

}  // namespace strata::test
