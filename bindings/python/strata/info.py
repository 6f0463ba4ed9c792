"""What this installation of strata is: `python3 -m strata.info`.

Prints the package's and the loaded library's versions, where libstrata was
loaded from, the transports this host can use, and whether the
torch.distributed backend loads (with torch's version, or why not). Exits
non-zero when the torch backend was built into this package but fails to
load, so an install check can rely on it.
"""
import importlib.util
import os
import sys

from . import _capi


def torch_backend():
    """(state, text): state is "ok", "absent" (torch or the backend's
    extension not installed) or "broken" (present but failing to load)."""
    if importlib.util.find_spec("torch") is None:
        return "absent", "torch is not installed"
    here = os.path.dirname(os.path.abspath(__file__))
    built_in = any(name.startswith("_strata_torch") for name in os.listdir(here))
    try:
        import torch
        from . import torch as backend  # noqa: F401  (registers "strata")
    except ImportError as e:
        return ("broken" if built_in else "absent"), "not loadable: %s" % e
    return "ok", "backend \"strata\" registered with torch %s (%s)" % (torch.__version__, backend._extension.__file__)


def main():
    print("strata %s (package at %s)" % (_capi.version(), os.path.dirname(os.path.abspath(__file__))))
    print("library: %s" % _capi.lib_path)
    print("transports: %s" % " ".join(_capi.transports()))
    state, text = torch_backend()
    print("torch: %s" % text)
    return 1 if state == "broken" else 0


if __name__ == "__main__":
    sys.exit(main())
