// The headers every torch fixture includes first, precompiled once (the Makefile's PCH_DIR).
#include <torch/library.h>
#include <ATen/ATen.h>
