"""What the tests of examples/export_pytorch_model.py share (export_profile.py, export_layers.py):
without torch they are skipped (exit 77, ctest's SKIP_RETURN_CODE); with it, the exporter module
and the two arguments, <autosync> and a work directory (created)."""
import os
import sys


def setup():
    """(the export_pytorch_model module, the autosync binary, the work directory)"""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("autosync-skip: python3-torch is not importable (cmake/setup-deps.sh --torch)")
        sys.exit(77)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "examples"))
    import export_pytorch_model as ex
    autosync, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    return ex, autosync, work
