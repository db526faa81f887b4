# The rewrite tests' opaque-b2: x [2, 3, 4] reshaped to a size computed from
# a float constant. Making its batch dynamic applies, but no rewrite can
# trace the 2 back, so the verification must fail and name /Reshape: the
# failing case of the GUI edit tests.
import importlib.util
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "make_rewrite_fixtures", os.path.join(here, "..", "fixtures", "make-rewrite-fixtures.py"))
fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixtures)
fixtures.save_opaque(sys.argv[1])
