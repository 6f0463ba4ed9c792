"""The "strata" backend for torch.distributed (CPU tensors).

    import strata.torch  # registers the backend
    torch.distributed.init_process_group(backend="strata", ...)

Every launcher torch supports works (torchrun's variables, a store, a file):
the backend's ranks meet through the store torch hands it. The backend
itself is C++ (a c10d::ProcessGroup over strata's C API, module _strata_torch);
this file only registers it.
"""
import importlib
import importlib.util
import inspect

import torch.distributed as _dist

# pip install puts the extension inside this package; a build tree or a
# system install (meson install) has it on sys.path.
_extension = importlib.import_module(
    __package__ + "._strata_torch" if importlib.util.find_spec(__package__ + "._strata_torch") else "_strata_torch")

if not hasattr(_dist.Backend, "STRATA"):
    # torch 2 asks which device types a backend serves; 1.13 has no such argument.
    if "devices" in inspect.signature(_dist.Backend.register_backend).parameters:
        _dist.Backend.register_backend("strata", _extension.create_process_group, devices=["cpu"])
    else:
        _dist.Backend.register_backend("strata", _extension.create_process_group)
