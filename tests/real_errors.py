"""Produce the real error text of one fixture: run by the tests in a child interpreter.

Loads the fixture (after any other libraries named before it) the way torch users do
(torch.ops.load_library, i.e. ctypes.CDLL with RTLD_GLOBAL) and, when it loads, calls the
operator the way a model would (on the Meta device, which needs no GPU). Prints the full
traceback a user would paste (chained exceptions included) or "OK". A fixture can also kill
this process (an exception escaping a static initialiser aborts): the test then reads what the
shell printed.
"""

import sys
import traceback

import torch

try:
    for path in sys.argv[1:]:  # the last one is the fixture; earlier ones are loaded first
        torch.ops.load_library(path)
    x = torch.ones(2, device="meta")
    torch.ops.myop.weighted_sum(x, x, 0.5)
    print("OK")
except Exception:  # the traceback is the product here
    print(traceback.format_exc())
