"""The package under test: the source tree's python/fmha (with FMHA_LIBRARY or build/libfmha.so),
or with FMHA_TEST_INSTALLED=1 the installed one (pip install .)."""
import os
import sys

if os.environ.get("FMHA_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
