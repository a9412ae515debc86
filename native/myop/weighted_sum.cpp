// Reference operator: myop::weighted_sum(x1, x2, alpha) = alpha*x1 + (1-alpha)*x2.
// The schema and the CPU kernel live here; the CUDA kernel is in weighted_sum_cuda.cpp/.cu.
// Compile with -DMYOP_NO_REGISTRATION to get the "registration compiled out" fixture.
#include <torch/library.h>
#include <ATen/ATen.h>

namespace myop {

at::Tensor weighted_sum_cpu(const at::Tensor& x1, const at::Tensor& x2, double alpha) {
  TORCH_CHECK(x1.sizes() == x2.sizes(), "weighted_sum: x1 and x2 must have the same shape");
  TORCH_CHECK(x1.device().is_cpu() && x2.device().is_cpu(), "weighted_sum_cpu: CPU tensors expected");
  // Composite of ATen ops keeps the reference small and exactly defined.
  return x1.mul(alpha).add(x2.mul(1.0 - alpha));
}

}  // namespace myop

// Fixture switches (tests/fixtures and the Makefile build each variant for real):
//   MYOP_NO_REGISTRATION   registration compiled out by #ifdef: the library registers nothing
//   MYOP_BAD_SCHEMA        a schema string torch's parser rejects
//   MYOP_DEF_ONLY          the op is defined but no kernel is registered for it
//   MYOP_IMPL_ONLY         a CPU kernel for a namespace this library does not define
//   MYOP_EXTENSION_NAME_NS TORCH_LIBRARY(TORCH_EXTENSION_NAME, m) built outside cpp_extension
#ifdef MYOP_BAD_SCHEMA
#define MYOP_SCHEMA "weighted_sum(Tensor x1, Tensor x2, flaot alpha) Tensor"
#else
#define MYOP_SCHEMA "weighted_sum(Tensor x1, Tensor x2, float alpha) -> Tensor"
#endif

#if defined(MYOP_EXTENSION_NAME_NS)
TORCH_LIBRARY(TORCH_EXTENSION_NAME, m) {
  m.def(MYOP_SCHEMA);
}
TORCH_LIBRARY_IMPL(TORCH_EXTENSION_NAME, CPU, m) {
  m.impl("weighted_sum", &myop::weighted_sum_cpu);
}
#elif !defined(MYOP_NO_REGISTRATION)
#ifndef MYOP_IMPL_ONLY
TORCH_LIBRARY(myop, m) {
  m.def(MYOP_SCHEMA);
}
#endif
#ifndef MYOP_DEF_ONLY
TORCH_LIBRARY_IMPL(myop, CPU, m) {
  m.impl("weighted_sum", &myop::weighted_sum_cpu);
}
#endif
#endif
