"""The "strata" backend for torch.distributed (CPU tensors).

    import strata.torch  # registers the backend
    torch.distributed.init_process_group(backend="strata", ...)

Every launcher torch supports works (torchrun's variables, a store, a file):
the backend's ranks meet through the store torch hands it. The backend
itself is C++ (a c10d::ProcessGroup over strata's C API, module _strata_torch);
this file only registers it.
"""
import torch.distributed as _dist

import _strata_torch

if not hasattr(_dist.Backend, "STRATA"):
    _dist.Backend.register_backend("strata", _strata_torch.create_process_group)
