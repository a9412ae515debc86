// Reference operator: myop::weighted_sum(x1, x2, alpha) = alpha*x1 + (1-alpha)*x2.
// The schema and the CPU kernel live here; the CUDA kernel is in weighted_sum_cuda.cpp/.cu.
// Compile with -DMYOP_NO_REGISTRATION to get the "registration compiled out" fixture.
#include <torch/library.h>
#include <ATen/ATen.h>

#ifndef MYOP_NAMESPACE
#define MYOP_NAMESPACE myop  // fixtures override it (e.g. TORCH_EXTENSION_NAME)
#endif

namespace myop {

at::Tensor weighted_sum_cpu(const at::Tensor& x1, const at::Tensor& x2, double alpha) {
  TORCH_CHECK(x1.sizes() == x2.sizes(), "weighted_sum: x1 and x2 must have the same shape");
  TORCH_CHECK(x1.device().is_cpu() && x2.device().is_cpu(), "weighted_sum_cpu: CPU tensors expected");
  // Composite of ATen ops keeps the reference small and exactly defined.
  return x1.mul(alpha).add(x2.mul(1.0 - alpha));
}

}  // namespace myop

#ifdef MYOP_BAD_SCHEMA
// Fixture: a schema the torch parser rejects ("float" misspelt, arrow missing).
#define MYOP_SCHEMA "weighted_sum(Tensor x1, Tensor x2, flaot alpha) Tensor"
#else
#define MYOP_SCHEMA "weighted_sum(Tensor x1, Tensor x2, float alpha) -> Tensor"
#endif

#ifndef MYOP_NO_REGISTRATION
TORCH_LIBRARY(MYOP_NAMESPACE, m) {
  m.def(MYOP_SCHEMA);
}

TORCH_LIBRARY_IMPL(MYOP_NAMESPACE, CPU, m) {
  m.impl("weighted_sum", &myop::weighted_sum_cpu);
}
#endif
