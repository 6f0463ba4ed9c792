// The _strata_torch extension module: torch.distributed's creator function
// for the "strata" backend (strata/torch.py registers it).
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group_strata.h"

PYBIND11_MODULE(_strata_torch, m) {
  m.doc() = "strata's torch.distributed backend (use: import strata.torch)";
  m.def("create_process_group", &strata::torch_backend::ProcessGroupStrata::create, pybind11::arg("store"),
        pybind11::arg("rank"), pybind11::arg("size"), pybind11::arg("timeout"),
        "Makes a strata ProcessGroup (torch.distributed calls this for backend='strata').");
}
